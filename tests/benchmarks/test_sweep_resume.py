"""benchmarks/sweep.py resumes from an existing CSV: a half-written last row (a killed run), an
empty file or a CSV of another schema must never yield a row read with a wrong time or a file
without its header (CPU)."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks import sweep  # noqa: E402

SHAPES = "- {m: 16, n: 16, k: 16}\n- {m: 32, n: 16, k: 16}\n"


def _run(tmp_path, out):
    (tmp_path / "s.yaml").write_text(SHAPES)
    env = dict(os.environ, TRITON_INTERPRET="1", GIT_SHA="test-sha", CUDA_VISIBLE_DEVICES="")
    env.pop("TRITONBLAS_TABLE", None)
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "sweep.py"), "--shapes", "s.yaml",
                        "--max-configs", "2", "--out", str(out)],
                       capture_output=True, text=True, env=env, timeout=170, cwd=tmp_path)
    return r


def _rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


@pytest.mark.timeout(180)
def test_resume_cuts_a_half_written_last_row_and_writes_a_header_into_an_empty_file(tmp_path):
    out = tmp_path / "sweep.csv"
    out.write_bytes(b"")  # an empty existing file: still gets provenance and the column header
    r = _run(tmp_path, out)
    assert r.returncode == 0, r.stderr[-2000:]
    text = out.read_text()
    assert text.startswith("# "), text[:200]
    full = _rows(out)
    assert len(full) == 4 and all(float(x["median_ms"]) > 0 for x in full)
    # a killed run: the last two rows never written, the one before cut inside its median_ms
    lines = text.splitlines(keepends=True)
    cut = lines[-3][: lines[-3].index(full[1]["median_ms"]) + 3]
    out.write_text("".join(lines[:-3]) + cut)
    r = _run(tmp_path, out)
    assert r.returncode == 0, r.stderr[-2000:]
    again = _rows(out)
    assert len(again) == 4, out.read_text()
    for row in again:  # every row has the sweep's columns and a whole time
        assert None not in row and row["median_ms"] and float(row["median_ms"]) > 0, row
        assert int(row["m"]) in (16, 32) and row["a_dtype"] == "bf16", row
    assert again[0]["median_ms"] == full[0]["median_ms"]
    assert again[1]["median_ms"] != full[1]["median_ms"][:3]  # re-timed, not the cut value


def test_resume_refuses_a_csv_of_another_schema(tmp_path):
    out = tmp_path / "other.csv"
    out.write_text("# git_sha=x\nshape,ms\n16x16x16,0.1\n")
    with pytest.raises(SystemExit, match=r"other\.csv.*not a sweep CSV.*median_ms"):
        sweep.prepare_resume(out)
    assert out.read_text() == "# git_sha=x\nshape,ms\n16x16x16,0.1\n"


def test_prepare_resume_new_and_header_only_files(tmp_path):
    assert sweep.prepare_resume(tmp_path / "absent.csv") is True
    p = tmp_path / "prov.csv"
    p.write_text("# git_sha=x\n")
    assert sweep.prepare_resume(p) is True
    p.write_text(",".join(sweep.COLS) + "\n1,2")
    assert sweep.prepare_resume(p) is False
    assert p.read_text() == ",".join(sweep.COLS) + "\n"

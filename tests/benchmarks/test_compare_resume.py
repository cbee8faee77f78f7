"""benchmarks/compare.py resumes from its --out: a CSV of another schema must be refused (the first
shape's write would replace it), and a half-written row dropped, not kept as measured (CPU)."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks import compare  # noqa: E402


def _row(m: int) -> dict:
    r = {c: "1" for c in compare.COLUMNS}
    r.update(m=str(m), n="16", k="16", a_dtype="bf16", b_dtype="bf16", c_dtype="bf16", a_layout="N", b_layout="N",
             ours_ms="0.012345")
    return r


def test_resume_drops_a_half_written_row(tmp_path):
    out = tmp_path / "c.csv"
    compare.write_csv_atomic(out, [_row(16), _row(32)])
    text = out.read_text()
    out.write_text(text[: text.rindex("0.012345") + 4])  # cut inside the second row's ours_ms
    rows = compare.resume_rows(out)
    assert [r["m"] for r in rows] == ["16"] and rows[0]["ours_ms"] == "0.012345"
    assert compare.resume_rows(out, fresh=True) == []


def test_resume_refuses_another_schema_and_undecodable_files(tmp_path):
    other = tmp_path / "other.csv"
    other.write_text("# mine\nshape,ms\n16x16x16,0.1\n")
    with pytest.raises(SystemExit, match=r"other\.csv.*not a compare CSV.*ours_ms"):
        compare.resume_rows(other)
    with pytest.raises(SystemExit, match=r"other\.csv"):
        compare.resume_rows(other, fresh=True)
    bad = tmp_path / "bad.csv"
    bad.write_bytes(b"m,n\xff\xfe\n")
    with pytest.raises(SystemExit, match=r"bad\.csv.*not a compare CSV"):
        compare.resume_rows(bad)
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    assert compare.resume_rows(empty) == []


@pytest.mark.timeout(180)
def test_compare_leaves_a_csv_of_another_schema_alone(tmp_path):
    (tmp_path / "s.yaml").write_text("- {m: 16, n: 16, k: 16}\n")
    other = tmp_path / "other.csv"
    other.write_text("# mine\nshape,ms\n16x16x16,0.1\n")
    env = dict(os.environ, TRITON_INTERPRET="1", GIT_SHA="test-sha", CUDA_VISIBLE_DEVICES="")
    env.pop("TRITONBLAS_TABLE", None)
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "compare.py"), "--shapes", "s.yaml", "--out",
                        str(other), "--no-nvmmh", "--sweep", "none"],
                       capture_output=True, text=True, env=env, timeout=170, cwd=tmp_path)
    assert r.returncode != 0 and "not a compare CSV" in r.stderr, (r.stdout[-1000:], r.stderr[-2000:])
    assert other.read_text() == "# mine\nshape,ms\n16x16x16,0.1\n"

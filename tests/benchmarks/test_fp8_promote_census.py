"""benchmarks/fp8_promote_census.py (CPU, sm_90 compile only): each mode compiles with the promotion interval it
names (capped at the tile's BLOCK_K, as the launch caps it), ptxas's registers and spills are recorded, the
provenance-headed CSV is written, and bad arguments name themselves."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks import fp8_promote_census as census  # noqa: E402

PTXAS = Path(__import__("triton").__file__).parent / "backends" / "nvidia" / "bin" / "ptxas"


@pytest.mark.timeout(600)
@pytest.mark.skipif(not PTXAS.exists(), reason="Triton's bundled ptxas is missing")
def test_each_mode_compiles_with_its_interval_and_records_ptxas(tmp_path):
    """In a child process, as tests/kernels/test_aot_compile.py runs its compiles: this one's kernels are decorated
    for the interpreter."""
    out = tmp_path / "c.csv"
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["TRITON_CACHE_DIR"] = str(tmp_path / "cache")
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "fp8_promote_census.py"), "--shape", "512", "512",
                        "512", "--top", "1", "--modes", "32", "fast", "--out", str(out)],
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    text = out.read_text()
    assert text.startswith("# git_sha: ")
    rows = list(csv.DictReader(line for line in text.splitlines() if not line.startswith("#")))
    assert [r["mode"] for r in rows] == ["32", "fast"] and rows[0]["config"] == rows[1]["config"]
    assert all(r["error"] == "" for r in rows), rows
    bk = int(rows[0]["config"].split()[1].split("x")[2])
    assert rows[0]["max_imprecise"] == str(min(32, bk)) and rows[1]["max_imprecise"] == ""
    for r in rows:
        assert 0 < int(r["registers"]) <= 255 and int(r["spill_stores"]) >= 0 and int(r["spill_loads"]) >= 0


@pytest.mark.parametrize("argv, says", [(["--modes", "48"], "--modes: 48"), (["--modes", "slow"], "--modes: 'slow'"),
                                        (["--top", "0"], "--top"), (["--shape", "0", "8", "8"], "--shape"),
                                        (["--profile", "no-such-gpu"], "--profile")])
def test_bad_arguments_name_themselves(argv, says, capsys):
    with pytest.raises(SystemExit) as e:
        census.main(argv)
    assert e.value.code == 2 and says in capsys.readouterr().err

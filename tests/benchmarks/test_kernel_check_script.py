"""benchmarks/kernel_check.py runs end to end (``--smoke``: tiny shapes under the interpreter) and
writes a CSV with provenance and no failed rows, so the one-shot H200 run does not trip on the script."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(300)
def test_kernel_check_smoke(tmp_path):
    env = dict(os.environ, TRITON_INTERPRET="1")
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "kernel_check.py"), "--smoke", "--shapes",
                        "square,n1000", "--out", str(tmp_path)], capture_output=True, text=True, env=env, timeout=280)
    assert r.returncode == 0, r.stderr[-3000:]
    text = (tmp_path / "kernel_check.csv").read_text()
    header = [line for line in text.splitlines() if line.startswith("#")]
    assert any(line.startswith("# git_sha:") for line in header) and any("# triton:" in line for line in header)
    rows = list(csv.DictReader(line for line in text.splitlines() if not line.startswith("#")))
    assert {r["shape"] for r in rows} == {"square", "n1000"}
    assert [r for r in rows if r["error"]] == []
    ours = [r for r in rows if r["kind"] != "torch"]
    assert ours and all(float(r["rel_err_vs_fp32"]) <= 2 * float(r["torch_rel_err_vs_fp32"]) + 1e-6 for r in ours)
    assert "ratio" in r.stdout

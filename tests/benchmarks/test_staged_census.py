"""benchmarks/staged_census.py on this CPU: two sm_90 compiles of a register-staged problem through the
script's own worker, in a subprocess (this test process decorates the kernels for the interpreter).
The two configs are from the committed census (benchmarks/data/nvidia_aot/h200_staged.csv): 16x64x32
w4 s3 data-parallel spills nothing; 64x128x32 w4 s3 spills though the staging formula keeps it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_SCRIPT = """
import json, sys
sys.path.insert(0, {root!r}); sys.path.insert(0, {bench!r})
import staged_census as S
small = dict(kind="dp", block_m=16, block_n=64, block_k=32, num_warps=4, num_stages=3, group_m=8)
mid = dict(kind="dp", block_m=64, block_n=128, block_k=32, num_warps=4, num_stages=3, group_m=8)
print(json.dumps([S.compile_one((S.PROBLEMS[0], small)), S.compile_one((S.PROBLEMS[0], mid))]))
"""


def _need_ptxas() -> None:
    ptxas = Path(__import__("triton").__file__).parent / "backends" / "nvidia" / "bin" / "ptxas"
    if not ptxas.exists():
        pytest.skip("Triton's bundled ptxas is missing: the census compiles with it")


def _run_worker(script: str, tmp_path, **fields) -> list:
    """Run a census worker ``script`` (formatted with the repo's paths and ``fields``) in a fresh process without
    TRITON_INTERPRET, its own Triton cache under ``tmp_path``; its last stdout line, parsed as JSON."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["TRITON_CACHE_DIR"] = str(tmp_path / "triton_cache")
    code = script.format(root=str(ROOT), bench=str(ROOT / "benchmarks"), **fields)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.mark.timeout(600)
def test_census_worker_reports_registers_and_spills(tmp_path):
    _need_ptxas()
    small, mid = _run_worker(_SCRIPT, tmp_path)
    assert small["status"] == "ok" and mid["status"] == "ok", (small, mid)
    assert 0 < small["registers"] <= 255 and small["spill_stores"] == 0, small
    assert mid["spill_stores"] > 0, mid  # the staging formula's 112 registers let this one through


def test_census_jobs_cover_both_sides_of_the_staging_formula():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import staged_census as S

    jobs = S.jobs()
    assert {j[1]["kind"] for j in jobs} == {"dp", "persistent", "streamk", "splitk"}
    assert any(j[3] for j in jobs) and not all(j[3] for j in jobs)


def test_rule_evaluation_reports_moved_picks(capsys):
    """benchmarks/staged_rule_eval.py scores the shipped h200 against h200 with model.staged_spill_rule on:
    the rule moves picks on recorded unaligned sweeps (dlrm and square; not ragged's, which h200's
    staged_slowdown_limit has moved already) and says which new picks no
    sweep timed, exactly when a file's count of them is above 0 (since staged_spills takes the compile census's
    verdicts, session 31, every pick the rule moves to was timed)."""
    import re

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import staged_rule_eval

    assert staged_rule_eval.main([]) == 0
    out = capsys.readouterr().out
    rows = re.findall(r"^(training|held-out) (\S+)\s+(\d+)\s+(\d+)\s+\S+ (\d+) -> \S+ (\d+)$", out, re.M)
    assert rows, out
    moved = {f: int(m) for _, f, _, m, _, _ in rows}
    assert moved.get("h200/dlrm.csv", 0) > 0 and moved.get("h200/square.csv", 0) > 0, out
    untimed = sum(int(after) for *_, after in rows)
    assert ("not timed:" in out) == (untimed > 0), out


_DTYPE_SCRIPT = """
import json, sys
sys.path.insert(0, {root!r}); sys.path.insert(0, {bench!r})
import staged_census as S
dtype, configs = {dtype!r}, [{clean}, {spilling}]
dims = S.DTYPES[dtype][1][0]
print(json.dumps([S.compile_one((dims, c, dtype)) for c in configs]))
"""

# the configs, as the worker's source spells them
_FP8_CLEAN = 'dict(kind="dp", block_m=16, block_n=64, block_k=64, num_warps=4, num_stages=3, group_m=8)'
_FP8_WIDE_B = 'dict(kind="dp", block_m=32, block_n=128, block_k=128, num_warps=4, num_stages=3, group_m=8)'
_TF32_CLEAN = ('dict(kind="splitk", block_m=64, block_n=64, block_k=32, num_warps=4, num_stages=3, group_m=1, '
               'split_k=4)')
_TF32_TALL = ('dict(kind="splitk", block_m=128, block_n=64, block_k=64, num_warps=4, num_stages=3, group_m=1, '
              'split_k=8)')


@pytest.mark.timeout(600)
@pytest.mark.parametrize("dtype, align, clean_cfg, spilling_cfg, spilled", [
    # fp8 on the 1-byte-aligned problem: 32x128x128 w4 (128 bytes of B a thread a stage; ran 59x its prediction
    # on the H100) spills tens of KB
    ("fp8_e4m3", 1, _FP8_CLEAN, _FP8_WIDE_B, 10_000),
    # tf32 (evidence only) on the 4-byte-aligned problem (cp.async, no TMA): split-K 128x64x64 w4 (the H100's worst
    # held-out tf32 pick) spills KBs
    ("tf32", 4, _TF32_CLEAN, _TF32_TALL, 2_000),
], ids=["fp8_e4m3", "tf32"])
def test_census_worker_compiles_the_dtype_on_its_rows_and_sees_the_spill(tmp_path, dtype, align, clean_cfg,
                                                                         spilling_cfg, spilled):
    """The fp8 and tf32 censuses (``--dtype``) compile their dtype's kernels on the census's problem, of the row
    alignment the census is for: one config clean, one spilling more than ``spilled`` bytes a thread."""
    _need_ptxas()
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import staged_census as S

    assert S.problem(*S.DTYPES[dtype][1][0], dtype).align_bytes == align
    clean, spilling = _run_worker(_DTYPE_SCRIPT, tmp_path, dtype=dtype, clean=clean_cfg, spilling=spilling_cfg)
    assert clean["status"] == "ok" and spilling["status"] == "ok", (clean, spilling)
    assert clean["spill_stores"] == 0, clean
    assert spilling["spill_stores"] + spilling["spill_loads"] > spilled, spilling

"""Compile every kernel family for sm_90 (H200) and gfx942 (MI300X) on this machine — no GPU needed:
Triton's compiler and its bundled assemblers run on the CPU — and check what the GPU will run: the
N = 1000 fast path in the PTX / AMDGCN, and ``origami.space.smem_bytes`` against the compiled
kernels' ``metadata.shared``.

Runs ``_aot_compile.py`` in a subprocess: this test process decorates kernels for the interpreter.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    ptxas = Path(__import__("triton").__file__).parent / "backends" / "nvidia" / "bin" / "ptxas"
    if not ptxas.exists():
        pytest.skip("Triton's bundled ptxas is missing")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["TRITON_CACHE_DIR"] = str(tmp_path_factory.mktemp("triton_cache"))
    r = subprocess.run([sys.executable, str(HERE / "_aot_compile.py")], capture_output=True, text=True, env=env,
                       timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    rows = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
    return {row["name"]: row for row in rows}


@pytest.mark.timeout(600)
def test_every_case_compiles(compiled):
    failed = {n: r["error"] for n, r in compiled.items() if not r["ok"]}
    assert not failed, failed


@pytest.mark.timeout(600)
def test_n1000_compiles_to_the_n1024_fast_path(compiled):
    """N = 1000 bf16 (rows 2000 bytes): 16-byte cp.async, multi-stage pipeline, no scalar 2-byte loads,
    exactly like N = 1024. Without the hints (or with 2-byte-aligned rows) there is no cp.async."""
    n1000, n1024 = compiled["dp-n1000"], compiled["dp-n1024"]
    assert n1000["cp_async_16"] > 0 and n1000["scalar_b16_loads"] == 0
    assert (n1000["cp_async_16"], n1000["shared"]) == (n1024["cp_async_16"], n1024["shared"])
    off = compiled["dp-n1000-hints-off"]
    assert off["cp_async_16"] == 0 and off["scalar_b16_loads"] > 0 and off["shared"] < n1000["shared"]
    padded = compiled["dp-padded-ld-odd-n"]  # 16-byte strides, odd extent: interior tiles keep cp.async
    assert padded["cp_async_16"] > 0 and padded["shared"] == n1000["shared"]


@pytest.mark.timeout(600)
def test_amd_n1000_uses_dwordx4_loads(compiled):
    on, off = compiled["amd-dp-n1000"], compiled["amd-dp-n1000-hints-off"]
    assert on["dwordx4_loads"] > 0 and on["short_loads"] == 0
    assert off["dwordx4_loads"] == 0 and off["short_loads"] > 0


@pytest.mark.timeout(600)
def test_smem_predicate_covers_compiled_kernels(compiled):
    """Pointer kernels: Triton allocates ≤ num_stages·(A + B) tiles on NVIDIA and exactly
    (num_stages − 1)·(A + B) LDS on AMD (the predicate). TMA kernels allocate 8 bytes of mbarrier
    per stage on top, which the predicate (that does not know TMA) leaves out: recorded exactly
    so a change shows."""
    for name, r in compiled.items():
        if not r["ok"]:
            continue
        stages = int(r["config"].split(" s")[1].split()[0])
        if name.startswith("amd-") and "hints-off" not in name:
            assert r["shared"] == r["predicate"], (name, r["shared"], r["predicate"])
        elif r.get("tma_loads"):
            assert r["shared"] == r["predicate"] + 8 * stages, (name, r["shared"], r["predicate"])
        else:
            assert r["shared"] <= r["predicate"], (name, r["shared"], r["predicate"])


@pytest.mark.timeout(600)
def test_fp8_keeps_wgmma_in_both_accumulation_modes(compiled):
    for name in ("fp8-NT-rowcol", "fp8-NN-fastacc"):
        assert compiled[name]["wgmma"] > 0, name

"""The AMD compile census's fixed CI sample (``benchmarks/amd_census.py --ci``: 21 configs over
mi300x / mi325x (gfx942) and mi350x / mi355x (gfx950)), compiled on this CPU for the profile's arch,
checked against what origami assumes: the LDS formula and the register rule of ``origami.space``,
the register budget that ``waves_per_eu`` sets, the MFMA size that ``matrix_instr_nonkdim`` picks,
and the chiplet remap being compiled in exactly when ``num_chiplets`` > 1.

Runs the census in a subprocess: this test process decorates kernels for the interpreter.
"""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest

import origami
from origami import space
from origami.config import TileConfig

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    out = tmp_path_factory.mktemp("amd_ci")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["TRITON_CACHE_DIR"] = str(out / "triton_cache")
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "amd_census.py"), "--ci", "--out", str(out)],
                       capture_output=True, text=True, env=env, timeout=540)
    assert r.returncode == 0, r.stderr[-3000:]
    found = []
    for path in sorted(out.glob("*.csv")):
        lines = [ln for ln in path.read_text().splitlines() if ln and not ln.startswith("#")]
        found += list(csv.DictReader(lines))
    return found


def _cfg(r) -> TileConfig:
    return TileConfig(**{k: (v if k == "kind" else int(v)) for k, v in r.items() if k in TileConfig.__slots__})


def _clean(r, hw) -> bool:
    return (int(r["lds_bytes"]) <= hw.compute["smem_bytes_per_block"] and int(r["vgpr_spills"]) == 0
            and int(r["scratch_bytes"]) == 0)


@pytest.mark.timeout(600)
def test_the_sample_covers_both_arches_and_every_profile_and_compiles(rows):
    assert len(rows) == 21
    assert {r["profile"] for r in rows} == {"mi300x", "mi325x", "mi350x", "mi355x"}
    assert {r["arch"] for r in rows} == {"gfx942", "gfx950"}
    bad = [(r["profile"], r["config"], r["error"]) for r in rows if r["status"] != "ok"]
    assert not bad, bad


@pytest.mark.timeout(600)
def test_lds_is_the_predicates_formula(rows):
    """Where the stream pipeliner keeps one stage in registers (gfx942; gfx950 before Triton 3.8) it
    allocates exactly (stages − 1)·(A + B), or max(A, B) at one stage: the predicate's number. Where
    every stage is an LDS buffer (``space.amd_direct_to_lds``: gfx950, Triton >= 3.8) the predicate
    bounds the allocation from above, within the 1/16 it adds to stages·(A + B)."""
    off = []
    for r in rows:
        got, pred = int(r["lds_bytes"]), int(r["lds_pred"])
        if int(r["num_stages"]) > 1 and space.amd_direct_to_lds(origami.load_profile(r["profile"])):
            if not pred * 16 // 17 <= got <= pred:
                off.append((r["profile"], r["config"], got, pred, "bound"))
        elif got != pred:
            off.append((r["profile"], r["config"], got, pred, "exact"))
    assert not off, off


@pytest.mark.timeout(600)
def test_configs_the_predicates_admit_compile_without_spilling(rows):
    """check_smem and check_registers admit only configs whose LDS fits and that spill no VGPR; the
    sample holds both verdicts (it can fail either way)."""
    admitted, rejected = [], []
    for r in rows:
        hw = origami.load_profile(r["profile"])
        ok = r["pred_smem_ok"] == "1" and r["pred_regs_ok"] == "1"
        (admitted if ok else rejected).append((r, _clean(r, hw)))
    assert rejected and any(not clean for _, clean in rejected)
    spill = [(r["profile"], r["config"], r["total_vgprs"], r["vgpr_spills"]) for r, clean in admitted if not clean]
    assert not spill, spill


@pytest.mark.timeout(600)
def test_waves_per_eu_sets_the_register_budget(rows):
    """LLVM keeps every kernel within amd_register_budget (512 unified VGPRs over max(waves_per_eu,
    ceil(warps / 4)) waves per SIMD); 256x256x32 at 8 warps needs ~214 and spills at waves_per_eu 4."""
    over = [(r["config"], r["total_vgprs"], r["vgpr_budget"]) for r in rows
            if int(r["total_vgprs"]) > int(r["vgpr_budget"])]
    assert not over, over
    by_wpe = {int(r["waves_per_eu"]): r for r in rows
              if r["profile"] == "mi300x" and r["config"].startswith("dp 256x256x32 w8 s1")}
    assert set(by_wpe) == {1, 2, 4}
    assert int(by_wpe[4]["total_vgprs"]) <= 128 < int(by_wpe[2]["total_vgprs"])
    assert int(by_wpe[4]["vgpr_spills"]) > 0 and int(by_wpe[2]["vgpr_spills"]) == 0
    assert int(by_wpe[4]["occupancy"]) >= 4 > int(by_wpe[2]["occupancy"])


@pytest.mark.timeout(600)
def test_mfma_size_follows_matrix_instr_nonkdim(rows):
    for r in rows:
        n16, n32 = int(r["mfma_16x16"]), int(r["mfma_32x32"])
        if r["matrix_instr_nonkdim"] == "16":
            assert n16 > 0 and n32 == 0, (r["config"], n16, n32)
        else:
            assert n32 > 0 and n16 == 0, (r["config"], n16, n32)


@pytest.mark.timeout(600)
def test_chiplet_remap_is_compiled_in_only_with_num_chiplets_above_one(rows):
    """chiplet_remap's signed pid % 8 (s_and_b32 .., -8) is in every remapped kernel and in no kernel
    compiled with NUM_CHIPLETS = 1, which is the only value an NVIDIA profile admits (check_vendor)."""
    for r in rows:
        assert (int(r["remap_ops"]) > 0) == (int(r["num_chiplets"]) > 1), (r["profile"], r["config"], r["remap_ops"])
    assert any(int(r["num_chiplets"]) > 1 for r in rows) and any(int(r["num_chiplets"]) == 1 for r in rows)
    h200 = origami.load_profile("h200")
    remapped = TileConfig("dp", 128, 128, 64, 4, 3, num_chiplets=8, chunk=8)
    assert "chiplets" in (space.check_vendor(remapped, origami.GemmProblem(4096, 4096, 4096), h200) or "")


@pytest.mark.timeout(600)
def test_model_occupancy_follows_the_compiler(rows):
    """space.resident_programs (the model's occupancy) against the programs per CU that LLVM's
    occupancy and the LDS imply, on the configs that compile cleanly."""
    clean = [r for r in rows if _clean(r, origami.load_profile(r["profile"]))]
    same = sum(r["model_programs_per_cu"] == r["programs_per_cu"] for r in clean)
    near = sum(abs(int(r["model_programs_per_cu"]) - int(r["programs_per_cu"])) <= 1 for r in clean)
    assert near == len(clean) and same >= 0.75 * len(clean), [
        (r["config"], r["model_programs_per_cu"], r["programs_per_cu"]) for r in clean]

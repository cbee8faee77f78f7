"""The validity predicates of origami.space (the single source of truth, STYLE.md habit 2), and the
numba mirror of the problem-dependent ones (_core.problem_valid) that the scorer applies."""

from __future__ import annotations

import numpy as np
import pytest

import origami
from origami import _core, space, spill_census
from origami.config import Kind, TileConfig
from origami._encoding import C
from origami.enumerate import base_array, row_to_config
from origami.hardware import SHIPPED
from origami.problem import DType, GemmProblem, Layout

PROFILES = {n: origami.load_profile(n) for n in SHIPPED}
AMD = [n for n in SHIPPED if PROFILES[n].is_amd]
NVIDIA = [n for n in SHIPPED if not PROFILES[n].is_amd]
P = GemmProblem(4096, 4096, 4096)


def cfg(hw, bm=128, bn=64, bk=64, warps=4, stages=2, kind=Kind.DP, **kw) -> TileConfig:
    """A config with the vendor extras the profile needs (AMD: 0/16/1, NVIDIA: None)."""
    extras = dict(waves_per_eu=0, matrix_instr_nonkdim=16, kpack=1) if hw.is_amd else {}
    extras.update(kw)
    return TileConfig(kind, bm, bn, bk, warps, stages, **extras)


# --- shared memory ------------------------------------------------------------------------------
@pytest.mark.parametrize("name", AMD)
@pytest.mark.parametrize("dtype", ["bf16", "fp32", "fp8_e4m3"])
def test_smem_formula_amd(name, dtype, fitted_toolchain):
    """AMD stream pipeliner: max(A, B) at one stage, (stages - 1)·(A + B) otherwise (tritonBLAS, 35/35);
    gfx950 under Triton >= 3.8 is tests/origami/test_toolchain.py's."""
    hw = PROFILES[name]
    p = GemmProblem(1024, 1024, 1024, dtype, dtype, "bf16")
    e = DType(dtype).bytes
    for bm, bn, bk in ((128, 64, 64), (64, 256, 32), (256, 128, 16)):
        a, b = bm * bk * e, bk * bn * e
        assert space.smem_bytes(cfg(hw, bm, bn, bk, stages=1), p, hw) == max(a, b)
        for s in (2, 3, 4):
            assert space.smem_bytes(cfg(hw, bm, bn, bk, stages=s), p, hw) == (s - 1) * (a + b)


@pytest.mark.parametrize("name", NVIDIA)
@pytest.mark.parametrize("dtype", ["bf16", "fp32", "fp8_e4m3"])
def test_smem_formula_nvidia(name, dtype):
    """NVIDIA: every stage is a buffer: stages·(A + B)."""
    hw = PROFILES[name]
    p = GemmProblem(1024, 1024, 1024, dtype, dtype, "bf16")
    e = DType(dtype).bytes
    for bm, bn, bk in ((128, 64, 64), (64, 256, 32), (256, 128, 16)):
        for s in (1, 2, 3, 4):
            assert space.smem_bytes(cfg(hw, bm, bn, bk, stages=s), p, hw) == s * (bm * bk * e + bk * bn * e)


def test_smem_counts_each_operand_at_its_own_width():
    hw = PROFILES["h200"]
    p = GemmProblem(1024, 1024, 1024, "fp8_e4m3", "bf16", "bf16")
    assert space.smem_bytes(cfg(hw, 128, 64, 64, stages=3), p, hw) == 3 * (128 * 64 * 1 + 64 * 64 * 2)


@pytest.mark.parametrize("name", SHIPPED)
def test_over_smem_config_is_rejected_naming_shared_memory(name):
    hw = PROFILES[name]
    have = hw.compute["smem_bytes_per_block"]
    c = next(cfg(hw, 256, 128, 128, warps=8, stages=s) for s in range(2, 9)
             if space.smem_bytes(cfg(hw, 256, 128, 128, warps=8, stages=s), P, hw) > have)
    msg = space.check_smem(c, P, hw)
    assert msg is not None and "shared memory" in msg and str(have) in msg
    assert any("shared memory" in v for v in space.violations(c, P, hw))
    assert not space.is_valid(c, P, hw)
    fits = cfg(hw, 64, 64, 64, stages=2)
    assert space.check_smem(fits, P, hw) is None


# --- registers ----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", NVIDIA)
def test_256x256_at_8_warps_is_rejected_by_registers(name):
    hw = PROFILES[name]
    c = cfg(hw, 256, 256, 32, warps=8, stages=1)
    msg = space.check_registers(c, P, hw)
    assert msg is not None and msg.startswith("registers:") and "256x256" in msg
    assert any(v.startswith("registers:") for v in space.violations(c, P, hw))


@pytest.mark.parametrize("name", AMD)
def test_256x256_at_4_warps_is_rejected_by_registers_on_amd(name):
    """64-wide wavefronts halve the per-thread accumulator: 256x256 at 8 waves is 128 registers (the limit),
    at 4 waves 256."""
    hw = PROFILES[name]
    assert space.acc_registers_per_thread(cfg(hw, 256, 256, 32, warps=8), hw) == 128
    msg = space.check_registers(cfg(hw, 256, 256, 32, warps=4), P, hw)
    assert msg is not None and msg.startswith("registers:")


def test_too_many_warps_for_a_small_tile_is_rejected():
    hw = PROFILES["h200"]
    msg = space.check_registers(cfg(hw, 16, 16, 32, warps=16), P, hw)
    assert msg is not None and "too many" in msg


# --- vendor knobs ---------------------------------------------------------------------------------
@pytest.mark.parametrize("amd,nv", [("mi300x", "h200"), ("mi355x", "b200")])
def test_vendor_extras_belong_to_amd_only(amd, nv):
    hw_amd, hw_nv = PROFILES[amd], PROFILES[nv]
    plain = TileConfig(Kind.DP, 128, 64, 64, 4, 2)
    amdish = TileConfig(Kind.DP, 128, 64, 64, 4, 2, waves_per_eu=0, matrix_instr_nonkdim=16, kpack=1)
    assert space.check_vendor(plain, P, hw_nv) is None
    assert "AMD" in space.check_vendor(plain, P, hw_amd)
    assert space.check_vendor(amdish, P, hw_amd) is None
    assert "AMD-only" in space.check_vendor(amdish, P, hw_nv)
    half = TileConfig(Kind.DP, 128, 64, 64, 4, 2, waves_per_eu=0, matrix_instr_nonkdim=None, kpack=1)
    assert space.check_vendor(half, P, hw_amd) is not None and space.check_vendor(half, P, hw_nv) is not None
    bad_knob = TileConfig(Kind.DP, 128, 64, 64, 4, 2, waves_per_eu=0, matrix_instr_nonkdim=64, kpack=1)
    assert "out of range" in space.check_vendor(bad_knob, P, hw_amd)


def test_chiplet_remap_must_match_the_profile():
    hw = PROFILES["mi300x"]
    assert space.check_vendor(cfg(hw, num_chiplets=8, chunk=8), P, hw) is None
    assert "chiplets" in space.check_vendor(cfg(hw, num_chiplets=4, chunk=8), P, hw)
    assert "chunk" in space.check_vendor(cfg(hw, num_chiplets=1, chunk=8), P, hw)
    h200 = PROFILES["h200"]
    assert "chiplets" in space.check_vendor(cfg(h200, num_chiplets=8, chunk=1), P, h200)


# --- problem-dependent rules ----------------------------------------------------------------------
@pytest.mark.parametrize("name", ["h200", "mi300x"])
def test_split_k_beyond_the_k_iterations_is_rejected(name):
    hw = PROFILES[name]
    p = GemmProblem(64, 64, 256)  # BLOCK_K 64: 4 K-iterations, 1 tile
    ok = cfg(hw, 64, 64, 64, kind=Kind.SPLITK, split_k=4)
    assert space.check_problem(ok, p, hw) is None
    too_many = cfg(hw, 64, 64, 64, kind=Kind.SPLITK, split_k=8)
    msg = space.check_problem(too_many, p, hw)
    assert msg is not None and "split-K" in msg and "exceeds the 4 K-iterations" in msg
    assert not space.is_valid(too_many, p, hw)


def test_split_k_is_only_for_grids_that_leave_units_idle():
    hw = PROFILES["h200"]
    p = GemmProblem(8192, 8192, 8192)
    msg = space.check_problem(cfg(hw, 128, 128, 64, kind=Kind.SPLITK, split_k=2), p, hw)
    assert msg is not None and "compute units" in msg


def test_blocks_much_larger_than_the_problem_are_rejected():
    hw = PROFILES["h200"]
    assert "tile:" in space.check_problem(cfg(hw, 256, 128, 64, warps=8), GemmProblem(16, 4096, 4096), hw)
    assert space.check_problem(cfg(hw, 64, 128, 64), GemmProblem(16, 4096, 4096), hw) is None


def test_group_m_and_chunk_must_fit_the_kernels_int32_tile_ids():
    """GROUP_M x tile columns is int32 arithmetic in the kernels (tritonblas.kernels.pid.tile_coords):
    a forced or tabled GROUP_M of 2^30 made the interpreter return NaN for 16x128x16, one of 10^12
    failed to compile. Any GROUP_M that fits is fine (beyond the tile rows it changes nothing)."""
    hw = PROFILES["h200"]
    p = GemmProblem(16, 128, 16)
    assert space.check_problem(cfg(hw, 16, 64, 16, group_m=2**29), p, hw) is None  # 2^29 x 2 columns fits
    for g in (2**30, 10**12):
        why = space.check_problem(cfg(hw, 16, 64, 16, group_m=g), p, hw)
        assert why is not None and why.startswith("group:") and str(g) in why, why
        with pytest.raises(ValueError, match="group: GROUP_M"):
            origami.predict(p, hw, cfg(hw, 16, 64, 16, group_m=g))
    amd = PROFILES["mi300x"]
    big = cfg(amd, 128, 128, 64, num_chiplets=amd.chiplets, chunk=2**31)
    assert "overflows" in space.check_problem(big, P, amd)


def test_residency_bounds_persistent_grids():
    hw = PROFILES["h200"]
    c = cfg(hw, 128, 128, 64, stages=3)
    cap = hw.compute_units * space.resident_programs(c, P, hw)
    ok = cfg(hw, 128, 128, 64, stages=3, kind=Kind.PERSISTENT, grid=cap)
    assert space.check_residency(ok, P, hw) is None
    over = cfg(hw, 128, 128, 64, stages=3, kind=Kind.PERSISTENT, grid=cap + 1)
    assert "residency" in space.check_residency(over, P, hw)


@pytest.mark.parametrize("name", SHIPPED)
def test_problem_valid_in_numba_agrees_with_check_problem(name):
    """_core.problem_valid mirrors space.check_problem exactly, on random rows × problems, including
    split-K rows with more splits than K-iterations and blocks larger than the problem."""
    hw = PROFILES[name]
    rng = np.random.default_rng(sum(map(ord, name)))
    disagree = []
    for dtype in ("bf16", "fp32", "fp8_e4m3"):
        base = base_array(hw, DType(dtype), DType(dtype), Layout.N, Layout.N)
        rows = base[rng.choice(base.shape[0], size=min(400, base.shape[0]), replace=False)]
        rows = np.concatenate([rows, base[base[:, C["kind"]] == 3][:60]])
        for _ in range(60):
            m, n, k = (int(v) for v in np.exp(rng.uniform(0, np.log(20000), 3)).round().clip(1, 20000))
            p = GemmProblem(m, n, k, dtype, dtype, "bf16", batch=int(rng.integers(1, 9)))
            for row in rows[rng.choice(len(rows), size=40, replace=False)]:
                c = row_to_config(row, p, hw)
                bm, bn, bk = c.block_m, c.block_n, c.block_k
                kiters = max(1, -(-k // bk))
                tiles = -(-m // bm) * -(-n // bn) * p.batch
                numba_ok = bool(_core.problem_valid(row, m, n, kiters, tiles, hw.compute_units))
                python_ok = space.check_problem(c, p, hw) is None
                if numba_ok != python_ok:
                    disagree.append((p.describe(), c.short(), numba_ok, space.check_problem(c, p, hw)))
    assert not disagree, f"{len(disagree)} disagreements, e.g. {disagree[:5]}"


# --- the enumerated space -----------------------------------------------------------------------
@pytest.mark.parametrize("name", SHIPPED)
def test_every_enumerated_row_passes_the_problem_independent_predicates(name):
    hw = PROFILES[name]
    p = GemmProblem(16384, 16384, 16384)
    for dtype in ("bf16", "fp32", "fp8_e4m3"):
        if hw.matrix_peak_flops[DType(dtype).rate_key] <= 0:
            continue
        q = GemmProblem(p.m, p.n, p.k, dtype, dtype, "bf16")
        base = base_array(hw, q.a_dtype, q.b_dtype, q.a_layout, q.b_layout)
        assert base.shape[0] > 0 and not base.flags.writeable
        for row in base:
            c = row_to_config(row, q, hw)
            for pred in (space.check_smem, space.check_registers, space.check_instr, space.check_vendor):
                assert pred(c, q, hw) is None, (c.short(), pred(c, q, hw))
            assert row[C["occupancy"]] == space.resident_programs(c, q, hw) >= 1
            assert row[C["log2_block_m"]] == c.block_m.bit_length() - 1
            assert row[C["log2_block_k"]] == c.block_k.bit_length() - 1


# --- register-staged loads (operands under 4-byte alignment on NVIDIA) ----------------------------
def test_register_staged_is_nvidia_under_four_byte_alignment():
    for name in SHIPPED:
        hw = PROFILES[name]
        for align in (1, 2, 4, 8, 16):
            p = GemmProblem(2048, 511, 4099, align_bytes=align)
            assert space.register_staged(p, hw) == (not hw.is_amd and align < 4), (name, align)


@pytest.mark.parametrize("name", NVIDIA)
def test_register_staged_limit_rejects_deep_wide_stages_only_when_unaligned(name):
    """6007^3 bf16 (2-byte aligned) at 128x256x64 w8 s3 (224 staged registers per thread) ran 4.8x
    slower than 256x128x32 w8 s3 (176) on the H200 (benchmarks/data/h200/square.csv): the rule
    removes both (176 spilled on most shapes); 128x128x32 w8 s4 (128, the limit) stays."""
    hw = PROFILES[name]
    aligned, unaligned = GemmProblem(6000, 6000, 6000), GemmProblem(6007, 6007, 6007, align_bytes=2)
    big, ok = cfg(hw, 128, 256, 64, warps=8, stages=3), cfg(hw, 128, 128, 32, warps=8, stages=4)
    assert space.staged_registers_per_thread(big, unaligned, hw) == 2 * (128 * 64 + 64 * 256) * 2 // (4 * 256) + 128
    assert space.staged_registers_per_thread(ok, unaligned, hw) == 3 * (128 * 32 + 32 * 128) * 2 // (4 * 256) + 64
    assert "no cp.async" in (space.check_staged_registers(big, unaligned, hw) or "")
    assert space.check_staged_registers(ok, unaligned, hw) is None
    assert space.check_staged_registers(big, aligned, hw) is None
    # a performance rule of the space, not a validity rule: a forced config stays valid
    assert space.violations(big, unaligned, hw) == []


@pytest.mark.parametrize("name", SHIPPED)
def test_unaligned_problems_select_only_configs_within_the_staged_limit(name):
    """The scorer's space for a register-staged problem obeys the staging rule: select, rank,
    select_many and candidates return no config that check_staged_registers rejects for that
    problem, and the aligned space keeps the configs the rule removes."""
    hw = PROFILES[name]
    shapes = ((2048, 511, 4099), (6007, 6007, 6007), (4096, 2051, 1024), (64, 4097, 8191))
    for m, n, k in shapes:
        p = GemmProblem(m, n, k, align_bytes=2)
        picks = [origami.select(p, hw).config] + [e.config for e in origami.rank(p, hw, 20)]
        picks += origami.select_many([p, GemmProblem(m, n, k)], hw)[:1]
        for c in picks + list(origami.candidates(p, hw)):
            assert space.check_staged_registers(c, p, hw) is None, (p.describe(), c.short())
    if not hw.is_amd:
        staged = {row_to_config(r, P, hw) for r in base_array(hw, P.a_dtype, P.b_dtype, P.a_layout, P.b_layout, True)}
        full = {row_to_config(r, P, hw) for r in base_array(hw, P.a_dtype, P.b_dtype, P.a_layout, P.b_layout)}
        assert staged < full


def _census(shape: str) -> list[dict]:
    import csv
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "nvidia_aot" / "h200_staged.csv"
    with path.open() as f:
        return [r for r in csv.DictReader(line for line in f if not line.startswith("#"))
                if r["status"] == "ok" and f"{r['m']}x{r['n']}x{r['k']}" == shape]


def _census_config(r: dict) -> TileConfig:
    extra = {"grid": 132} if r["kind"] in ("persistent", "streamk") else \
        {"split_k": 4, "group_m": 1} if r["kind"] == "splitk" else {}
    return TileConfig(r["kind"], int(r["block_m"]), int(r["block_n"]), int(r["block_k"]), int(r["num_warps"]),
                      int(r["num_stages"]), **extra)


# The configs the pressure rule alone gets wrong (each compiled at s3 and s4), which space.STAGED_SPILL_CENSUS
# corrects on sm_90: data-parallel 128x128x32 w8 compiles clean, persistent 16x64x64 spills 24 bytes, split-K
# 16x64x128 compiles clean (its twin in B elements per thread, 16x128x64, spills 656 bytes).
_RULE_WRONG = {"dp 128x128x32 w8", "persistent 16x64x64 w4", "splitk 16x64x128 w4"}


@pytest.mark.parametrize("shape, n_rows, n_said", [
    ("61x6485x11719", 238, 192), ("4096x1057x3333", 228, 194),
    # split-K only, few tiles: 16x128x64 and 32x128x64 spill under split-K's limit
    ("31x1163x5965", 44, 24)])
def test_staged_spills_against_the_sm90_compile_census(shape, n_rows, n_said):
    """space.staged_spills (the B tile counted twice, per-kind STAGED_PRESSURE_LIMITS, the census's verdict where
    that rule disagrees with it) against what ptxas allocated (benchmarks/staged_census.py, committed CSV;
    benchmarks/spill_eval.py --census prints the confusion tables): right on every compiled row. The rule alone
    is wrong exactly on _RULE_WRONG's configs, the census table's keys. The stages do not change the registers."""
    assert {f"{k.value} {bm}x{bn}x{bk} w{w}" for k, bm, bn, bk, w in space.STAGED_SPILL_CENSUS} == _RULE_WRONG
    hw = PROFILES["h200"]
    rows = _census(shape)
    assert len(rows) == n_rows, f"{shape}: {len(rows)} census rows"
    said = 0
    for r in rows:
        c = _census_config(r)
        p = GemmProblem(int(r["m"]), int(r["n"]), int(r["k"]), align_bytes=int(r["align_bytes"]))
        spills = space.staged_spills(c, p, hw)
        said += spills
        spilled = int(r["spill_stores"]) + int(r["spill_loads"]) > 0
        assert spills == spilled, (r["config"], spills)
        rule = space.over_pressure_limit(c, hw)
        assert (rule != spilled) == (" ".join(r["config"].split()[:3]) in _RULE_WRONG), r["config"]
        assert not space.staged_spills(c, GemmProblem(int(r["m"]), int(r["n"]), int(r["k"])), hw)  # aligned: cp.async
    assert said == n_said
    by_tile = {}
    for r in rows:
        by_tile.setdefault((r["kind"], r["block_m"], r["block_n"], r["block_k"], r["num_warps"]), set()).add(
            (r["registers"], r["spill_stores"]))
    assert all(len(v) == 1 for v in by_tile.values()), "a tile's s3 and s4 compiled differently"


def test_the_census_verdicts_hold_on_sm90_only():
    """STAGED_SPILL_CENSUS is what Triton 3.6 built for sm_90: h100 and h200 read it, b200 (sm_100, never
    compiled in the census) keeps the pressure rule; an aligned problem never stages, so never spills."""
    staged = GemmProblem(61, 6485, 11719, align_bytes=2)
    for (kind, bm, bn, bk, w), spills in space.STAGED_SPILL_CENSUS.items():
        extra = {"grid": 132} if kind in (Kind.PERSISTENT, Kind.STREAMK) else \
            {"split_k": 4, "group_m": 1} if kind is Kind.SPLITK else {}
        c = TileConfig(kind, bm, bn, bk, w, 3, **extra)
        rule = space.over_pressure_limit(c, PROFILES["b200"])
        assert rule != spills
        for name in ("h100", "h200"):
            assert space.staged_spills(c, staged, PROFILES[name]) is spills, (name, c.short())
        assert space.staged_spills(c, staged, PROFILES["b200"]) is rule
        assert not space.staged_spills(c, GemmProblem(61, 6485, 11719), PROFILES["h200"])


def test_staged_spill_rule_is_the_profiles_choice():
    """model.staged_spill_rule 1 leaves out, per kind, the register-staged configs over their pressure limit
    (a Stream-K 64x256x32 w8 s3 that spills 332 bytes, where the same tile as split-K spills none); without it
    (every shipped profile; staged_slowdown_limit off here, which leaves this tile out on its own) the space is as
    before. Aligned problems and forced configs are never affected, and the space with the rule keeps only configs
    the rule accepts."""
    hw = PROFILES["h200"].replace_model(staged_slowdown_limit=0.0)
    on = hw.replace_model(staged_spill_rule=1.0)
    assert not space.staged_spill_rule(hw) and space.staged_spill_rule(on)
    p = GemmProblem(61, 6485, 11719, align_bytes=2)
    sk = TileConfig("streamk", 64, 256, 32, 8, 3, grid=132)
    split = TileConfig("splitk", 64, 256, 32, 8, 3, split_k=4, group_m=1)
    assert space.check_staged_registers(sk, p, hw) is None
    reason = space.check_staged_registers(sk, p, on)
    assert reason and "streamk" in reason and "spills" in reason, reason
    assert space.check_staged_registers(split, p, on) is None
    assert space.check_staged_registers(sk, GemmProblem(64, 6480, 11712), on) is None  # aligned: cp.async
    assert space.violations(sk, p, on) == []  # a performance rule: a forced config stays valid
    cands = origami.candidates(p, on)
    assert cands and all(space.check_staged_registers(c, p, on) is None for c in cands)
    assert any(space.check_staged_registers(c, p, on) is not None for c in origami.candidates(p, hw))
    assert origami.select(p, on).config in cands


def test_the_spill_bytes_table_is_the_census_file():
    """origami/spill_census.py is generated from the committed census (benchmarks/staged_census.py --table): it is
    that file's spill bytes, one per (kind, tile, warps), and every compiled config is in it (0 where clean)."""
    import importlib.util
    from pathlib import Path

    from origami import spill_census

    root = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location("staged_census", root / "benchmarks" / "staged_census.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert (root / "origami" / "spill_census.py").read_text() == mod.table_source(), \
        "origami/spill_census.py is stale: python benchmarks/staged_census.py --table"
    rows = _census("61x6485x11719") + _census("4096x1057x3333") + _census("31x1163x5965")
    for r in rows:
        key = (r["kind"], int(r["block_m"]), int(r["block_n"]), int(r["block_k"]), int(r["num_warps"]))
        assert spill_census.SPILL_BYTES[key] == int(r["spill_stores"]) + int(r["spill_loads"]), r["config"]
    assert len(spill_census.SPILL_BYTES) == len({(r["kind"], r["block_m"], r["block_n"], r["block_k"],
                                                   r["num_warps"]) for r in rows}) == 150


def test_census_spill_traffic_speaks_only_where_the_census_compiled():
    """Spill bytes per multiply-add of the K-step: the census's bytes x threads / (BM x BN x BK) on a
    register-staged 2-byte problem on sm_90, from the fp8 census's table on a 1-byte one; 0 for a clean config; None
    on an aligned problem, on b200 (sm_100), on AMD, for mixed operand widths and for a config the census never
    compiled."""
    hw = PROFILES["h100"]
    staged = GemmProblem(26, 2255, 12085, align_bytes=2)
    sk = TileConfig(Kind.STREAMK, 32, 128, 64, 4, 3, grid=396)
    assert space.census_spill_traffic(sk, staged, hw) == pytest.approx(4732 * 128 / (32 * 128 * 64))
    assert space.census_spill_traffic(sk, staged, PROFILES["h200"]) == pytest.approx(2.3105, abs=1e-4)
    clean = TileConfig(Kind.DP, 64, 64, 32, 4, 3)
    assert space.census_spill_traffic(clean, staged, hw) == 0.0
    assert space.census_spill_traffic(sk, GemmProblem(26, 2255, 12085), hw) is None
    assert space.census_spill_traffic(sk, staged, PROFILES["b200"]) is None
    assert space.census_spill_traffic(sk, staged, PROFILES["mi300x"]) is None
    fp8 = GemmProblem(26, 2255, 12085, a_dtype="fp8_e4m3", b_dtype="fp8_e4m3", c_dtype="bf16", align_bytes=1)
    assert space.census_spill_traffic(sk, fp8, hw) == pytest.approx(
        spill_census.SPILL_BYTES_FP8[space.spill_group(sk)] * 128 / (32 * 128 * 64))
    assert space.census_spill_traffic(sk, fp8, hw) != space.census_spill_traffic(sk, staged, hw)
    mixed = GemmProblem(26, 2255, 12085, a_dtype="fp8_e4m3", b_dtype="fp8_e5m2", c_dtype="bf16", align_bytes=1)
    assert space.census_spill_traffic(sk, mixed, hw) is not None  # both 1-byte: the fp8 census speaks
    assert space.census_spill_traffic(sk, GemmProblem(26, 2255, 12085, a_dtype="fp8_e4m3", b_dtype="bf16",
                                                      c_dtype="bf16", align_bytes=1), hw) is None
    assert space.census_spill_traffic(TileConfig(Kind.DP, 256, 256, 64, 8, 3), staged, hw) is None


def test_the_fp8_traffic_limit_leaves_out_exactly_the_fp8_configs_at_or_over_it():
    """model.fp8_spill_traffic_limit: on a register-staged fp8 problem the space holds no config whose fp8 census
    spill traffic reaches the limit and every other config it held without the rule; 2-byte problems, aligned fp8
    problems and b200 are untouched; a forced config still gets a reason naming the parameter; the measured
    slowdown table (bf16 rows) never speaks for fp8."""
    hw = PROFILES["h100"]
    limit = hw.model["fp8_spill_traffic_limit"]
    assert limit > 0
    off = hw.replace_model(fp8_spill_traffic_limit=0.0)
    p = GemmProblem(16384, 2045, 4325, a_dtype="fp8_e4m3", b_dtype="fp8_e4m3", c_dtype="bf16", align_bytes=1)
    with_rule, without = set(origami.candidates(p, hw)), set(origami.candidates(p, off))
    dropped = without - with_rule
    assert with_rule and with_rule <= without and dropped
    for c in dropped:
        assert space.census_spill_traffic(c, p, hw) >= limit, c.short()
        assert "fp8_spill_traffic_limit" in space.check_staged_registers(c, p, hw)
        assert space.measured_spill_slowdown(c, p, hw) is None
    for c in with_rule:
        t = space.census_spill_traffic(c, p, hw)
        assert t is None or t < limit, c.short()
    for q in (GemmProblem(26, 2255, 12085, align_bytes=2),
              GemmProblem(16384, 2048, 4352, a_dtype="fp8_e4m3", b_dtype="fp8_e4m3", c_dtype="bf16")):
        assert set(origami.candidates(q, hw)) == set(origami.candidates(q, off))
    b200 = PROFILES["b200"]
    assert set(origami.candidates(p, b200)) == set(origami.candidates(p, b200.replace_model(fp8_spill_traffic_limit=0.1)))


def test_mn_major_cost_is_priced_only_on_16_byte_aligned_rows():
    """origami.select._mn_priced: model.mn_major_tile_cost prices the register-read regime of 16-byte-aligned tf32/fp8
    rows (its training rows) but neither register-staged fp8 rows (under 4 bytes aligned) nor 4-byte-aligned tf32
    rows (cp.async, no TMA), whose picks it does not move; select_many agrees with select on a mix."""
    from origami.select import _mn_priced

    hw = PROFILES["h100"]
    assert hw.model["mn_major_tile_cost"] > 0
    staged = GemmProblem(16384, 2045, 4325, a_dtype="fp8_e4m3", b_dtype="fp8_e4m3", c_dtype="bf16", align_bytes=1)
    narrow = GemmProblem(32768, 3619, 771, a_dtype="tf32", b_dtype="tf32", c_dtype="fp32", align_bytes=4)
    async_ = GemmProblem(76, 6144, 4096, a_dtype="fp8_e4m3", b_dtype="fp8_e4m3", c_dtype="bf16")
    assert not _mn_priced(hw, staged) and not _mn_priced(hw, narrow) and _mn_priced(hw, async_)
    no_cost = hw.replace_model(mn_major_tile_cost=0.0)
    for p in (staged, narrow):
        assert origami.select(p, hw).config == origami.select(p, no_cost).config, p.describe()
    assert origami.select(async_, hw).config != origami.select(async_, no_cost).config
    many = origami.select_many([staged, narrow, async_], hw)
    assert many == [origami.select(p, hw).config for p in (staged, narrow, async_)]


def test_the_slowdown_limit_leaves_out_exactly_the_configs_at_or_over_it():
    """model.staged_slowdown_limit: on a register-staged problem the space holds no config whose measured spill
    slowdown (origami/spill_slowdown.py) reaches the limit, and every other config it held without the rule; 0 is
    no rule; aligned problems and a profile without the census (b200) are untouched; a forced config still gets a
    reason naming the parameter."""
    hw = PROFILES["h200"]
    limit = hw.model["staged_slowdown_limit"]
    assert limit > 0
    off = hw.replace_model(staged_slowdown_limit=0.0)
    for p in (GemmProblem(26, 2255, 12085, align_bytes=2), GemmProblem(61, 6485, 11719, align_bytes=2)):
        with_rule, without = set(origami.candidates(p, hw)), set(origami.candidates(p, off))
        dropped = without - with_rule
        assert with_rule <= without and dropped
        for c in dropped:
            assert space.measured_spill_slowdown(c, p, hw) >= limit, c.short()
            assert "staged_slowdown_limit" in space.check_staged_registers(c, p, hw)
        for c in with_rule:
            slow = space.measured_spill_slowdown(c, p, hw)
            assert slow is None or slow < limit, c.short()
    aligned = GemmProblem(2048, 2255, 12085)
    assert set(origami.candidates(aligned, hw)) == set(origami.candidates(aligned, off))
    b200 = PROFILES["b200"]
    p = GemmProblem(26, 2255, 12085, align_bytes=2)
    assert set(origami.candidates(p, b200)) == set(origami.candidates(p, b200.replace_model(staged_slowdown_limit=1.0)))


def test_measured_spill_slowdown_speaks_only_for_measured_spilling_groups():
    """None for a clean config, an aligned problem, another arch and a group without the table's rows; the
    table's value for a spilling group it holds."""
    from origami.spill_slowdown import SLOWDOWN

    hw = PROFILES["h100"]
    staged = GemmProblem(26, 2255, 12085, align_bytes=2)
    sk = TileConfig(Kind.STREAMK, 32, 128, 64, 4, 3, grid=396)
    assert space.measured_spill_slowdown(sk, staged, hw) == SLOWDOWN[("streamk", 32, 128, 64, 4)] > 2
    assert space.measured_spill_slowdown(TileConfig(Kind.DP, 64, 64, 32, 4, 3), staged, hw) is None
    assert space.measured_spill_slowdown(sk, GemmProblem(26, 2255, 12085), hw) is None
    assert space.measured_spill_slowdown(sk, staged, PROFILES["b200"]) is None
    assert all(space.census_spill_traffic(TileConfig(Kind(k), bm, bn, bk, w, 3, **(
        {"grid": 132} if k in ("persistent", "streamk") else {"split_k": 4, "group_m": 1} if k == "splitk" else {})),
        staged, hw) > 0 for k, bm, bn, bk, w in SLOWDOWN), "every measured group spills by the census"


def test_the_promoted_spill_limit_leaves_out_exactly_the_promoted_fp8_configs_at_or_over_it():
    """model.fp8_promoted_spill_limit: on a 16-byte-aligned fp8 problem (scaled_mm's layout) the space holds no config
    whose promoted-kernel census spill reaches the limit, and every other config it held without the rule: the spilling
    128x256x128 w8 goes, its tied twin 256x128x128 w8 (clean) stays. bf16 problems, register-staged fp8 rows (the
    other census's) and non-sm_90 profiles are untouched; a forced config is still valid (not in PREDICATES)."""
    from origami.promoted_spill import PROMOTED_SPILL_BYTES_FP8

    for name in ("h100", "h200"):
        hw = PROFILES[name]
        limit = hw.model["fp8_promoted_spill_limit"]
        assert limit > 0
        off = hw.replace_model(fp8_promoted_spill_limit=0.0)
        p = GemmProblem(8192, 8192, 8192, a_dtype="fp8_e4m3", b_dtype="fp8_e4m3", c_dtype="bf16", b_layout="T")
        with_rule, without = set(origami.candidates(p, hw)), set(origami.candidates(p, off))
        dropped = without - with_rule
        assert with_rule and with_rule <= without and dropped
        for c in dropped:
            assert PROMOTED_SPILL_BYTES_FP8[space.spill_group(c)] >= limit, c.short()
            assert "fp8_promoted_spill_limit" in space.check_promoted_registers(c, p, hw)
            assert space.violations(c, p, hw) == [], c.short()  # config= may still force it
        for c in with_rule:
            b = space.promoted_spill_bytes(c, p, hw)
            assert b is not None and b < limit, c.short()
        shapes = {(c.kind, c.block_m, c.block_n, c.block_k, c.num_warps) for c in with_rule}
        assert (Kind.DP, 256, 128, 128, 8) in shapes and (Kind.DP, 128, 256, 128, 8) not in shapes
        assert origami.select(p, hw).config.block_n != 256 or origami.select(p, hw).config.num_warps != 8
        for q in (GemmProblem(8192, 8192, 8192, b_layout="T"),  # bf16
                  GemmProblem(16384, 2045, 4325, a_dtype="fp8_e4m3", b_dtype="fp8_e4m3", c_dtype="bf16", align_bytes=1)):
            assert set(origami.candidates(q, hw)) == set(origami.candidates(q, off))
            assert all(space.promoted_spill_bytes(c, q, hw) is None for c in origami.candidates(q, hw))
    for name in ("b200", "mi300x"):
        hw = PROFILES[name].replace_model(fp8_promoted_spill_limit=1.0)
        p = GemmProblem(8192, 8192, 8192, a_dtype="fp8_e4m3", b_dtype="fp8_e4m3", c_dtype="bf16", b_layout="T")
        assert set(origami.candidates(p, hw)) == set(origami.candidates(p, PROFILES[name]))

"""The warp-specialised kernel (kind 'ws') in origami's space: where its rows are, what the scorer
lets them run, and that a profile without ``model.ws_efficiency`` is the space it was before.

The properties of every row (select is the exact argmin, screen bounds, twins, predicates, K
monotonicity) cover 'ws' rows through the ``h200+ws`` profile of test_model_properties.py; this file
checks what is particular to the kind.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import origami
from origami import GemmProblem, Kind, TileConfig
from origami._encoding import C, K_WS
from origami.enumerate import base_array, row_to_config
from origami.hardware import OPTIONAL_MODEL_PARAMS, SHIPPED
from origami.problem import DType, Layout
from origami.select import score_problem
from origami.space import WS_TILES, check_problem, check_ws, violations, without_ws, ws_available

H200 = origami.load_profile("h200")
WS = H200.replace_model(ws_efficiency=1.15)


def ws_rows(base: np.ndarray) -> np.ndarray:
    return np.nonzero(base[:, C["kind"]] == K_WS)[0]


def test_a_profile_without_the_field_has_no_ws_rows_and_reads_it_as_zero():
    """ws_efficiency is optional with default 0: every profile that leaves it out keeps its space
    (no 'ws' row in any class), so its rankings are the ones recorded before the kind existed."""
    assert OPTIONAL_MODEL_PARAMS["ws_efficiency"] == 0.0
    for name in SHIPPED:
        hw = origami.load_profile(name)
        if "ws_efficiency" in hw.to_yaml_dict()["model"]:
            continue  # a fitted value: the other tests of this file cover such a profile
        assert hw.model["ws_efficiency"] == 0.0 and not ws_available(hw)
        for dt in (DType.BF16, DType.FP16, DType.FP32, DType.FP8_E4M3):
            for staged in (False, True):
                assert ws_rows(base_array(hw, dt, dt, Layout.N, Layout.T, staged)).size == 0, name


def test_ws_rows_are_the_kernels_tiles_in_16_bit_unstaged_classes_only():
    for dt in (DType.BF16, DType.FP16):
        for la in Layout:
            for lb in Layout:
                base = base_array(WS, dt, dt, la, lb, False)
                rows = ws_rows(base)
                tiles = sorted((int(r[C["block_m"]]), int(r[C["block_n"]]), int(r[C["block_k"]]),
                                int(r[C["num_stages"]])) for r in base[rows])
                assert tiles == sorted(WS_TILES)
                assert (base[rows, C["num_warps"]] == 8).all() and (base[rows, C["grid_mult"]] == 1).all()
        assert ws_rows(base_array(WS, dt, dt, Layout.N, Layout.N, True)).size == 0  # register-staged loads
    for dt in (DType.FP32, DType.TF32, DType.FP8_E4M3):
        assert ws_rows(base_array(WS, dt, dt, Layout.N, Layout.T, False)).size == 0
    amd = origami.load_profile("mi300x").replace_model(ws_efficiency=1.0)
    assert not ws_available(amd) and ws_rows(base_array(amd, DType.BF16, DType.BF16, Layout.N, Layout.N)).size == 0


def test_without_ws_is_the_space_of_the_same_profile_minus_the_ws_rows():
    plain = without_ws(WS)
    assert plain.model["ws_efficiency"] == 0.0 and without_ws(H200.replace_model(ws_efficiency=0.0)).model[
        "ws_efficiency"] == 0.0
    for dt in (DType.BF16, DType.FP16):
        full = base_array(WS, dt, dt, Layout.N, Layout.N)
        rest = base_array(plain, dt, dt, Layout.N, Layout.N)
        keep = full[:, C["kind"]] != K_WS
        assert np.array_equal(full[keep], rest)


@pytest.mark.parametrize("m,n,k", [(8192, 8192, 8192), (4096, 4096, 4096), (4096, 1024, 4096)])
def test_large_aligned_products_pick_ws_at_this_efficiency_with_a_persistent_grid(m, n, k):
    p = GemmProblem(m, n, k)
    best = origami.select(p, WS)
    assert best.config.kind is Kind.WS, best.config.short()
    tiles = -(-m // best.config.block_m) * -(-n // best.config.block_n)
    assert best.config.grid == min(WS.compute_units, tiles)
    assert violations(best.config, p, WS) == []
    assert origami.predict(p, WS, best.config).latency_ns == best.latency_ns
    # the same problem without the kernel picks a Triton kind, predicted slower
    other = origami.select(p, without_ws(WS))
    assert other.config.kind is not Kind.WS and other.latency_ns > best.latency_ns


@pytest.mark.parametrize("change,why", [
    (dict(batch=2), "batch 2"),
    (dict(align_bytes=8), "8-byte aligned"),
    (dict(n=8190 + 1), "N=8191"),
    (dict(c_dtype="fp32"), "-> fp32"),
])
def test_the_scorer_refuses_ws_exactly_where_check_ws_does(change, why):
    kw = dict(m=8192, n=8192, k=8192)
    kw.update(change)
    p = GemmProblem(**kw)
    base, lat, _ = score_problem(p, WS)
    rows = ws_rows(base)
    assert rows.size and np.isinf(lat[rows]).all()
    reason = check_ws(TileConfig(Kind.WS, 128, 256, 64, 8, 3, grid=132), p, WS)
    assert reason is not None and why in reason, reason
    assert origami.select(p, WS).config.kind is not Kind.WS


def test_fp16_inputs_with_a_bf16_output_may_run_ws():
    """The kernel's epilogue rounds the fp32 accumulator once to either 16-bit type."""
    p = GemmProblem(8192, 8192, 8192, "fp16", "fp16", "bf16")
    assert origami.select(p, WS).config.kind is Kind.WS


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(m=st.integers(1, 9000), n=st.integers(1, 9000), k=st.integers(1, 9000), batch=st.sampled_from((1, 1, 2)),
       dt=st.sampled_from(("bf16", "fp16")), c_dt=st.sampled_from(("bf16", "fp16", "fp32")),
       la=st.sampled_from("NT"), lb=st.sampled_from("NT"), align=st.sampled_from((2, 4, 8, 16, 16)))
def test_a_ws_row_scores_finite_exactly_when_the_predicates_accept_it(m, n, k, batch, dt, c_dt, la, lb, align):
    """origami._core.ws_valid mirrors check_ws (and problem_valid check_problem): a 'ws' row gets a
    finite time iff its config passes every predicate, both ways."""
    p = GemmProblem(m, n, k, dt, dt, c_dt, la, lb, batch=batch, align_bytes=align)
    base, lat, _ = score_problem(p, WS)
    for i in ws_rows(base):
        cfg = row_to_config(base[i], p, WS)
        ok = check_ws(cfg, p, WS) is None and check_problem(cfg, p, WS) is None
        assert np.isfinite(lat[i]) == ok, (p.describe(), cfg.short(), check_ws(cfg, p, WS), lat[i])


def test_ws_tile_overhead_is_paid_once_not_per_tile():
    """The kind's one structural claim: the epilogue of a tile overlaps the next tile's loads, so a
    program pays tile_overhead_ns once. With ws_efficiency 1 a 'ws' row and the persistent Triton row
    of the same tile and grid differ by (waves - 1) tile overheads, nothing else."""
    hw = H200.replace_model(ws_efficiency=1.0)
    p = GemmProblem(8192, 8192, 8192)  # 2048 tiles of 128x256 on 132 SMs: 16 waves
    ws = TileConfig(Kind.WS, 128, 256, 64, 8, 3, 8, grid=132)
    pers = TileConfig(Kind.PERSISTENT, 128, 256, 64, 8, 3, 8, grid=132)
    t_ws, t_pers = (origami.predict(p, hw, c).latency_ns for c in (ws, pers))
    waves = -(-2048 // 132)
    tile = hw.model["tile_overhead_ns"]
    assert t_pers - t_ws == pytest.approx((waves - 1) * tile * (1 + 1e-3), rel=1e-6)

"""model.staged_load_exponent (origami._core._staged_load_factor): register-staged loads priced by the
warps an SM holds. Off (0) in every shipped profile; these check what it does when on."""

from __future__ import annotations

import pytest

import origami
from origami.config import Kind, TileConfig
from origami.problem import GemmProblem

H200 = origami.load_profile("h200")
ON = H200.replace_model(staged_load_exponent=1.0)


def _dp(bm, bn, warps):
    return TileConfig(kind=Kind.DP, block_m=bm, block_n=bn, block_k=32, num_warps=warps, num_stages=3, group_m=8)


def _lat(p, hw, cfg):
    return origami.predict(p, hw, cfg).latency_ns


# 2-byte rows: register-staged on NVIDIA. 33 x 4097 output: 65 tiles of 64x64, under one per SM.
STAGED = GemmProblem(33, 4097, 6001, "bf16", "bf16", "bf16", align_bytes=2)
# 4-byte rows (cp.async, no TMA) and the profile with model.narrow_load_exponent on
NARROW = GemmProblem(33, 4098, 6002, "bf16", "bf16", "bf16", align_bytes=4)
NARROW_ON = H200.replace_model(narrow_load_exponent=1.0)


# per exponent, the profiles that fitted it on their own GPU's training sweeps (sources.model says how)
FITTED = {"staged_load_exponent": {"h100"}, "narrow_load_exponent": {"h100"}}


@pytest.mark.parametrize("param", sorted(FITTED))
def test_off_by_default_in_every_shipped_profile_but_the_fitted_ones(param):
    for name in origami.hardware.SHIPPED:
        hw = origami.load_profile(name)
        if name in FITTED[param]:
            assert 0.0 < hw.model[param] <= 2.0, name
            assert param in hw.sources["model"], name
        else:
            assert hw.model[param] == 0.0, name


def test_one_four_warp_program_per_sm_pays_and_its_memory_term_grows_by_the_factor():
    cfg = _dp(64, 64, 4)
    off, on = origami.predict(STAGED, H200, cfg), origami.predict(STAGED, ON, cfg)
    assert on.latency_ns > off.latency_ns
    # (8 warps / 4) ** 1 on the unaligned penalty: the L2 term doubles exactly
    assert on.terms["l2"] == pytest.approx(2.0 * off.terms["l2"], rel=1e-12)


def test_eight_resident_warps_or_more_are_unchanged():
    cfg = _dp(64, 64, 8)
    assert _lat(STAGED, ON, cfg) == _lat(STAGED, H200, cfg)


def test_aligned_rows_and_amd_profiles_are_unchanged():
    aligned = GemmProblem(33, 4096, 6000, "bf16", "bf16", "bf16")
    cfg = _dp(64, 64, 4)
    assert _lat(aligned, ON, cfg) == _lat(aligned, H200, cfg)
    mi = origami.load_profile("mi300x")
    sel_off = origami.select(STAGED, mi)
    sel_on = origami.select(STAGED, mi.replace_model(staged_load_exponent=2.0))
    assert (sel_on.config, sel_on.latency_ns) == (sel_off.config, sel_off.latency_ns)


@pytest.mark.parametrize("problem, hw", [(STAGED, ON), (NARROW, NARROW_ON)], ids=["staged", "narrow"])
def test_select_equals_the_argmin_of_predict_with_it_on(problem, hw):
    """The branch and bound's bounds stay bounds (the factor is never below 1): select's pick is the
    best of every candidate's prediction."""
    pick = origami.select(problem, hw)
    ranked = origami.rank(problem, hw)
    assert pick.latency_ns == pytest.approx(min(r.latency_ns for r in ranked), rel=1e-12)


# model.narrow_load_exponent: the same factor for rows 4 or 8 bytes aligned (cp.async, no TMA;
# origami._core._load_class); each exponent prices its own load class only (NARROW, NARROW_ON above)


@pytest.mark.parametrize("align", [4, 8])
def test_narrow_rows_pay_their_own_exponent(align):
    p = GemmProblem(33, 4098, 6002, "bf16", "bf16", "bf16", align_bytes=align)
    cfg = _dp(64, 64, 4)
    off, on = origami.predict(p, H200, cfg), origami.predict(p, NARROW_ON, cfg)
    assert on.terms["l2"] == pytest.approx(2.0 * off.terms["l2"], rel=1e-12)
    # staged_load_exponent does not reach 4- and 8-byte rows
    assert _lat(p, ON, cfg) == _lat(p, H200, cfg)


def test_narrow_exponent_leaves_register_staged_and_aligned_rows_alone():
    cfg = _dp(64, 64, 4)
    assert _lat(STAGED, NARROW_ON, cfg) == _lat(STAGED, H200, cfg)
    aligned = GemmProblem(33, 4096, 6000, "bf16", "bf16", "bf16")
    assert _lat(aligned, NARROW_ON, cfg) == _lat(aligned, H200, cfg)
    assert _lat(NARROW, NARROW_ON, _dp(64, 64, 8)) == _lat(NARROW, H200, _dp(64, 64, 8))

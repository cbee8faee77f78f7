"""model.splitk_efficiency: the split-K kernel's main loop against the data-parallel one's (default 1,
every shipped profile). Checks what it does when set."""

from __future__ import annotations

import pytest

import origami
from origami.config import Kind, TileConfig
from origami.problem import GemmProblem

H200 = origami.load_profile("h200")
SLOW = H200.replace_model(splitk_efficiency=0.5)
P = GemmProblem(64, 4096, 8192, "bf16", "bf16", "bf16")
SPLIT = TileConfig(kind=Kind.SPLITK, block_m=64, block_n=128, block_k=64, num_warps=4, num_stages=3, group_m=1,
                   split_k=4)
DP = TileConfig(kind=Kind.DP, block_m=64, block_n=128, block_k=64, num_warps=4, num_stages=3, group_m=8)


def test_default_is_one_in_every_shipped_profile():
    for name in origami.hardware.SHIPPED:
        assert origami.load_profile(name).model["splitk_efficiency"] == 1.0


def test_it_slows_split_k_compute_only():
    off, on = origami.predict(P, H200, SPLIT), origami.predict(P, SLOW, SPLIT)
    assert on.terms["compute"] == pytest.approx(2.0 * off.terms["compute"], rel=1e-12)
    assert on.terms["l2"] == off.terms["l2"] and on.terms["fixup"] == off.terms["fixup"]
    assert origami.predict(P, SLOW, DP).latency_ns == origami.predict(P, H200, DP).latency_ns


def test_select_equals_the_argmin_of_predict_with_it_set():
    pick = origami.select(P, SLOW)
    assert pick.latency_ns == pytest.approx(min(r.latency_ns for r in origami.rank(P, SLOW)), rel=1e-12)

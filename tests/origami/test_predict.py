"""origami.predict (DESIGN.md §3): one given config through the scorer rank/select use."""

from __future__ import annotations

import dataclasses

import pytest

import origami
from origami import GemmProblem, Kind, TileConfig

PROBLEMS = [
    GemmProblem(4096, 4096, 4096),
    GemmProblem(16, 4096, 4096),
    GemmProblem(128, 1024, 65536),
    GemmProblem(727, 577, 859, align_bytes=2),
    GemmProblem(8192, 1000, 7000, "fp8_e4m3", "fp8_e4m3", "bf16"),
    GemmProblem(2048, 2048, 512, "fp32", "fp32", "fp32", "T", "N", batch=3),
    GemmProblem(1, 8192, 8192),
]


@pytest.mark.parametrize("name", ["h200", "mi300x", "mi355x", "b200"])
@pytest.mark.parametrize("problem", PROBLEMS, ids=lambda p: p.describe())
def test_predict_of_select_equals_select(name, problem):
    best = origami.select(problem, name)
    est = origami.predict(problem, name, best.config)
    assert est == best


@pytest.mark.parametrize("name", ["h200", "mi300x"])
def test_predict_equals_rank_for_every_ranked_config(name):
    p = GemmProblem(3000, 2000, 1500)
    for e in origami.rank(p, name, k=40):
        assert origami.predict(p, name, e.config) == e


def test_predict_scores_configs_outside_the_space():
    p = GemmProblem(1024, 1024, 1024)
    cfg = TileConfig(Kind.DP, 64, 64, 16, 4, 2, group_m=4)  # BLOCK_K 16 / 2 stages: not enumerated on h200
    assert cfg not in origami.candidates(p, "h200")
    est = origami.predict(p, "h200", cfg)
    assert est.config is cfg and 0 < est.latency_ns < float("inf")
    assert est.latency_ns > origami.select(p, "h200").latency_ns


@pytest.mark.parametrize("cfg,predicate", [
    (TileConfig(Kind.DP, 256, 256, 128, 8, 4), "check_smem"),
    (TileConfig(Kind.DP, 256, 128, 64, 4, 3), "check_registers"),
    (TileConfig(Kind.DP, 128, 128, 64, 8, 3, waves_per_eu=0, matrix_instr_nonkdim=16, kpack=1), "check_vendor"),
    (TileConfig(Kind.SPLITK, 64, 64, 64, 4, 3, split_k=4), "check_problem"),
    (TileConfig(Kind.PERSISTENT, 128, 128, 64, 8, 3, grid=100_000), "check_residency"),
])
def test_invalid_config_names_the_predicate(cfg, predicate):
    with pytest.raises(ValueError, match=f"^config .* on h200: {predicate}: "):
        origami.predict(GemmProblem(4096, 4096, 4096), "h200", cfg)


def test_grid_the_model_cannot_express():
    hw = origami.load_profile("h200")
    sk = TileConfig(Kind.STREAMK, 128, 128, 64, 8, 3, grid=hw.compute_units + 3)
    with pytest.raises(ValueError, match="config.grid: .*multiples of the 132 compute units"):
        origami.predict(GemmProblem(4096, 4096, 4096), hw, sk)
    # a persistent grid of at least the tile count is one wave whatever its size
    p = GemmProblem(512, 512, 4096)  # 16 tiles of 128x128
    a = origami.predict(p, hw, TileConfig(Kind.PERSISTENT, 128, 128, 64, 8, 3, grid=16))
    b = origami.predict(p, hw, TileConfig(Kind.PERSISTENT, 128, 128, 64, 8, 3, grid=hw.compute_units))
    assert a.latency_ns == b.latency_ns


def test_streamk_grid_that_divides_the_tiles_is_rejected():
    hw = origami.load_profile("h200")
    p = GemmProblem(128 * 132, 128, 4096)  # 132 tiles: a grid of 132 streams nothing
    with pytest.raises(ValueError, match="no finite time"):
        origami.predict(p, hw, TileConfig(Kind.STREAMK, 128, 128, 64, 8, 3, grid=132))


def test_predict_argument_errors():
    p = GemmProblem(64, 64, 64)
    cfg = origami.select(p, "h200").config
    with pytest.raises(TypeError, match="config: expected an origami.TileConfig"):
        origami.predict(p, "h200", dataclasses.asdict(cfg))
    with pytest.raises(ValueError, match="empty output"):
        origami.predict(GemmProblem(0, 64, 64), "h200", cfg)


@pytest.mark.parametrize("name", ["h200", "mi300x"])
@pytest.mark.parametrize("problem", PROBLEMS[:5], ids=lambda p: p.describe())
def test_select_among_every_kind_is_select(name, problem):
    assert origami.select_among(problem, name, list(Kind)) == origami.select(problem, name)
    dp = origami.select_among(problem, name, [Kind.DP], chiplet_remap=False)
    assert dp.config.kind is Kind.DP and dp.config.num_chiplets == 1
    assert dp == origami.predict(problem, name, dp.config)
    assert dp.latency_ns >= origami.select(problem, name).latency_ns

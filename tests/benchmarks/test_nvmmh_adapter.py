"""benchmarks/nvmmh.py: nvMatmulHeuristics' picks mapped onto our TileConfig space (CPU only).

nvMMH is an optional extra (``pip install 'tritonblas[nvmmh]'``); CI does not install it, so every
test that queries it is skipped there with the reason. The precision mapping needs no nvMMH.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import origami  # noqa: E402
from benchmarks import nvmmh  # noqa: E402
from origami.config import Kind  # noqa: E402
from origami.space import violations  # noqa: E402

needs_nvmmh = pytest.mark.skipif(not nvmmh.available(), reason=f"{nvmmh.unavailable_reason()}")
HW = origami.load_profile("h200")


def test_precision_strings():
    P = origami.GemmProblem
    assert nvmmh.precision_of(P(8, 8, 8, "bf16", "bf16", "bf16")) == "TST"  # T is bf16; B would be int8
    assert nvmmh.precision_of(P(8, 8, 8, "fp16", "fp16", "fp16")) == "HSH"
    assert nvmmh.precision_of(P(8, 8, 8, "fp16", "fp16", "fp32")) == "HSS"
    assert nvmmh.precision_of(P(8, 8, 8, "tf32", "tf32", "fp32")) == "SFS"
    assert nvmmh.precision_of(P(8, 8, 8, "fp32", "fp32", "fp32")) == "SSS"
    assert nvmmh.precision_of(P(8, 8, 8, "fp8_e4m3", "fp8_e4m3", "bf16")) == "QQTST"
    with pytest.raises(ValueError):
        nvmmh.precision_of(P(8, 8, 8, "int8", "int8", "bf16"))


def test_mapping_clamps_into_our_space():
    p = origami.GemmProblem(4096, 4096, 4096)
    # 128x128 CTA with 32x32 warp tiles = 16 warps in nvMMH's terms -> 8, ours at most
    cfg = nvmmh.map_config((128, 128, 32), (32, 32, 32), 1, 8, 8, p, HW)
    assert (cfg.kind, cfg.block_m, cfg.block_n, cfg.block_k, cfg.num_warps, cfg.group_m) == (Kind.DP, 128, 128, 32, 8, 8)
    # 256x128x64 bf16 at 8 stages needs 384 KiB of shared memory: stages lowered until it fits
    cfg = nvmmh.map_config((256, 128, 64), (64, 64, 64), 1, 8, 1, p, HW)
    assert cfg.num_stages == 4 and not violations(cfg, p, HW)
    # split-K where the tile grid fills the GPU is outside our space; a non-power-of-two tile too
    assert nvmmh.map_config((128, 128, 64), (64, 64, 64), 2, 4, 1, p, HW) is None
    assert nvmmh.map_config((96, 128, 64), (32, 64, 64), 1, 4, 1, p, HW) is None
    skinny = origami.GemmProblem(16, 4096, 4096)
    cfg = nvmmh.map_config((64, 64, 64), (32, 32, 64), 2, 8, 1, skinny, HW)
    assert cfg.kind is Kind.SPLITK and cfg.split_k == 2


@needs_nvmmh
@pytest.mark.parametrize("shape", [(64, 8192, 4096), (8192, 64, 4096), (4096, 4096, 4096), (1, 4096, 4096),
                                   (3000, 1000, 7000), (33, 17, 40)])
@pytest.mark.parametrize("dtype", ["bf16", "fp16", "tf32"])
def test_top_configs_are_valid_in_our_space(shape, dtype):
    c = origami.DType(dtype).default_output
    p = origami.GemmProblem(*shape, dtype, dtype, c)
    ests = nvmmh.top_estimates(p, 8)
    assert 1 <= len(ests) <= 8
    cfgs = [cfg for cfg, _ in ests]
    assert len(set(cfgs)) == len(cfgs), "duplicates after mapping"
    for cfg in cfgs:
        assert violations(cfg, p, HW) == [], f"{cfg.short()} for {p.describe()}: {violations(cfg, p, HW)}"
        assert cfg.num_warps in nvmmh.ALLOWED_WARPS and cfg.kind in (Kind.DP, Kind.SPLITK)
    est = [e for _, e in ests]
    assert est == sorted(est), "not sorted by nvMMH's runtime estimate"
    assert nvmmh.top_configs(p, 8) == cfgs, "not deterministic"


@needs_nvmmh
def test_orientation_follows_m_and_n():
    """cta[0] tiles M: a 64-row problem gets a short tile, its transpose a narrow one."""
    wide = nvmmh.top_configs(origami.GemmProblem(64, 8192, 4096), 8)
    tall = nvmmh.top_configs(origami.GemmProblem(8192, 64, 4096), 8)
    assert wide[0].block_m <= 64 and wide[0].block_n >= wide[0].block_m, wide[0].short()
    assert tall[0].block_n <= 64 and tall[0].block_m >= tall[0].block_n, tall[0].short()


@needs_nvmmh
def test_layout_and_batch_are_accepted():
    p = origami.GemmProblem(512, 256, 1024, a_layout="T", b_layout="T", batch=4)
    cfgs = nvmmh.top_configs(p, 4)
    assert cfgs and all(not violations(c, p, HW) for c in cfgs)


@needs_nvmmh
def test_unknown_profile_is_refused():
    with pytest.raises(ValueError, match="no predefined nvMMH GPU"):
        nvmmh.top_configs(origami.GemmProblem(128, 128, 128), 1, profile="mi300x")

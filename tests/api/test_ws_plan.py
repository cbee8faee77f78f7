"""The 'ws' kind between origami and its kernel: the model's tiles are the kernel's, its shared
memory is the kernel's, and a 'ws' plan launches the Gluon kernel with the config's tile."""

from __future__ import annotations

import pytest
import torch

import origami
from origami import GemmProblem, Kind, TileConfig
from origami.space import WS_TILES, WS_WARPS, smem_bytes
from tritonblas import plan as _plan
from tritonblas.kernels import gluon_hopper

WS = origami.load_profile("h200").replace_model(ws_efficiency=1.15)


def test_the_models_tiles_are_the_kernels_variants():
    assert tuple(WS_TILES) == tuple(gluon_hopper.VARIANTS)
    assert WS_WARPS == gluon_hopper.NUM_WARPS


@pytest.mark.parametrize("bm,bn,bk,st", WS_TILES)
@pytest.mark.parametrize("out", ["bf16", "fp16"])
def test_the_models_shared_memory_is_the_kernels(bm, bn, bk, st, out):
    p = GemmProblem(4096, 4096, 4096, "bf16", "bf16", out)
    cfg = TileConfig(Kind.WS, bm, bn, bk, WS_WARPS, st, 8, grid=132)
    assert smem_bytes(cfg, p, WS) == gluon_hopper.smem_bytes(bm, bn, bk, st, 2, 2)["total"]
    assert smem_bytes(cfg, p, WS) <= gluon_hopper.MAX_SMEM


def test_a_ws_plan_is_the_persistent_grid_and_launches_the_gluon_kernel(monkeypatch):
    p = GemmProblem(1536, 1024, 64)
    cfg = TileConfig(Kind.WS, 128, 128, 64, 8, 4, 8, grid=132)
    lp = _plan.make_plan(cfg, p, WS)
    assert lp.kernel_name == _plan.WS_KERNEL and lp.grid == (96,) and lp.tma and not (lp.stage_a or lp.stage_b)
    with pytest.raises(ValueError, match="ws: h200 has no warp-specialised kernel"):
        _plan.make_plan(cfg, p, origami.load_profile("h200").replace_model(ws_efficiency=0.0))
    got = {}

    def stand_in(a, b, out, bias=None, **kw):
        got.update(kw, bias=bias)
        return out

    monkeypatch.setattr(gluon_hopper, "gluon_matmul", stand_in)
    a, b, out = torch.zeros(1536, 64, dtype=torch.bfloat16), torch.zeros(64, 1024, dtype=torch.bfloat16), \
        torch.empty(1536, 1024, dtype=torch.bfloat16)
    lp.kernel[lp.grid](a, b, out, None)  # what PreparedLaunch.run_kernel calls
    assert got == dict(block_m=128, block_n=128, block_k=64, stages=4, group_m=8, num_sms=96, bias=None)
    assert lp.kernel.warmup(a, b, out, None, grid=lp.grid) is None  # nothing compiled ahead (no worker process)


@pytest.mark.skipif(torch.cuda.is_available(), reason="CPU-only: CPU operands under the interpreter; a GPU process "
                    "built the kernels for the GPU and refuses CPU tensors before the 'ws' checks")
def test_prepare_launch_refuses_what_the_ws_kernel_cannot_do(monkeypatch):
    p = GemmProblem(256, 256, 64)
    lp = _plan.make_plan(TileConfig(Kind.WS, 128, 128, 64, 8, 4, 8, grid=4), p, WS)
    a, b, out = torch.zeros(256, 64, dtype=torch.bfloat16), torch.zeros(64, 256, dtype=torch.bfloat16), \
        torch.empty(256, 256, dtype=torch.bfloat16)
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    with pytest.raises(ValueError, match="alpha: the 'ws' kernel .* adds a bias only"):
        _plan.prepare_launch(lp, a, b, out, alpha=2.0)
    with pytest.raises(ValueError, match="c, activation: the 'ws' kernel"):
        _plan.prepare_launch(lp, a, b, out, c=out, beta=1.0, activation="relu")
    with pytest.raises(RuntimeError, match="does not run under TRITON_INTERPRET=1"):
        _plan.prepare_launch(lp, a, b, out)


def test_a_ws_plan_refuses_alignment_staging():
    """``make_plan(..., stage=(A?, B?))`` plans for a problem made 16-byte aligned by copying A/B;
    the 'ws' branch returned the Gluon kernel's plan with stage_a = stage_b = False, silently dropping
    the requested staging, so the launch bound the caller's unaligned operands (and the kernel's TMA
    store needs out aligned, which staging never provides). Reproduction: make_plan(ws 128x128x64,
    GemmProblem(1536, 1024, 64), h200, tma=True, stage=(True, False)).stage_a was False."""
    p = GemmProblem(1536, 1024, 64)
    cfg = TileConfig(Kind.WS, 128, 128, 64, 8, 4, 8, grid=132)
    for stage in ((True, False), (False, True), (True, True)):
        with pytest.raises(ValueError, match="stage"):
            _plan.make_plan(cfg, p, WS, tma=True, stage=stage)
    lp = _plan.make_plan(cfg, p, WS, tma=True, stage=(False, False))
    assert lp.kernel_name == _plan.WS_KERNEL and not (lp.stage_a or lp.stage_b)

"""Stream-K and split-K: grids that do and do not divide the work, the last-arriver fix-up, bitwise
determinism, counters re-armed to zero (CUDA-graph replay safe)."""

from __future__ import annotations

import pytest
import torch

from _check import check_gemm, config, operand, run_gemm
from origami.pidmap import streamk_owner, streamk_range, streamk_split

# 70 x 50 x 100 with 32-blocks: 3 x 2 = 6 tiles of 4 K-iterations (the last one a 4-element tail).
SHAPE = (70, 50, 100)
TILES, ITERS = 6, 4


def _counters_zero(device) -> bool:
    from tritonblas import plan

    _, counters = plan.workspace(torch.device(device), 0, 0)
    return int(torch.count_nonzero(counters)) == 0


@pytest.mark.parametrize("grid", [1, 2, 4, 5, 6, 7, 11, 16, 24, 30])
def test_streamk_partition_mirror(grid):
    """Properties of the split the kernel uses: ranges tile the line, each touches ≤ 2 tiles."""
    dp, sk, base, extra = streamk_split(TILES, ITERS, grid)
    assert dp % grid == 0 and dp + sk == TILES and sk < grid
    ranges = [streamk_range(p, base, extra) for p in range(grid)]
    assert ranges[0][0] == 0 and ranges[-1][1] == sk * ITERS
    assert all(ranges[i][1] == ranges[i + 1][0] for i in range(grid - 1))
    for p, (lo, hi) in enumerate(ranges):
        assert hi - lo <= ITERS
        if hi > lo:
            assert (hi - 1) // ITERS - lo // ITERS <= 1
            assert streamk_owner(lo, base, extra) == p and streamk_owner(hi - 1, base, extra) == p


@pytest.mark.timeout(120)
@pytest.mark.parametrize("grid", [1, 4, 5, 6, 7, 16, 24, 30])
@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
def test_streamk_grids(grid, dtype, device, h200):
    """grid 1/6: all data-parallel; 4, 5: one or two split tiles; 7…30: more programs than tiles, so
    every tile is split, some programs get 0 iterations (30 > 24 iterations)."""
    m, n, k = SHAPE
    a = operand(m, k, dtype, False, device)
    b = operand(k, n, dtype, True, device)
    out, plan = run_gemm(config("streamk", grid=grid), a, b, h200)
    assert plan.counters == TILES % grid
    check_gemm(out, a, b, what=f"streamk grid {grid}")
    assert _counters_zero(device)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("split", [2, 3, 4])
def test_splitk_splits(split, device, h200):
    m, n, k = SHAPE
    a = operand(m, k, torch.float16, True, device)
    b = operand(k, n, torch.float16, False, device)
    out, plan = run_gemm(config("splitk", split_k=split), a, b, h200)
    assert plan.grid == (TILES * split,) and plan.counters == TILES and plan.workspace_tiles == TILES * split
    check_gemm(out, a, b, what=f"splitk {split}")
    assert _counters_zero(device)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("cfg_kw", [dict(kind="streamk", grid=7), dict(kind="streamk", grid=4),
                                    dict(kind="splitk", split_k=3)], ids=["sk7", "sk4", "split3"])
def test_bitwise_deterministic(cfg_kw, device, h200):
    m, n, k = SHAPE
    a = operand(m, k, torch.float32, False, device)
    b = operand(k, n, torch.float32, False, device)
    kw = dict(cfg_kw)
    cfg = config(kw.pop("kind"), **kw)
    first, _ = run_gemm(cfg, a, b, h200)
    for _ in range(4):
        again, _ = run_gemm(cfg, a, b, h200)
        assert torch.equal(again.view(torch.int32), first.view(torch.int32))


@pytest.mark.timeout(120)
def test_streamk_matches_dp_order_free(device, h200):
    """Stream-K and split-K results stay within the bound of DP's for a longer K (many partials)."""
    a = operand(40, 200, torch.float16, False, device)
    b = operand(200, 40, torch.float16, False, device)
    for cfg in (config("streamk", grid=3), config("streamk", grid=13), config("splitk", split_k=5)):
        out, _ = run_gemm(cfg, a, b, h200)
        check_gemm(out, a, b, what=cfg.short())


@pytest.mark.timeout(120)
@pytest.mark.parametrize("cfg_kw", [dict(kind="streamk", grid=7), dict(kind="streamk", grid=4),
                                    dict(kind="splitk", split_k=3)], ids=["sk7", "sk4", "split3"])
def test_tma_bitwise_deterministic(cfg_kw, device, h200):
    """The TMA Stream-K / split-K kernels: 5 runs, bitwise equal; counters re-armed."""
    m, n, k = 70, 48, 100  # fp32 rows of 400 / 192 bytes: TMA-legal; 6 tiles of 4 K-iterations
    a = operand(m, k, torch.float32, False, device)
    b = operand(k, n, torch.float32, False, device)
    kw = dict(cfg_kw)
    cfg = config(kw.pop("kind"), **kw)
    first, plan = run_gemm(cfg, a, b, h200, tma=True)
    assert plan.tma and plan.kernel_name.endswith("_tma_kernel")
    check_gemm(first, a, b, what=f"tma {cfg.short()}")
    for _ in range(4):
        again, _ = run_gemm(cfg, a, b, h200, tma=True)
        assert torch.equal(again.view(torch.int32), first.view(torch.int32))
    assert _counters_zero(device)


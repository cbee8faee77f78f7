"""The CPU-feasible cases of test_gpu_kernels.py, at interpreter sizes (they run in CI; their GPU
twins run at full size on the H200): storage offsets 1–7, a row stride of 511 elements (2-byte
aligned), 64-wide blocks on ragged dims, and the split-K GEMV. Same comparator (§4.2), NaN-filled
outputs with guard bands where an ``out`` view is used."""

from __future__ import annotations

import pytest
import torch

from _check import check_gemm, config, operand, run_gemm

# CPU twins of test_gpu_kernels.py's cases (which run them at full size on the GPU)
pytestmark = pytest.mark.skipif(torch.cuda.is_available(),
                                reason="CPU twins: on a GPU, tests/kernels/test_gpu_kernels.py runs these cases")


def _cfg(kind: str, b: int = 32):
    if kind == "dp":
        return config("dp", b, b, 32, group_m=2)
    if kind == "persistent":
        return config("persistent", b, b, 32, grid=3, group_m=2)
    if kind == "streamk":
        return config("streamk", b, b, 32, grid=3, group_m=2)
    if kind == "splitk":
        return config("splitk", 16, b, 32, split_k=3)
    raise ValueError(kind)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("kind", ["dp", "streamk"])
def test_storage_offsets_1_to_7(kind, h200):
    n = 40  # ragged against 32-blocks
    g = torch.Generator().manual_seed(1)
    for offset in range(1, 8):
        def at(rows, cols, guard=0):
            return torch.randn(rows * cols + offset + guard, generator=g).bfloat16()[offset:]

        a = at(n, n)[: n * n].view(n, n)
        b = at(n, n)[: n * n].view(n, n)
        store = at(n, n, guard=16).fill_(float("nan"))
        out = store[: n * n].view(n, n)
        run_gemm(_cfg(kind), a, b, h200, out=out)
        check_gemm(out, a, b, what=f"{kind} offset {offset}")
        assert store[n * n:].isnan().all(), f"{kind} offset {offset}: wrote past the output"


@pytest.mark.timeout(300)
@pytest.mark.parametrize("kind", ["dp", "streamk"])
def test_row_stride_511(kind, h200):
    """A row stride of 511 elements (2-byte aligned: no TMA, no 16-byte vectors) on A, B and out."""
    from tritonblas.plan import resolve_kernel_name

    ld = 511
    m, k = 20, ld
    a = operand(m, k, torch.bfloat16)                                    # row stride = 511
    b = torch.randn(k, ld).bfloat16()[:, :100]                           # row stride 511, N = 100
    full = torch.full((m, ld), float("nan")).bfloat16()
    out = full[:, :100]
    _, plan = run_gemm(_cfg(kind), a, b, h200, out=out, tma=True)
    assert "tma" not in resolve_kernel_name(plan, a, b)
    check_gemm(out, a, b, what=f"{kind} ld {ld}")
    assert full[:, 100:].isnan().all(), "wrote into the padding of the rows"


@pytest.mark.timeout(300)
@pytest.mark.parametrize("kind", ["dp", "streamk"])
def test_64_wide_blocks_on_ragged_dims(kind, h200):
    for m, n, k in [(1, 127, 129), (129, 1, 257), (65, 191, 63), (191, 65, 1), (63, 129, 193)]:
        a = operand(m, k, torch.bfloat16)
        b = operand(k, n, torch.bfloat16, True)
        out, _ = run_gemm(_cfg(kind, 64), a, b, h200)
        check_gemm(out, a, b, what=f"{kind} {m}x{n}x{k}")


@pytest.mark.timeout(300)
def test_splitk_gemv(h200):
    a = operand(1, 1024, torch.bfloat16)
    b = operand(1024, 256, torch.bfloat16)
    out, plan = run_gemm(config("splitk", 16, 64, 128, split_k=4, num_warps=4, num_stages=4), a, b, h200, tma=True)
    assert plan.grid == (4 * 4,)
    check_gemm(out, a, b, what="splitk gemv")

"""Every kernel kind × dtype × the four transpose combinations × ragged shapes, against float64.

Blocks are 32×32×32 and dims ≤ ~100 so the interpreter (≈2.5 ms per program × K-iteration) stays
fast. Shapes hit: dims of 1, B−1, B+1, primes, K < BLOCK_K, K with and without a tail. Every output
starts as NaN, so a tile the kernel forgets to write fails the comparator.
"""

from __future__ import annotations

import itertools

import pytest
import torch

from _check import check_gemm, config, operand, run_gemm

KINDS = {
    "dp": dict(),
    "persistent": dict(grid=3),
    "streamk": dict(grid=3),
    "splitk": dict(split_k=2),
}
# (M, N, K): B+1 / B−1 / K tail; M = 1 and K < BLOCK_K; N = 1 and prime M; exact blocks with prime K.
SHAPES = [(33, 31, 70), (1, 47, 17), (37, 1, 96), (64, 64, 67)]
TRANSPOSES = list(itertools.product((False, True), repeat=2))


def _cases(dtypes, shapes, transposes):
    for kind, dtype, (ta, tb), shape in itertools.product(KINDS, dtypes, transposes, shapes):
        if kind == "splitk" and shape[2] <= 32:
            continue  # split-K needs >= 2 K-iterations (origami.space.check_problem)
        case = f"{kind}-{str(dtype)[6:]}-{'T' if ta else 'N'}{'T' if tb else 'N'}-{'x'.join(map(str, shape))}"
        yield pytest.param(kind, dtype, ta, tb, shape, id=case)


def _run_case(kind, dtype, ta, tb, shape, device, hw, **kw):
    m, n, k = shape
    a = operand(m, k, dtype, ta, device)
    b = operand(k, n, dtype, tb, device)
    out, plan = run_gemm(config(kind, **KINDS[kind]), a, b, hw, **kw)
    check_gemm(out, a, b, what=f"{kind} {dtype} {'T' if ta else 'N'}{'T' if tb else 'N'} {shape}")
    return plan


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind, dtype, ta, tb, shape", list(_cases((torch.float32, torch.float16), SHAPES, TRANSPOSES)))
def test_kernel_matrix(kind, dtype, ta, tb, shape, device, h200):
    _run_case(kind, dtype, ta, tb, shape, device, h200)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind, dtype, ta, tb, shape",
                         list(_cases((torch.bfloat16, torch.float8_e4m3fn), [(33, 31, 70)], TRANSPOSES[::3])))
def test_kernel_bf16_fp8(kind, dtype, ta, tb, shape, device, h200):
    """bf16 (through the interpreter's bf16-dot shim) and fp8 e4m3 (exact fp16 products there)."""
    _run_case(kind, dtype, ta, tb, shape, device, h200)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", ["dp", "persistent"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
@pytest.mark.parametrize("ta, tb", TRANSPOSES)
def test_tma_kernel(kind, dtype, ta, tb, device, h200):
    """TMA descriptors on 16-byte-aligned operands; ragged in M, N and K (zero-filled by the unit)."""
    from tritonblas.plan import resolve_kernel_name

    m, n, k = 40, 24, 72
    a = operand(m, k, dtype, ta, device)
    b = operand(k, n, dtype, tb, device)
    out, plan = run_gemm(config(kind, **KINDS[kind]), a, b, h200, tma=True)
    assert plan.kernel_name == "gemm_tma_kernel" and resolve_kernel_name(plan, a, b) == "gemm_tma_kernel"
    check_gemm(out, a, b, what=f"tma {kind}")


@pytest.mark.timeout(60)
def test_tma_falls_back_on_unaligned_operands(device, h200):
    """K = 33 fp16 rows are 66 bytes: no descriptor may be built; the pointer kernel runs instead."""
    from tritonblas.plan import make_plan, problem_from_tensors, resolve_kernel_name

    a = operand(40, 33, torch.float16, False, device)
    b = operand(33, 24, torch.float16, False, device)
    out, plan = run_gemm(config("dp"), a, b, h200, tma=True)
    assert plan.kernel_name == "gemm_kernel" and not plan.tma  # the problem says align_bytes = 2
    check_gemm(out, a, b, what="tma fallback")
    # a plan made for aligned tensors, launched with unaligned ones, falls back at launch time
    a16 = operand(40, 32, torch.float16, False, device)
    b16 = operand(32, 24, torch.float16, False, device)
    aligned = make_plan(config("persistent", grid=3), problem_from_tensors(a16, b16, out), h200, tma=True)
    assert aligned.kernel_name == "gemm_tma_kernel"
    base = torch.randn(40 * 32 + 1, device=device).half()
    a_off = base[1:].view(40, 32)  # storage offset 1 element: base not 16-byte aligned
    assert resolve_kernel_name(aligned, a_off, b16) == "gemm_persistent_kernel"
    out = torch.full((40, 24), float("nan"), dtype=torch.float16, device=device)
    from tritonblas.plan import launch

    launch(aligned, a_off, b16, out)
    check_gemm(out, a_off, b16, what="tma plan, unaligned tensors")


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", list(KINDS))
def test_chiplet_remap_in_kernels(kind, device, mi300x):
    """AMD profile: NUM_CHIPLETS = 8 with a chunk of 2 permutes the programs; results unchanged."""
    grid = {"persistent": 5, "streamk": 7}.get(kind, 0)
    split = 3 if kind == "splitk" else 1
    cfg = config(kind, grid=grid, split_k=split, amd=True, num_chiplets=mi300x.chiplets, chunk=2)
    a = operand(100, 70, torch.float16, False, device)
    b = operand(70, 90, torch.float16, True, device)
    out, plan = run_gemm(cfg, a, b, mi300x)
    assert plan.constexprs["NUM_CHIPLETS"] == mi300x.chiplets
    check_gemm(out, a, b, what=f"{kind} remap")

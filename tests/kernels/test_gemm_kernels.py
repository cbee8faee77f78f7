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


TMA_NAMES = {"dp": "gemm_tma_kernel", "persistent": "gemm_tma_kernel", "streamk": "gemm_streamk_tma_kernel",
             "splitk": "gemm_splitk_tma_kernel"}
POINTER_NAMES = {"dp": "gemm_kernel", "persistent": "gemm_persistent_kernel", "streamk": "gemm_streamk_kernel",
                 "splitk": "gemm_splitk_kernel"}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
@pytest.mark.parametrize("ta, tb", TRANSPOSES)
def test_tma_kernel(kind, dtype, ta, tb, device, h200):
    """TMA descriptors on 16-byte-aligned operands; ragged in M, N and K (zero-filled by the unit).
    Stream-K grid 3 over 2 tiles × 3 K-iterations splits both tiles (the fix-up path)."""
    from tritonblas.plan import resolve_kernel_name

    m, n, k = 40, 24, 72
    a = operand(m, k, dtype, ta, device)
    b = operand(k, n, dtype, tb, device)
    out, plan = run_gemm(config(kind, **KINDS[kind]), a, b, h200, tma=True)
    assert plan.tma and plan.kernel_name == TMA_NAMES[kind] == resolve_kernel_name(plan, a, b)
    assert plan.pointer_kernel_name == POINTER_NAMES[kind]
    check_gemm(out, a, b, what=f"tma {kind}")


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", ["dp", "persistent"])
@pytest.mark.parametrize("dtype, out_dtype", [(torch.float16, None), (torch.float32, None),
                                              (torch.bfloat16, torch.float32)])
@pytest.mark.parametrize("ta, tb", TRANSPOSES[::3])
def test_tma_flat_kernel(kind, dtype, out_dtype, ta, tb, device, h200):
    """make_plan(..., flat=True): the flattened kernel with its TMA-store epilogue (ragged edges
    clipped by the unit), plain and with the full epilogue."""
    from tritonblas.plan import make_plan, prepare_launch, problem_from_tensors

    m, n, k = 40, 72, 72
    a = operand(m, k, dtype, ta, device)
    b = operand(k, n, dtype, tb, device)
    out, plan = run_gemm(config(kind, **KINDS[kind]), a, b, h200, tma=True, out_dtype=out_dtype)
    assert plan.kernel_name == TMA_NAMES[kind]  # flat is opt-in
    flat = make_plan(plan.config, plan.problem, h200, tma=True, flat=True)
    assert flat.kernel_name == "gemm_tma_flat_kernel" and flat.pointer_kernel_name == POINTER_NAMES[kind]
    ep = dict(c=operand(m, n, torch.float32, False, device), beta=0.5, bias=operand(1, n, torch.float32, False,
                                                                                   device).reshape(n),
              activation="relu", alpha=1.5)
    for kw in ({}, ep):
        out = torch.full((m, n), float("nan"), dtype=out_dtype or dtype, device=device)
        prepared = prepare_launch(flat, a, b, out, **kw)
        assert prepared.kwargs["OUT_TMA"] is True
        prepared.run()
        check_gemm(out, a, b, what=f"flat {kind} {kw.keys()}", **kw)


@pytest.mark.timeout(120)
def test_flat_kernel_stores_a_ragged_row_end_without_tma(device, h200):
    """An output whose rows end inside a 16-byte chunk (71 fp16 columns of an 80-column buffer:
    aligned base and stride) gets the masked pointer store, not the TMA store, which writes whole
    16-byte chunks past N on the H200 (origami.problem.tma_store_exact); the padding stays untouched."""
    from origami.problem import tma_store_exact
    from tritonblas.plan import make_plan, prepare_launch, problem_from_tensors

    assert not tma_store_exact(71, 2) and tma_store_exact(72, 2) and tma_store_exact(4, 4)
    a = operand(40, 64, torch.float16, False, device)
    b = torch.randn(64, 80, device=device).half()[:, :71]  # a TMA-aligned B of the same ragged N
    buf = torch.full((40, 80), float("nan"), dtype=torch.float16, device=device)
    out = buf[:, :71]
    plan = make_plan(config("dp"), problem_from_tensors(a, b, out), h200, tma=True, flat=True)
    prepared = prepare_launch(plan, a, b, out)
    assert plan.kernel_name == "gemm_tma_flat_kernel" and prepared.kwargs["OUT_TMA"] is False
    prepared.run()
    check_gemm(out, a, b, what="flat, ragged row end")
    assert torch.isnan(buf[:, 71:]).all()


@pytest.mark.timeout(120)
def test_tma_flat_kernel_batched_and_pointer_store(device, h200):
    """Batched descriptors (A broadcast) through the flat kernel; a transposed output (no TMA store)
    takes the masked pointer store; an unaligned operand falls back to the pointer kernel."""
    from tritonblas.plan import make_plan, prepare_launch, problem_from_tensors, resolve_kernel_name

    a = operand(40, 64, torch.float16, False, device)
    b = operand(64, 48, torch.float16, False, device, batch=3)
    out = torch.full((3, 40, 48), float("nan"), dtype=torch.float16, device=device)
    plan = make_plan(config("persistent", grid=2), problem_from_tensors(a, b, out), h200, tma=True, flat=True)
    prepared = prepare_launch(plan, a, b, out)
    assert prepared.kwargs["OUT_TMA"] and prepared.kwargs["TMA_BATCHED"]
    prepared.run()
    check_gemm(out, a, b, what="flat batched")
    out_t = torch.full((48, 40), float("nan"), dtype=torch.float16, device=device).T
    plan = make_plan(config("dp"), problem_from_tensors(a, b[0], out_t), h200, tma=True, flat=True)
    prepared = prepare_launch(plan, a, b[0], out_t)
    assert plan.kernel_name == "gemm_tma_flat_kernel" and prepared.kwargs["OUT_TMA"] is False
    prepared.run()
    check_gemm(out_t, a, b[0], what="flat, transposed out")
    base = torch.randn(40 * 64 + 1, device=device).half()
    a_off = base[1:].view(40, 64)
    assert resolve_kernel_name(plan, a_off, b[0]) == "gemm_kernel"
    out = torch.full((40, 48), float("nan"), dtype=torch.float16, device=device)
    prepare_launch(plan, a_off, b[0], out).run()
    check_gemm(out, a_off, b[0], what="flat plan, unaligned a")


def test_tma_flat_needs_shared_memory(h200):
    """The flat kernel's staging must fit next to the pipeline: otherwise the plan keeps gemm_tma_kernel."""
    from origami import GemmProblem
    from tritonblas.plan import make_plan

    p = GemmProblem(4096, 4096, 4096, a_dtype="bf16", b_dtype="bf16", c_dtype="bf16")
    assert make_plan(config("dp", 128, 256, 64, num_warps=8, num_stages=3), p, h200, tma=True,
                     flat=True).kernel_name == "gemm_tma_flat_kernel"
    assert make_plan(config("dp", 128, 256, 64, num_warps=8, num_stages=4), p, h200, tma=True,
                     flat=True).kernel_name == "gemm_tma_kernel"
    assert make_plan(config("streamk", 128, 256, 64, grid=132, num_warps=8, num_stages=3), p, h200, tma=True,
                     flat=True).kernel_name == "gemm_streamk_tma_kernel"


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", ["streamk", "splitk"])
def test_tma_streamk_splitk_fall_back(kind, device, h200):
    """Unaligned problems get the pointer kernel at plan time; a TMA plan launched with an unaligned
    operand falls back at launch time. Both correct."""
    from tritonblas.plan import launch, make_plan, problem_from_tensors, resolve_kernel_name

    a = operand(40, 70, torch.float16, False, device)  # rows of 140 bytes
    b = operand(70, 24, torch.float16, False, device)
    out, plan = run_gemm(config(kind, **KINDS[kind]), a, b, h200, tma=True)
    assert plan.kernel_name == POINTER_NAMES[kind] and not plan.tma
    check_gemm(out, a, b, what=f"{kind} unaligned")
    a16 = operand(40, 72, torch.float16, False, device)
    b16 = operand(72, 24, torch.float16, False, device)
    out = torch.full((40, 24), float("nan"), dtype=torch.float16, device=device)
    aligned = make_plan(config(kind, **KINDS[kind]), problem_from_tensors(a16, b16, out), h200, tma=True)
    assert aligned.kernel_name == TMA_NAMES[kind]
    b_off = torch.randn(72 * 24 + 1, device=device).half()[1:].view(72, 24)
    assert resolve_kernel_name(aligned, a16, b_off) == POINTER_NAMES[kind]
    launch(aligned, a16, b_off, out)
    check_gemm(out, a16, b_off, what=f"{kind} TMA plan, unaligned b")


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

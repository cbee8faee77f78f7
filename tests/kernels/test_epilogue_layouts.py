"""Epilogue (alpha, beta·C, bias, relu/gelu, fp8 scales), memory layouts (guard bands, padded and
general strides, storage offsets, stride 0, transposed output), batching with broadcast, and the
empty / K = 0 cases — on every kernel kind."""

from __future__ import annotations

import pytest
import torch

from _check import check_gemm, config, operand, run_gemm

KINDS = {
    "dp": dict(),
    "persistent": dict(grid=3),
    "streamk": dict(grid=5),
    "splitk": dict(split_k=2),
}
M, N, K = 33, 47, 70

EPILOGUES = {
    "alpha-beta-c32": lambda out, dev: dict(alpha=0.5, beta=-1.5, c=torch.randn(M, N, device=dev)),
    "c-aliases-out": None,  # built in the test: c is out itself
    "bias-relu": lambda out, dev: dict(bias=torch.randn(N, device=dev).half(), activation="relu"),
    "bias-gelu": lambda out, dev: dict(bias=torch.randn(1, N, device=dev), activation="gelu", alpha=2.0),
    "all": lambda out, dev: dict(alpha=-0.75, beta=0.25, c=torch.randn(1, N, device=dev).bfloat16(),
                                 bias=torch.randn(N, device=dev), activation="gelu"),
}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("epi", list(EPILOGUES))
@pytest.mark.parametrize("kind", list(KINDS))
def test_epilogue(kind, epi, device, h200):
    a = operand(M, K, torch.float16, False, device)
    b = operand(K, N, torch.float16, True, device)
    cfg = config(kind, **KINDS[kind])
    if epi == "c-aliases-out":
        out = torch.randn(M, N, device=device).half()
        c = out.clone()
        run_gemm(cfg, a, b, h200, out=out, c=out, beta=2.0, alpha=1.0)
        check_gemm(out, a, b, c=c, beta=2.0, what=f"{kind} c aliases out")
        return
    kw = EPILOGUES[epi](None, device)
    out, _ = run_gemm(cfg, a, b, h200, **kw)
    check_gemm(out, a, b, what=f"{kind} {epi}", **kw)


@pytest.mark.timeout(60)
def test_beta_zero_ignores_nan_in_c(device, h200):
    a = operand(M, K, torch.float32, False, device)
    b = operand(K, N, torch.float32, False, device)
    c = torch.full((M, N), float("nan"), device=device)
    out, _ = run_gemm(config("dp"), a, b, h200, c=c, beta=0.0)
    check_gemm(out, a, b, what="beta 0")


@pytest.mark.timeout(60)
@pytest.mark.filterwarnings("ignore:invalid value encountered in matmul:RuntimeWarning")  # inf·0 in numpy
def test_nan_and_inf_propagate(device, h200):
    a = operand(M, K, torch.float32, False, device)
    b = operand(K, N, torch.float32, False, device)
    a[3, 5] = float("nan")
    b[7, 11] = float("inf")
    for kind in ("dp", "streamk"):
        out, _ = run_gemm(config(kind, **KINDS[kind]), a, b, h200)
        check_gemm(out, a, b, what=f"{kind} nan/inf")


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("scales", ["tensor", "row-col", "row-only", "e5m2-x-e4m3"])
def test_fp8_scales(kind, scales, device, h200):
    a_dtype = torch.float8_e5m2 if scales == "e5m2-x-e4m3" else torch.float8_e4m3fn
    a = operand(M, K, a_dtype, False, device, scale=2.0)
    b = operand(K, N, torch.float8_e4m3fn, True, device)
    kw = {
        "tensor": lambda: dict(scale_a=torch.tensor(0.37, device=device), scale_b=torch.tensor([1.9], device=device)),
        "row-col": lambda: dict(scale_a=torch.rand(M, 1, device=device) + 0.5,
                                scale_b=torch.rand(N, device=device) + 0.5),
        "row-only": lambda: dict(scale_a=torch.rand(M, device=device) + 0.5),
        "e5m2-x-e4m3": lambda: dict(scale_a=torch.tensor(0.5, device=device), scale_b=torch.rand(1, N, device=device)),
    }[scales]()
    for out_dtype in (torch.float32, torch.bfloat16):
        out, _ = run_gemm(config(kind, **KINDS[kind]), a, b, h200, out_dtype=out_dtype, **kw)
        check_gemm(out, a, b, what=f"fp8 {kind} {scales}", **kw)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", list(KINDS))
def test_guard_bands_and_padded_output(kind, device, h200):
    """out is a strided view inside a larger buffer (padded row stride, column offset): every byte
    outside the view is unchanged and every element inside is written."""
    a = operand(M, K, torch.float16, False, device)
    b = operand(K, N, torch.float16, False, device)
    buf = torch.randn(M + 5, N + 9, device=device).half()
    buf[2:2 + M, 3:3 + N] = float("nan")
    before = buf.clone()
    out = buf[2:2 + M, 3:3 + N]
    run_gemm(config(kind, **KINDS[kind]), a, b, h200, out=out)
    check_gemm(out, a, b, what=f"{kind} padded out")
    outside = torch.ones_like(buf, dtype=torch.bool)
    outside[2:2 + M, 3:3 + N] = False
    assert torch.equal(buf.view(torch.int16)[outside], before.view(torch.int16)[outside])


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("offset", [1, 3])
def test_storage_offsets(kind, offset, device, h200):
    """Operands and output start 1 or 3 elements into their storage (2- or 6-byte aligned)."""
    def at_offset(rows, cols, dtype):
        base = torch.randn(rows * cols + offset, device=device).to(dtype)
        return base[offset:].view(rows, cols)
    a = at_offset(M, K, torch.float16)
    b = at_offset(K, N, torch.float16)
    out = at_offset(M, N, torch.float16).fill_(float("nan"))
    run_gemm(config(kind, **KINDS[kind]), a, b, h200, out=out)
    check_gemm(out, a, b, what=f"{kind} offset {offset}")


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", list(KINDS))
def test_general_strides_and_stride_zero(kind, device, h200):
    """Neither stride unit (every other column), an expanded (stride-0 rows) operand, and a
    column-major output."""
    wide = operand(M, 2 * K, torch.float32, False, device)
    a = wide[:, ::2]
    b = torch.randn(1, N, device=device).expand(K, N)
    out = torch.full((N, M), float("nan"), device=device).t()
    run_gemm(config(kind, **KINDS[kind]), a, b, h200, out=out)
    check_gemm(out, a, b, what=f"{kind} general strides")
    out2 = torch.full((M, 2 * N), float("nan"), device=device)[:, ::2]
    run_gemm(config(kind, **KINDS[kind]), a, b, h200, out=out2)
    check_gemm(out2, a, b, what=f"{kind} strided out")


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", list(KINDS))
def test_batched_with_broadcast(kind, device, h200):
    batch = 3
    a = operand(M, K, torch.float16, False, device, batch=batch)
    b = operand(K, N, torch.float16, True, device)  # 2-D: broadcast over the batch (stride 0)
    c = torch.randn(N, device=device)
    out, _ = run_gemm(config(kind, **KINDS[kind]), a, b, h200, c=c, beta=0.5)
    check_gemm(out, a, b, c=c, beta=0.5, what=f"{kind} batched, B broadcast")
    a1 = operand(M, K, torch.float16, True, device, batch=1)  # size-1 batch dim: broadcast too
    b3 = operand(K, N, torch.float16, False, device, batch=batch)
    out, _ = run_gemm(config(kind, **KINDS[kind]), a1, b3, h200)
    check_gemm(out, a1, b3, what=f"{kind} batched, A broadcast")


@pytest.mark.timeout(120)
def test_many_batches_fold_into_grid_axis0(device, h200):
    a = operand(5, 6, torch.float32, False, device, batch=70)
    b = operand(6, 3, torch.float32, False, device, batch=70)
    out, plan = run_gemm(config("dp"), a, b, h200)
    assert plan.grid == (70,)
    check_gemm(out, a, b, what="70 batches")


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", ["dp", "persistent"])
def test_tma_batched(kind, device, h200):
    """3-D descriptors, one operand broadcast (its batch-index multiplier is 0)."""
    from tritonblas.plan import resolve_kernel_name

    a = operand(40, 32, torch.float16, False, device, batch=3)
    b = operand(32, 24, torch.float16, True, device)
    out, plan = run_gemm(config(kind, **KINDS[kind]), a, b, h200, tma=True)
    assert resolve_kernel_name(plan, a, b) == "gemm_tma_kernel"
    check_gemm(out, a, b, what=f"tma batched {kind}")


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", ["dp", "persistent", "streamk"])
def test_k_zero_gives_beta_c_plus_bias(kind, device, h200):
    a = torch.empty(M, 0, device=device).half()
    b = torch.empty(0, N, device=device).half()
    c = torch.randn(M, N, device=device)
    bias = torch.randn(N, device=device)
    out, _ = run_gemm(config(kind, **KINDS[kind]), a, b, h200, c=c, beta=0.5, bias=bias)
    torch.testing.assert_close(out.float(), (0.5 * c + bias).half().float(), rtol=0, atol=0)


@pytest.mark.timeout(60)
def test_empty_output_launches_nothing(device, h200):
    a = operand(0, K, torch.float16, False, device)
    b = operand(K, N, torch.float16, False, device)
    out, _ = run_gemm(config("dp"), a, b, h200)
    assert out.shape == (0, N)

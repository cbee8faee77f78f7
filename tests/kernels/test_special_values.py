"""Special values through the epilogue and the kernels (RELIABILITY.md §4.2 "Special values"):

- activations at magnitudes where their fp32 evaluation can overflow, against the float64 reference
  (torch's tanh-GELU), NaN/Inf pattern and sign exactly (§4.2's bound scales with |pre-activation|,
  so it cannot see −5414 for GELU(−3e38) = −0: the test uses an absolute tolerance);
- fp8 outputs rounded, saturated (e4m3fn) or overflowed to inf (e5m2) bit for bit as torch's
  conversion does, on the pointer and TMA-store epilogues;
- fp8 and bf16 C / bias values (NaN, inf, subnormals) widened exactly into the fp32 epilogue.
"""

from __future__ import annotations

import pytest
import torch

from _check import config, run_gemm

INF = float("inf")
# pre-activation values: x³ overflows fp32 for |x| > 7e12; -inf must give NaN (torch: -inf·0)
LARGE = [-3e38, -1e38, -1e30, -1e13, -1e4, -10.0, -5.0, -1.0, 0.0, 1.0, 10.0, 1e4, 1e30, 3e38, -INF, INF,
         float("nan")]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", ["dp", "splitk"])
def test_gelu_large_magnitudes_match_torch(kind, device, h200):
    """The pre-activation comes from the bias (A·B = 0): torch's tanh-GELU of fp32 −3e38 is −0 and
    of −inf NaN; the old clamped sigmoid returned −5414 and −inf."""
    n = len(LARGE)
    a = torch.zeros(4, 32, device=device)
    b = torch.zeros(32, n, device=device)
    bias = torch.tensor(LARGE, device=device)
    kw = dict(split_k=2) if kind == "splitk" else {}
    out, _ = run_gemm(config(kind, 16, 16, 16, **kw), a, b, h200, bias=bias, activation="gelu")
    want = torch.nn.functional.gelu(bias.cpu().double(), approximate="tanh").expand(4, n)
    got = out.cpu().double()
    assert torch.equal(torch.isnan(got), torch.isnan(want)), (got[0].tolist(), want[0].tolist())
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-30, equal_nan=True)
    finite = torch.isfinite(want)
    assert torch.equal(torch.signbit(got[finite]), torch.signbit(want[finite]))


# fp32 results around and past the fp8 ranges (e4m3fn max 448, e5m2 max 57344), ties, NaN and ±inf
FP8_EDGES = [0.0, 1.0, 1.9375, 300.0, 448.0, 464.0, 465.0, 480.0, 1000.0, 6e4, 57344.0, 61440.0, 1e6, INF, -INF,
             float("nan"), -1000.0, -465.0, 2.0 ** -10, 3 * 2.0 ** -17, 1e-9]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", ["dp", "streamk"])
@pytest.mark.parametrize("out_dtype", [torch.float8_e4m3fn, torch.float8_e5m2])
def test_fp8_output_rounds_like_torch(kind, out_dtype, device, h200):
    """An fp8 output (what ``tritonblas.matmul`` of two fp8 tensors returns) is the fp32 epilogue
    value rounded to nearest even by torch's conversion: e4m3fn saturates and keeps NaN, e5m2
    overflows to ±inf. (The interpreter's own converter gave 384 for NaN and 256 for inf or 1000 in
    e4m3fn, and 256 for 480 in e5m2.)"""
    n = len(FP8_EDGES)
    a = torch.ones(4, 16, device=device).to(out_dtype)
    b = torch.zeros(16, n, device=device).to(out_dtype)
    bias = torch.tensor(FP8_EDGES, device=device)
    kw = dict(grid=3) if kind == "streamk" else {}
    out, _ = run_gemm(config(kind, 16, 16, 32, **kw), a, b, h200, out_dtype=out_dtype, bias=bias)
    want = bias.cpu().to(out_dtype).expand(4, n)
    got = out.cpu()
    assert torch.equal(got.view(torch.uint8), want.contiguous().view(torch.uint8)), \
        (got[0].float().tolist(), want[0].float().tolist())


@pytest.mark.timeout(120)
@pytest.mark.skipif(torch.cuda.is_available(), reason="flips a kernel constexpr: interpreter only")
@pytest.mark.parametrize("nan_mode", [False, True])
def test_e4m3fn_overflow_follows_either_torch(nan_mode, monkeypatch, device, h200):
    """torch 2.11 turns an e4m3fn overflow (|x| > 464, ±inf) into NaN, 2.13+ saturates it to ±448
    (``_compat.e4m3fn_overflow_is_nan``); the epilogue's ``E4M3_OVERFLOW_NAN`` follows the
    installed one. Both modes, whichever torch runs here: the NaN mode's expectation is torch's
    conversion with the overflowing lanes set to 0x7F / 0xFF (with 2.13+'s saturating conversion the
    two modes differ in those 11 lanes)."""
    from tritonblas.kernels import _epilogue
    import triton.language as tl

    monkeypatch.setattr(_epilogue, "E4M3_OVERFLOW_NAN", tl.constexpr(nan_mode))
    e4 = torch.float8_e4m3fn
    n = len(FP8_EDGES)
    a = torch.ones(4, 16, device=device).to(e4)
    b = torch.zeros(16, n, device=device).to(e4)
    bias = torch.tensor(FP8_EDGES, device=device)
    out, _ = run_gemm(config("dp", 16, 16, 32), a, b, h200, out_dtype=e4, bias=bias)
    # without the NaN mode the lanes keep the plain cast: the interpreter's is torch's own conversion
    # (saturating on 2.13+, NaN on 2.11); with it the overflowing lanes are NaN whatever the cast gave
    want = bias.cpu().to(e4).view(torch.uint8).clone()
    over = bias.cpu().abs() > 464.0
    assert int(over.sum()) == 11  # 465 ... 1e6, ±inf, -1000, -465
    if nan_mode:
        want[over] = torch.where(bias.cpu()[over] < 0, 0xFF, 0x7F).to(torch.uint8)
    got = out.cpu().view(torch.uint8)
    assert torch.equal(got, want.expand(4, n)), (got[0].tolist(), want.tolist())


@pytest.mark.timeout(120)
@pytest.mark.parametrize("fp8", [torch.float8_e4m3fn, torch.float8_e5m2])
@pytest.mark.parametrize("where", ["c", "bias"])
def test_fp8_c_and_bias_keep_special_values(fp8, where, device, h200):
    """An fp8 C or bias is widened in the epilogue (``.to(tl.float32)``): NaN and inf must stay NaN
    and inf (the interpreter's fp8 converter read an e4m3fn NaN as 480, an e5m2 NaN as 114688 and
    inf as 65536)."""
    vals = [1.0, float("nan"), 448.0, -2.0, 0.001, -0.0]
    if fp8 == torch.float8_e5m2:
        vals += [INF, -INF, 57344.0]
    n = len(vals)
    v = torch.tensor(vals, device=device).to(fp8)
    a = torch.zeros(2, 16, device=device).to(fp8)
    b = torch.zeros(16, n, device=device).to(fp8)
    kw = dict(c=v.expand(2, n), beta=1.0) if where == "c" else dict(bias=v)
    out, _ = run_gemm(config("dp", 16, 16, 32), a, b, h200, out_dtype=torch.float32, **kw)
    want = v.float().cpu().expand(2, n)
    got = out.cpu()
    assert torch.equal(torch.isnan(got), torch.isnan(want)), (got[0].tolist(), want[0].tolist())
    assert torch.equal(got.nan_to_num(), (want + 0.0).nan_to_num()), (got[0].tolist(), want[0].tolist())


@pytest.mark.timeout(120)
@pytest.mark.parametrize("where", ["c", "bias"])
def test_bf16_subnormal_c_and_bias_are_exact(where, device, h200):
    """bf16 subnormals (and the smallest normals, NaN, inf, -0) in C or bias reach the fp32 epilogue
    unchanged: bf16 → fp32 is exact. (The interpreter's converter turned 0x0001 into 0 and 0x0003
    into 2⁻¹²⁷.)"""
    bits = [0x0001, 0x0002, 0x0003, 0x0040, 0x007F, 0x0080, 0x8001, 0x807F, 0x3F80, 0x7F7F, 0x7F80, 0xFF80,
            0x7FC0, 0x8000]
    n = len(bits)
    v = torch.tensor(bits, dtype=torch.int32).to(torch.int16).view(torch.bfloat16).to(device)
    a = torch.zeros(1, 16, dtype=torch.bfloat16, device=device)
    b = torch.zeros(16, n, dtype=torch.bfloat16, device=device)
    kw = dict(c=v.reshape(1, n), beta=1.0) if where == "c" else dict(bias=v)
    out, _ = run_gemm(config("dp", 16, 16, 16), a, b, h200, out_dtype=torch.float32, **kw)
    want = v.float().cpu().reshape(1, n) + 0.0
    got = out.cpu()
    assert torch.equal(torch.isnan(got), torch.isnan(want))
    assert torch.equal(got.nan_to_num(), want.nan_to_num()), (got[0].tolist(), want[0].tolist())


@pytest.mark.timeout(120)
@pytest.mark.parametrize("out_dtype", [torch.float8_e4m3fn, torch.float8_e5m2])
def test_fp8_output_of_the_flat_tma_kernel(out_dtype, device, h200):
    """The same rounding through ``gemm_tma_flat_kernel``'s TMA-store epilogue (32 columns: the
    output rows and the half tiles are 16-byte multiples)."""
    from tritonblas.plan import launch, make_plan, problem_from_tensors

    vals = (FP8_EDGES + [0.0] * 32)[:32]
    a = torch.ones(4, 16, device=device).to(out_dtype)
    b = torch.zeros(16, 32, device=device).to(out_dtype)
    out = torch.empty(4, 32, device=device, dtype=out_dtype)
    plan = make_plan(config("persistent", 16, 32, 32, grid=1), problem_from_tensors(a, b, out), h200, tma=True,
                     flat=True)
    assert plan.kernel_name == "gemm_tma_flat_kernel"
    launch(plan, a, b, out, bias=torch.tensor(vals, device=device))
    want = torch.tensor(vals).to(out_dtype).expand(4, 32).contiguous()
    assert torch.equal(out.cpu().view(torch.uint8), want.view(torch.uint8)), (out[0].float().tolist(),
                                                                              want[0].float().tolist())

"""The epilogue every kernel shares, and the fp32 partial-tile workspace of Stream-K / split-K.

``out = act(alpha · (scale_a ⊙ (A @ B) ⊙ scale_b) + beta · C + bias)``, computed in fp32 and cast to
the output's dtype at the store. ``C`` may alias ``out`` (each element is read, then written, by the
one program that owns the tile). With ``beta == 0`` the host sets HAS_C False, so NaN/Inf in C never
propagate.

Constexpr codes: SCALE_A / SCALE_B 0 = none, 1 = one scalar (per-tensor), 2 = a vector over M (A)
or N (B); ACTIVATION 0 = none, 1 = relu, 2 = gelu (tanh approximation).
"""

import triton
import triton.language as tl

from tritonblas._compat import e4m3fn_overflow_is_nan
from tritonblas.kernels._tiles import aligned, operand_offsets

__all__ = ["ACT_NONE", "ACT_RELU", "ACT_GELU", "gelu_tanh", "to_out", "epilogue", "epilogue_values",
           "store_partial", "load_partial"]

ACT_NONE, ACT_RELU, ACT_GELU = 0, 1, 2
# the installed torch's e4m3fn overflow: NaN (torch 2.11) or saturation to ±448 (2.13+); see to_out
E4M3_OVERFLOW_NAN = tl.constexpr(e4m3fn_overflow_is_nan())


@triton.jit
def gelu_tanh(x):
    """0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), written as x·sigmoid(u), u = 2·√(2/π)·(…) (no
    tanh needed). The sigmoid is the overflow-free form: e = exp(−|u|) ∈ [0, 1], sigmoid(u) =
    1/(1 + e) for u ≥ 0 and e/(1 + e) below, so large negative x (x³ = −inf included) gives
    x·0 = −0 and x = −inf gives NaN, as torch's (tests/kernels/test_special_values.py)."""
    u = 1.5957691216057308 * (x + 0.044715 * x * x * x)
    e = tl.exp(-tl.abs(u))
    return x * tl.where(u >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


@triton.jit
def to_out(x, DTYPE: tl.constexpr):
    """The fp32 epilogue value ``x`` cast to the output dtype with torch's semantics. sm_90 casts to
    fp8 with ``cvt.rn.satfinite`` (seen in the PTX), which saturates; torch does not:

    - e4m3fn has no inf. torch 2.13+ saturates what rounds past its largest finite value to ±448,
      as satfinite does; torch 2.11 turns it (|x| > 464, the midpoint above 448; ±inf too) into NaN,
      sign kept (0x7F / 0xFF): with that torch (:data:`E4M3_OVERFLOW_NAN`, asked of torch itself)
      those lanes get the NaN bits (seen on the H200 with 2.11, 2026-12-01: 465, 1000, inf gave 126
      against torch's 127);
    - e5m2 overflows to ±inf (|x| ≥ 61440, the midpoint above 57344, rounds up to 2¹⁶) where
      satfinite gives ±57344.

    Those lanes get torch's bits; NaN stays NaN."""
    y = x.to(DTYPE)
    if E4M3_OVERFLOW_NAN and DTYPE == tl.float8e4nv:
        over = tl.abs(x) > 464.0
        nan = tl.where(x < 0, 0xFF, 0x7F).to(tl.uint8)
        y = tl.where(over, nan, y.to(tl.uint8, bitcast=True)).to(tl.float8e4nv, bitcast=True)
    if DTYPE == tl.float8e5:
        over = tl.abs(x) >= 61440.0
        inf = tl.where(x < 0, 0xFC, 0x7C).to(tl.uint8)
        y = tl.where(over, inf, y.to(tl.uint8, bitcast=True)).to(tl.float8e5, bitcast=True)
    return y


@triton.jit
def _epilogue_block(acc, Out, C, Bias, ScaleA, ScaleB, bid, rm, rn, M, N,
                    stride_cb, stride_cm, stride_cn, stride_ob, stride_om, stride_on, stride_bias,
                    alpha, beta, OUT_ORDER: tl.constexpr, OUT_ALIGN: tl.constexpr, OUT_EDGE: tl.constexpr,
                    HAS_C: tl.constexpr, HAS_BIAS: tl.constexpr, SCALE_A: tl.constexpr, SCALE_B: tl.constexpr,
                    ACTIVATION: tl.constexpr, EDGE: tl.constexpr):
    if EDGE:
        if OUT_ORDER == 1:
            mask_m = rm < aligned(M, OUT_EDGE)
        else:
            mask_m = rm < M
        if OUT_ORDER == 0:
            mask_n = rn < aligned(N, OUT_EDGE)
        else:
            mask_n = rn < N
        mask = mask_m[:, None] & mask_n[None, :]
    if SCALE_A == 1:
        acc = acc * tl.load(ScaleA).to(tl.float32)
    elif SCALE_A == 2:
        if EDGE:
            sa = tl.load(ScaleA + rm, mask=mask_m, other=0.0)
        else:
            sa = tl.load(ScaleA + rm)
        acc = acc * sa.to(tl.float32)[:, None]
    if SCALE_B == 1:
        acc = acc * tl.load(ScaleB).to(tl.float32)
    elif SCALE_B == 2:
        if EDGE:
            sb = tl.load(ScaleB + rn, mask=mask_n, other=0.0)
        else:
            sb = tl.load(ScaleB + rn)
        acc = acc * sb.to(tl.float32)[None, :]
    acc = acc * alpha
    if HAS_C:
        c_ptrs = C + bid.to(tl.int64) * stride_cb + rm.to(tl.int64)[:, None] * stride_cm \
            + rn.to(tl.int64)[None, :] * stride_cn
        if EDGE:
            c = tl.load(c_ptrs, mask=mask, other=0.0)
        else:
            c = tl.load(c_ptrs)
        acc = acc + beta * c.to(tl.float32)
    if HAS_BIAS:
        if EDGE:
            bias = tl.load(Bias + rn.to(tl.int64) * stride_bias, mask=mask_n, other=0.0)
        else:
            bias = tl.load(Bias + rn.to(tl.int64) * stride_bias)
        acc = acc + bias.to(tl.float32)[None, :]
    if ACTIVATION == 1:
        acc = tl.maximum(acc, 0.0, propagate_nan=tl.PropagateNan.ALL)
    elif ACTIVATION == 2:
        acc = gelu_tanh(acc)
    o_ptrs = Out + bid.to(tl.int64) * aligned(stride_ob, OUT_ALIGN) \
        + operand_offsets(rm, rn, stride_om, stride_on, OUT_ORDER, OUT_ALIGN)
    if EDGE:
        tl.store(o_ptrs, to_out(acc, Out.dtype.element_ty), mask=mask)
    else:
        tl.store(o_ptrs, to_out(acc, Out.dtype.element_ty))


@triton.jit
def epilogue(acc, Out, C, Bias, ScaleA, ScaleB, bid, pid_m, pid_n, M, N,
             stride_cb, stride_cm, stride_cn, stride_ob, stride_om, stride_on, stride_bias,
             alpha, beta, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
             OUT_ORDER: tl.constexpr, OUT_ALIGN: tl.constexpr, OUT_EDGE: tl.constexpr,
             HAS_C: tl.constexpr, HAS_BIAS: tl.constexpr, SCALE_A: tl.constexpr, SCALE_B: tl.constexpr,
             ACTIVATION: tl.constexpr):
    """Apply the epilogue to one tile's accumulator and store it (unmasked for interior tiles)."""
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    if ((pid_m + 1) * BLOCK_M <= M) & ((pid_n + 1) * BLOCK_N <= N):
        _epilogue_block(acc, Out, C, Bias, ScaleA, ScaleB, bid, rm, rn, M, N,
                        stride_cb, stride_cm, stride_cn, stride_ob, stride_om, stride_on, stride_bias,
                        alpha, beta, OUT_ORDER, OUT_ALIGN, OUT_EDGE, HAS_C, HAS_BIAS, SCALE_A, SCALE_B, ACTIVATION,
                        False)
    else:
        _epilogue_block(acc, Out, C, Bias, ScaleA, ScaleB, bid, rm, rn, M, N,
                        stride_cb, stride_cm, stride_cn, stride_ob, stride_om, stride_on, stride_bias,
                        alpha, beta, OUT_ORDER, OUT_ALIGN, OUT_EDGE, HAS_C, HAS_BIAS, SCALE_A, SCALE_B, ACTIVATION,
                        True)


@triton.jit
def epilogue_values(acc, C, Bias, ScaleA, ScaleB, bid, pid_m, pid_n, M, N,
                    stride_cb, stride_cm, stride_cn, stride_bias, alpha, beta,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HAS_C: tl.constexpr, HAS_BIAS: tl.constexpr,
                    SCALE_A: tl.constexpr, SCALE_B: tl.constexpr, ACTIVATION: tl.constexpr):
    """The epilogue's fp32 values of one tile, not stored (for a TMA store, which clips the edges
    itself). Its own loads (C, bias, per-row/column scales) are always masked: they are off the
    plain GEMM's path, where all of them are compiled out."""
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask_m = rm < M
    mask_n = rn < N
    if SCALE_A == 1:
        acc = acc * tl.load(ScaleA).to(tl.float32)
    elif SCALE_A == 2:
        acc = acc * tl.load(ScaleA + rm, mask=mask_m, other=0.0).to(tl.float32)[:, None]
    if SCALE_B == 1:
        acc = acc * tl.load(ScaleB).to(tl.float32)
    elif SCALE_B == 2:
        acc = acc * tl.load(ScaleB + rn, mask=mask_n, other=0.0).to(tl.float32)[None, :]
    acc = acc * alpha
    if HAS_C:
        c_ptrs = C + bid.to(tl.int64) * stride_cb + rm.to(tl.int64)[:, None] * stride_cm \
            + rn.to(tl.int64)[None, :] * stride_cn
        c = tl.load(c_ptrs, mask=mask_m[:, None] & mask_n[None, :], other=0.0)
        acc = acc + beta * c.to(tl.float32)
    if HAS_BIAS:
        bias = tl.load(Bias + rn.to(tl.int64) * stride_bias, mask=mask_n, other=0.0)
        acc = acc + bias.to(tl.float32)[None, :]
    if ACTIVATION == 1:
        acc = tl.maximum(acc, 0.0, propagate_nan=tl.PropagateNan.ALL)
    elif ACTIVATION == 2:
        acc = gelu_tanh(acc)
    return acc


@triton.jit
def _partial_offsets(slot, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    local = tl.arange(0, BLOCK_M)[:, None] * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]
    return tl.cast(slot, tl.int64) * (BLOCK_M * BLOCK_N) + local


@triton.jit
def store_partial(Workspace, slot, acc, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """Write a whole fp32 accumulator tile to workspace slot ``slot``."""
    tl.store(Workspace + _partial_offsets(slot, BLOCK_M, BLOCK_N), acc)


@triton.jit
def load_partial(Workspace, slot, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """Read workspace slot ``slot`` through L2 (``.cg``: never a stale L1 line of another SM's write)."""
    return tl.load(Workspace + _partial_offsets(slot, BLOCK_M, BLOCK_N), cache_modifier=".cg")

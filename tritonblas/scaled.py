"""``tritonblas.scaled_mm``: an fp8 GEMM with ``torch._scaled_mm``'s semantics, on our kernels.

``scaled_mm(a, b, scale_a, scale_b, *, bias=None, out_dtype=None, use_fast_accum=False)`` returns
``(scale_a ⊙ (a @ b) ⊙ scale_b + bias)`` in ``out_dtype``, the product accumulated in fp32 (fp8 MMAs
promoted to fp32 every 128 K, or every K-step where a tile's BLOCK_K is smaller, unless
``use_fast_accum``: ``plan.fp8_promote_k``), the scales and bias applied in the kernel's
epilogue. Contract, checked in this order (the checks and messages of torch 2.13's
``_scaled_mm``; the exception types are torch's):

- ``a`` (M, K) and ``b`` (K, N) are 2-D (RuntimeError "mat1 must be a matrix"), fp8 e4m3fn or
  e5m2 each, or both of AMD gfx942's fnuz encodings (e4m3fnuz / e5m2fnuz; ScaledMMError: a RuntimeError and a
  ValueError), their inner dims agree (RuntimeError);
- scales are float32 and either both one element (tensor-wise) or ``scale_a`` (M, 1) and
  ``scale_b`` (1, N), contiguous (row-wise). torch's block-wise recipes (1x128, 128x128) are valid
  calls we do not run: NotImplementedError names them, so a caller can tell "not here" from
  "wrong"; anything else is ScaledMMError "Invalid scaling configuration";
- ``bias`` has N elements, in any shape (read as the vector of N; RuntimeError "Bias must be size N"),
  any float dtype;
- ``out_dtype`` is bf16, fp16 or fp32. torch's default, fp8 output (``out_dtype=None``, with
  ``scale_result``), is not supported here: :class:`NotImplementedError` naming ``out_dtype``.

Any strides are accepted (torch's CUDA kernel needs a row-major, b column-major, K and N multiples of
16; ours stage an operand that is not K-major, see :func:`tritonblas.plan.staging_for`). Through
``enable()``, a ``torch._scaled_mm`` call is routed only when torch's own CUDA kernel would accept it
and we support it (:func:`routable`); every other call runs torch's, so errors stay torch's.
The first call of an operand signature takes the dispatcher's checked path (plan cached per shape
and layout); later ones its warm entry, which binds this call's a, b, scales and bias.
"""

from __future__ import annotations

import os
from typing import Any

import torch
from origami.hardware import HardwareProfile

from tritonblas import dispatch

__all__ = ["scaled_mm", "route", "routable", "FP8_DTYPES", "FNUZ_DTYPES", "OUT_DTYPES", "ScaledMMError", "native_fnuz"]


class ScaledMMError(RuntimeError, ValueError):
    """An fp8 ``scaled_mm`` call torch rejects as an invalid scaling configuration or operand dtype.
    Both a RuntimeError and a ValueError: torch raises RuntimeError for these from its CUDA kernel
    (torch 2.11 on the H200, 2026-12-01: "Invalid scaling configuration. ... Got a.dtype()=BFloat16")
    and ValueError from its CPU checks in 2.13-2.15, so code catching either still catches ours."""

Tensor = torch.Tensor
# OCP e4m3fn/e5m2, and AMD gfx942's fnuz encodings (torch._scaled_mm's on MI300X/MI325X): one family per call
FNUZ_DTYPES = (torch.float8_e4m3fnuz, torch.float8_e5m2fnuz)
FP8_DTYPES = (torch.float8_e4m3fn, torch.float8_e5m2, *FNUZ_DTYPES)
_E4M3 = (torch.float8_e4m3fn, torch.float8_e4m3fnuz)
_E5M2 = (torch.float8_e5m2, torch.float8_e5m2fnuz)
OUT_DTYPES = (torch.bfloat16, torch.float16, torch.float32)


def _recipe(a: Tensor, b: Tensor, scale_a: Tensor, scale_b: Tensor) -> str:
    """"tensor", "row" or "block" (a torch block-wise recipe we do not run); ValueError otherwise."""
    m, k, n = a.shape[0], a.shape[1], b.shape[1]
    if scale_a.numel() == 1 and scale_b.numel() == 1:
        if scale_a.dtype != torch.float32 or scale_b.dtype != torch.float32:
            raise ScaledMMError("Invalid scaling configuration: for tensor-wise scaling, scale_a and scale_b must be "
                             f"float32, got {scale_a.dtype} and {scale_b.dtype}")
        return "tensor"
    if scale_a.dtype != torch.float32 or scale_b.dtype != torch.float32 or scale_a.dim() != 2 or scale_b.dim() != 2:
        raise ScaledMMError("Invalid scaling configuration: for row-wise scaling, scale_a and scale_b must be 2-D "
                         f"float32, got {scale_a.dtype} {tuple(scale_a.shape)} and {scale_b.dtype} "
                         f"{tuple(scale_b.shape)}")
    sa, sb = tuple(scale_a.shape), tuple(scale_b.shape)
    if sa == (m, 1) and sb == (1, n):
        if not (scale_a.is_contiguous() and scale_b.is_contiguous()):
            raise ScaledMMError("Invalid scaling configuration: row-wise scale_a and scale_b must be contiguous")
        return "row"
    kb, mb, nb = -(-k // 128), -(-m // 128), -(-n // 128)
    if (sa, sb) in (((m, kb), (kb, nb)), ((m, kb), (kb, n)), ((mb, kb), (kb, n))):
        return "block"
    raise ScaledMMError(f"Invalid scaling configuration: scale_a {sa} and scale_b {sb}; tensor-wise scales have "
                     f"one element each, row-wise ones are scale_a ({m}, 1) and scale_b (1, {n})")


def _check(a: Any, b: Any, scale_a: Any, scale_b: Any, bias: Any, out_dtype: Any) -> str:
    for name, t in (("a", a), ("b", b), ("scale_a", scale_a), ("scale_b", scale_b)):
        if not isinstance(t, Tensor):
            raise TypeError(f"scaled_mm(): argument '{name}' must be Tensor, not {type(t).__name__}")
    if bias is not None and not isinstance(bias, Tensor):
        raise TypeError(f"scaled_mm(): argument 'bias' must be Tensor, not {type(bias).__name__}")
    if a.dim() != 2:
        raise RuntimeError(f"mat1 must be a matrix (scaled_mm: a is {a.dim()}-D)")
    if b.dim() != 2:
        raise RuntimeError(f"mat2 must be a matrix (scaled_mm: b is {b.dim()}-D)")
    for name, t in (("a", a), ("b", b)):
        if t.dtype not in FP8_DTYPES:
            raise ScaledMMError(f"scaled_mm: {name} must be float8_e4m3fn or float8_e5m2 (or, for AMD gfx942, "
                                f"float8_e4m3fnuz or float8_e5m2fnuz), got {t.dtype}")
    if (a.dtype in FNUZ_DTYPES) != (b.dtype in FNUZ_DTYPES):
        raise ScaledMMError(f"scaled_mm: a and b must be fp8 of one encoding (OCP or fnuz), got {a.dtype} and "
                            f"{b.dtype}")
    if a.shape[1] != b.shape[0]:
        raise RuntimeError(f"mat_a and mat_b shapes cannot be multiplied ({a.shape[0]}x{a.shape[1]} and "
                           f"{b.shape[0]}x{b.shape[1]})")
    recipe = _recipe(a, b, scale_a, scale_b)
    if bias is not None and bias.numel() != b.shape[1]:
        raise RuntimeError(f"Bias must be size {b.shape[1]} but got {bias.numel()}")
    if bias is not None and not bias.is_floating_point():
        raise ValueError(f"scaled_mm: bias must be a floating-point tensor, got {bias.dtype}")
    devices = {t.device for t in (a, b, scale_a, scale_b, bias) if t is not None}
    if len(devices) > 1:
        raise RuntimeError(f"scaled_mm: expected all tensors on one device, got {sorted(map(str, devices))}")
    if recipe == "block":
        raise NotImplementedError("tritonblas.scaled_mm: block-wise scales (1x128 / 128x128 recipes) are not "
                                  "supported; torch._scaled_mm runs them")
    if out_dtype is None or out_dtype in FP8_DTYPES:
        raise NotImplementedError(f"tritonblas.scaled_mm: out_dtype={out_dtype} (fp8 output) is not supported; "
                                  "pass out_dtype=torch.bfloat16, torch.float16 or torch.float32")
    if out_dtype not in OUT_DTYPES:
        raise ValueError(f"scaled_mm: out_dtype must be torch.bfloat16, torch.float16 or torch.float32, "
                         f"got {out_dtype}")
    return recipe


def scaled_mm(a: Tensor, b: Tensor, scale_a: Tensor, scale_b: Tensor, *, bias: Tensor | None = None,
              out_dtype: torch.dtype | None = None, use_fast_accum: bool = False, profile: Any = None) -> Tensor:
    """``torch._scaled_mm(a, b, scale_a, scale_b, bias=bias, out_dtype=out_dtype,
    use_fast_accum=use_fast_accum)`` on tritonblas kernels (see the module docstring for the contract)."""
    recipe = _check(a, b, scale_a, scale_b, bias, out_dtype)
    if not isinstance(use_fast_accum, bool):
        raise TypeError(f"scaled_mm(): argument 'use_fast_accum' must be bool, not {type(use_fast_accum).__name__}")
    if profile is not None and not isinstance(profile, (str, os.PathLike, HardwareProfile)):  # as matmul's
        raise TypeError(f"profile: expected a profile name, a path or a HardwareProfile, got {type(profile).__name__}")
    reason = dispatch.placement_reason(a, b, scale_a, scale_b, bias)
    if reason is not None:
        raise RuntimeError(f"tritonblas.scaled_mm: our kernels cannot run this call: {reason}")
    return _run(recipe, a, b, scale_a, scale_b, bias, out_dtype, use_fast_accum, profile)


def _run(recipe: str, a, b, scale_a, scale_b, bias, out_dtype, use_fast_accum, profile) -> Tensor:
    out = torch.empty((a.shape[0], b.shape[1]), dtype=out_dtype, device=a.device)
    sa, sb = (scale_a.reshape(()), scale_b.reshape(())) if recipe == "tensor" else (scale_a, scale_b)
    if bias is not None and bias.dim() != 1:
        bias = bias.reshape(-1)  # any shape of N elements (the contract; torch's CUDA kernel reads a vector)
    r = dispatch.scaled_gemm(a, b, out, scale_a=sa, scale_b=sb, bias=bias, fast_accum=bool(use_fast_accum),
                             profile=profile)
    return r if r is not None else _fallback(recipe, a, b, sa, sb, bias, out, use_fast_accum)


def _fallback(recipe: str, a, b, sa, sb, bias, out: Tensor, use_fast_accum: bool) -> Tensor:
    """The product when our kernels cannot run it: ``torch._scaled_mm`` where torch's CUDA kernel
    accepts the call (:func:`_torch_cuda_accepts`), else fp32 on torch's matmul (fp8 values are exact
    in fp32 and in TF32; the products accumulate in fp32, as in our kernels) with the scales and the
    bias applied in fp32, then one rounding to ``out``'s dtype. Either way a call our contract accepts
    gets its result, not torch's refusal of a layout or recipe its kernel lacks."""
    if a.device.type == "cuda" and _torch_cuda_accepts(a, b, recipe, bias, out.dtype):
        return out.copy_(torch._scaled_mm(a, b, sa, sb, bias=bias, out_dtype=out.dtype, use_fast_accum=use_fast_accum))
    r = torch.mm(a.float(), b.float())
    r.mul_(sa.float() if recipe == "tensor" else sa.float().reshape(-1, 1))
    r.mul_(sb.float() if recipe == "tensor" else sb.float().reshape(1, -1))
    if bias is not None:
        r.add_(bias.float())
    return out.copy_(r)


def _torch_cuda_accepts(a, b, recipe: str, bias, out_dtype) -> bool:
    """Whether torch's CUDA ``_scaled_mm`` kernel takes these operands: a row-major, b column-major, K
    and N multiples of 16, not e5m2 x e5m2, row-wise scales only e4m3 x e4m3 to bf16, and a bias only
    in the output's dtype and not with an fp32 output (torch 2.11-2.15; when in doubt, torch decides:
    this says no)."""
    m, k, n = a.shape[0], a.shape[1], b.shape[1]
    a_row = a.stride(1) == 1 and (a.stride(0) > 1 or m <= 1)
    b_col = b.stride(0) == 1 and (b.stride(1) > 1 or n <= 1)
    if not (a_row and b_col) or k % 16 or n % 16:
        return False
    if (a.dtype in FNUZ_DTYPES) != native_fnuz(a.device):  # each GPU takes its own fp8 encoding only
        return False
    if a.dtype in _E5M2 and b.dtype in _E5M2:
        return False
    if recipe == "row" and (out_dtype != torch.bfloat16 or a.dtype not in _E4M3 or b.dtype not in _E4M3):
        return False
    return bias is None or (out_dtype != torch.float32 and bias.dtype == out_dtype)


_NATIVE_FNUZ: dict = {}


def native_fnuz(device: torch.device) -> bool:
    """Whether ``device``'s fp8 is the fnuz encoding: a ROCm gfx942 GPU (MI300X/MI325X), whose torch._scaled_mm
    takes float8_e4m3fnuz / e5m2fnuz and whose matrix cores run them natively (origami.hardware
    HardwareProfile.rate_key); OCP e4m3fn/e5m2 everywhere else. Asked once per device."""
    if device.type != "cuda" or not getattr(torch.version, "hip", None):
        return False
    index = device.index if device.index is not None else torch.cuda.current_device()
    known = _NATIVE_FNUZ.get(index)
    if known is None:
        known = _NATIVE_FNUZ[index] = "gfx942" in getattr(torch.cuda.get_device_properties(index), "gcnArchName", "")
    return known


def route(profile: Any, a: Any, b: Any, scale_a: Any, scale_b: Any, bias: Any, scale_result: Any, out_dtype: Any,
          use_fast_accum: Any):
    """``torch._scaled_mm(...)`` on our kernels when :func:`routable` (checked once), else NotImplemented."""
    recipe = _routable_recipe(a, b, scale_a, scale_b, bias, scale_result, out_dtype, use_fast_accum)
    if recipe is None or (profile is not None and not dispatch.has_profile(a.device, profile)):
        return NotImplemented
    return _run(recipe, a, b, scale_a, scale_b, bias, out_dtype, use_fast_accum, profile)


def routable(a: Any, b: Any, scale_a: Any, scale_b: Any, bias: Any, scale_result: Any, out_dtype: Any,
             use_fast_accum: Any) -> bool:
    """Whether ``enable()`` may route ``torch._scaled_mm(...)`` with these arguments: torch's CUDA
    kernel would accept the call (a row-major, b column-major, K and N multiples of 16, not e5m2 x e5m2,
    row-wise scales only e4m3 x e4m3 to bf16, no bias with an fp32 output) and we run it (tensor-wise or
    row-wise scales, a bf16/fp16/fp32 output, no ``scale_result``), on plain tensors without autograd."""
    return _routable_recipe(a, b, scale_a, scale_b, bias, scale_result, out_dtype, use_fast_accum) is not None


def _routable_recipe(a, b, scale_a, scale_b, bias, scale_result, out_dtype, use_fast_accum) -> str | None:
    ts = (a, b, scale_a, scale_b) + (() if bias is None else (bias,))
    if not all(type(t) in (Tensor, torch.nn.Parameter) for t in ts) or scale_result is not None:
        return None
    if not isinstance(use_fast_accum, bool) or out_dtype not in OUT_DTYPES:
        return None
    if torch.is_grad_enabled() and any(t.requires_grad for t in ts):
        return None
    try:
        recipe = _check(a, b, scale_a, scale_b, bias, out_dtype)
    except (RuntimeError, ValueError, TypeError, NotImplementedError):
        return None  # torch raises its own error, or runs what we do not
    if a.device.type == "cuda" and not _torch_cuda_accepts(a, b, recipe, bias, out_dtype):
        return None  # torch raises its own error there: enable() keeps torch's behaviour
    return recipe if dispatch.placement_reason(*ts) is None and dispatch.has_profile(a.device) else None

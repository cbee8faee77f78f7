"""When and how torch runs a GEMM for us: the reasons our kernels cannot take a call
(:func:`fallback_reason`, :func:`placement_reason`) and the call torch runs in their place
(:func:`torch_gemm`, torch's results and errors, bit for bit).

What falls back: dtypes other than fp32/fp16/bf16 (:data:`KERNEL_DTYPES`; fp64, integers, complex,
fp8 — torch has no plain fp8 matmul), non-strided layouts, lazily negated views and efficient zero
tensors, tensors on different devices, devices other than CUDA/ROCm, and CPU tensors when
``TRITON_INTERPRET`` is not 1.
"""

from __future__ import annotations

import torch

from tritonblas import _interpreter

__all__ = ["KERNEL_DTYPES", "fallback_reason", "placement_reason", "torch_gemm", "out_shape"]

# What matmul/addmm/bmm/linear run on our kernels (same dtype for a, b and the result).
KERNEL_DTYPES = frozenset((torch.float32, torch.float16, torch.bfloat16))
_is_dynamo_compiling = torch.compiler.is_dynamo_compiling  # dynamo folds it to True while tracing; False
# whenever code really runs (is_compiling() is True for the whole compile session, AOT and Inductor included)


def _placement_reason(t: torch.Tensor, dev: torch.device) -> str | None:
    if t.layout != torch.strided:
        return f"layout {t.layout}"
    # while dynamo traces (enable()'s routes under torch.compile), these C queries are not traceable
    # (a graph break, an error under fullgraph=True): the custom op's own call of dispatch.gemm
    # checks the real tensors at run time
    if not _is_dynamo_compiling():
        if t.is_neg():  # a lazily negated view (e.g. ``z.conj().imag``): the kernels read the stored values
            return "a negative-bit view (is_neg())"
        if t._is_zerotensor():  # autograd's efficient zero tensor: no storage to read
            return "an efficient zero tensor (no storage)"
    if t.device != dev:
        return f"tensors on {dev} and {t.device}"
    return None


def _device_reason(dev: torch.device) -> str | None:
    if dev.type == "cpu":
        return None if _interpreter.interpreting() else f"CPU tensors ({_interpreter.cpu_refusal()})"
    if dev.type != "cuda":
        return f"device {dev}"
    return None


def fallback_reason(*tensors: torch.Tensor | None) -> str | None:
    """Why torch (not our kernels) must run a GEMM on these tensors; None when ours can."""
    ts = [t for t in tensors if t is not None]
    dev, dt = ts[0].device, ts[0].dtype
    for t in ts:
        r = _placement_reason(t, dev)
        if r is not None:
            return r
        if t.dtype != dt:
            return f"dtypes {dt} and {t.dtype}"
    if dt not in KERNEL_DTYPES:
        return f"dtype {dt}"
    return _device_reason(dev)


def placement_reason(*tensors: torch.Tensor | None) -> str | None:
    """:func:`fallback_reason` without the dtype rules (the scaled fp8 GEMM has its own): why our
    kernels cannot run on these tensors' layouts and devices; None when they can."""
    ts = [t for t in tensors if t is not None]
    dev = ts[0].device
    for t in ts:
        r = _placement_reason(t, dev)
        if r is not None:
            return r
    return _device_reason(dev)



def out_shape(a: torch.Tensor, b: torch.Tensor) -> tuple[int, ...]:
    """The output shape of ``a @ b`` for the kernel-level operands ``gemm`` takes: (M, N), or
    (batch, M, N) when either is 3-D (a batch of 1 broadcasts)."""
    m, n = a.shape[-2], b.shape[-1]
    if a.dim() == 2 and b.dim() == 2:
        return (m, n)
    ba = a.shape[0] if a.dim() == 3 else 1
    bb = b.shape[0] if b.dim() == 3 else 1
    return (ba if bb == 1 else bb, m, n)



def torch_gemm(a, b, out, c, alpha, beta):
    """``out = alpha·(a @ b) + beta·c`` by torch's own ops, for a call tritonblas does not run (torch's
    results and errors; the arguments as :func:`tritonblas.dispatch.gemm` takes them). Without C, alpha ≠ 1 goes into
    torch's addmm/baddbmm with beta = 0 (C ignored), as the caller's ``addmm(..., beta=0)`` does: one
    rounding, and an fp16 ``a @ b`` past 65504 is scaled before it could become inf. Autocast is off
    inside: the operands' dtypes are the call's, as for the kernels (an autocast region would compute an
    fp32 call in bf16 and return it as fp32)."""
    if torch.is_autocast_enabled(a.device.type):
        with torch.autocast(a.device.type, enabled=False):
            return torch_gemm(a, b, out, c, alpha, beta)
    if c is None and alpha != 1:
        c, beta = a.new_zeros(()), 0.0
    if a.dim() == 2 and b.dim() == 2:
        r = torch.addmm(c, a, b, beta=beta, alpha=alpha) if c is not None else torch.mm(a, b)
    else:
        shape = out_shape(a, b)
        a3 = a.expand(shape[0], *a.shape[-2:])
        b3 = b.expand(shape[0], *b.shape[-2:])
        r = torch.baddbmm(c, a3, b3, beta=beta, alpha=alpha) if c is not None else torch.bmm(a3, b3)
    if out is None:
        return r
    return out.copy_(r)


"""torch/triton API drift in one place.

:func:`allow_tf32` — torch's TF32 permission for fp32 matmuls, read per call through either API.

:func:`dynamo_eager_only` — functions whose frames dynamo must never compile when they *run*
(eagerly, between the graphs of a compiled region that broke), recursively: tritonblas' runtime
(the dispatcher, the warm path, the public entry points). Tracing is unaffected: a compiled graph
still sees the public entry points through the ``torch.library`` custom ops. Without this, a
``torch.compile(mode="reduce-overhead")`` decode step whose model code graph-breaks had dynamo
compile ``dispatch._build`` and trace origami's numpy arrays as fake tensors (H200, torch 2.11,
2026-12-01: "RuntimeError when making fake tensor call ... setflags"). Uses dynamo's frame
execution strategy (torch >= 2.6); elsewhere a no-op.

:func:`gluon_cta_barrier` — Gluon's barrier across the threads of one CTA: ``gl.thread_barrier``
in Triton 3.6, ``gl.barrier`` (with a ``cluster`` keyword) from Triton 3.9 on, where the old name
is gone.

:func:`gluon_tma_copies` — Gluon's TMA load and store builtins on Hopper: ``tma.async_load`` /
``tma.async_store`` from Triton 3.9 on (where the 3.6 names ``async_copy_global_to_shared`` /
``async_copy_shared_to_global`` raise "has been removed"), the 3.6 names before.

:func:`script_as_builtin` — ``torch.jit.script`` compiles a call of a Python function that stands in for a torch
builtin (the routing wrappers) as that builtin's aten op, through TorchScript's table of builtins (private, read
with ``getattr`` so that a torch without it only loses scripting inside an ``enable()`` block).
"""

from __future__ import annotations

import torch

__all__ = ["allow_tf32", "dynamo_eager_only", "script_as_builtin", "gluon_cta_barrier", "gluon_tma_copies",
           "e4m3fn_overflow_is_nan"]


def allow_tf32() -> bool:
    """Whether torch lets fp32 matmuls use TF32 now: the legacy flag (``torch.backends.cuda.matmul.allow_tf32``)
    or the ``fp32_precision`` API; where a program mixed the two, the new one wins, as in cuBLAS."""
    try:
        return bool(torch._C._get_cublas_allow_tf32())
    except RuntimeError:
        return getattr(torch.backends.cuda.matmul, "fp32_precision", "ieee") == "tf32"


def dynamo_eager_only(*fns) -> bool:
    """Mark each function's code SKIP for dynamo, recursively; False where this torch has no such API."""
    try:
        from torch._dynamo.eval_frame import set_code_exec_strategy
        from torch._dynamo.types import FrameAction, FrameExecStrategy
    except ImportError:
        return False
    strategy = FrameExecStrategy(FrameAction.SKIP, FrameAction.SKIP)
    for fn in fns:
        fn = getattr(fn, "__func__", fn)
        code = getattr(fn, "__code__", None)
        if code is not None:
            set_code_exec_strategy(code, strategy)
    return True


def script_as_builtin(fn, orig) -> bool:
    """Make ``torch.jit.script`` compile a call of ``fn`` as the aten op it compiles for ``orig`` (a torch builtin
    such as ``torch.matmul``); False where ``orig`` is none (a Tensor method: the compiler resolves those by name)
    or this torch has no such table."""
    try:
        from torch.jit import _builtins
    except ImportError:
        return False
    find, register = getattr(_builtins, "_find_builtin", None), getattr(_builtins, "_register_builtin", None)
    op = find(orig) if find is not None else None
    if op is None or register is None:
        return False
    register(fn, op)
    return True


def gluon_cta_barrier(gl):
    """The CTA-wide barrier builtin of Gluon's language module ``gl`` (call it with no arguments)."""
    return getattr(gl, "thread_barrier", None) or gl.barrier


def gluon_tma_copies(tma):
    """(load, store) builtins of Gluon's Hopper ``tma`` module: ``load(desc, coord, barrier, dst)``
    and ``store(desc, coord, src)``."""
    if hasattr(tma, "async_load") and hasattr(tma, "async_store"):
        return tma.async_load, tma.async_store
    return tma.async_copy_global_to_shared, tma.async_copy_shared_to_global


def e4m3fn_overflow_is_nan() -> bool:
    """Whether the installed torch turns an fp32 value past float8_e4m3fn's range (|x| > 464, ±inf)
    into NaN (torch 2.11: 1000 -> 0x7F, seen on the H200 host, 2026-12-01) rather than saturating it
    to ±448 (torch 2.13 and 2.15 on CPU: 0x7E, -1000 -> 0xFE). Asked of torch itself, once: the
    kernels' fp8 outputs follow whichever torch they run beside."""
    import torch

    x = torch.tensor([1000.0, float("inf")]).to(torch.float8_e4m3fn).view(torch.uint8).tolist()
    return x == [0x7F, 0x7F]

"""torch/triton API drift in one place.

:func:`dynamo_eager_only` — functions whose frames dynamo must never compile when they *run*
(eagerly, between the graphs of a compiled region that broke), recursively: tritonblas' runtime
(the dispatcher, the warm path, the public entry points). Tracing is unaffected: a compiled graph
still sees the public entry points through the ``torch.library`` custom ops. Without this, a
``torch.compile(mode="reduce-overhead")`` decode step whose model code graph-breaks had dynamo
compile ``dispatch._build`` and trace origami's numpy arrays as fake tensors (H200, torch 2.11,
2026-12-01: "RuntimeError when making fake tensor call ... setflags"). Uses dynamo's frame
execution strategy (torch >= 2.6); elsewhere a no-op.
"""

from __future__ import annotations

__all__ = ["dynamo_eager_only"]


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

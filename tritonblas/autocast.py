"""torch's autocast as a GEMM entry point sees it, in one place: whether it is on for a device type, and
the tensors it would hand to ``aten::<op>`` (:func:`cast_inputs`). The routes (:mod:`tritonblas.routing`)
cast through it before checking a call, and the hot path (:mod:`tritonblas.fastpath`) before looking up
its warm entry, so both see the same tensors torch's own op would.
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["on", "cast_inputs", "CASTS"]

_is_autocast_enabled = torch.is_autocast_enabled
_autocast_available = torch.amp.is_autocast_available
_float64 = torch.float64


def on(dev: str) -> bool:
    """``torch.is_autocast_enabled(dev)``, False for a device type autocast does not know (``meta``,
    where torch raises "unknown device type for autocast": meta tensors in a block, and torch's own
    decompositions calling ``torch.mm`` on them while torch.compile traces ``addmm_``)."""
    if dev == "cuda" or dev == "cpu":
        return _is_autocast_enabled(dev)
    return _autocast_available(dev) and _is_autocast_enabled(dev)


def _has_kernel(op: str, key: str) -> bool:
    try:
        return torch._C._dispatch_has_kernel_for_dispatch_key(f"aten::{op}", key)
    except (AttributeError, RuntimeError):
        return True


# (aten op, device type) -> whether torch's autocast casts that op's inputs on that device, read once at
# import (dynamo traces a dict lookup, not the C query): CPU autocast has no kernel for mv / addmv, so
# torch runs them in the inputs' own dtype there (CUDA casts them)
CASTS = {(op, dev): _has_kernel(op, key)
         for op in ("linear", "matmul", "mm", "bmm", "addmm", "baddbmm", "addbmm", "mv", "addmv")
         for dev, key in (("cpu", "AutocastCPU"), ("cuda", "AutocastCUDA"))}


def cast_inputs(*tensors: Tensor | None, op: str = "mm") -> tuple:
    """The tensors as torch's autocast hands them to ``aten::<op>``: floating tensors other than fp64
    (not autocast-eligible) cast to the autocast dtype, when autocast is on for their device and torch
    has an autocast kernel for the op there; else unchanged."""
    dev = next(t for t in tensors if t is not None).device.type
    if not on(dev) or not CASTS.get((op, dev), True):
        return tensors
    dt = torch.get_autocast_dtype(dev)
    return tuple(t if t is None or not t.is_floating_point() or t.dtype == dt or t.dtype == _float64
                 else t.to(dt) for t in tensors)

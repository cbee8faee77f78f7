"""Compiling kernels for a GPU target on a machine without that GPU (or any GPU).

Triton's frontend, MLIR passes and the assemblers it bundles need no device; only the launcher does.
:class:`StubDriver` reports a target and stands in for the active driver, so ``JITFunction.warmup``
compiles for it without launching (``tests/kernels/_aot_compile.py``, ``benchmarks/amd_census.py``).
"""

from __future__ import annotations

__all__ = ["StubDriver"]


class StubDriver:
    """Just enough of a driver for ``JITFunction.warmup``: a target, a device index, a stream."""

    def __init__(self, target):
        self.target = target

    def get_current_target(self):
        return self.target

    def get_current_device(self):
        return 0

    def get_current_stream(self, device=None):
        return 0

    def get_active_torch_device(self):
        import torch

        return torch.device("cpu")

    def is_active(self):
        return True

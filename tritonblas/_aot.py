"""Compiling kernels for a GPU target on a machine without that GPU (or any GPU).

Triton's frontend, MLIR passes and the assemblers it bundles need no device; only the launcher does.
:class:`StubDriver` reports a target and stands in for the active driver, so ``JITFunction.warmup``
compiles for it without launching (``tests/kernels/_aot_compile.py``, ``benchmarks/amd_census.py``).
"""

from __future__ import annotations

__all__ = ["StubDriver", "use_target", "prepare_on_cpu"]


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


def use_target(target) -> None:
    """Compile for ``target`` (a ``triton.backends.compiler.GPUTarget``) from now on: a :class:`StubDriver`
    becomes the active driver, and every tritonblas kernel forgets the backend of the first target it saw."""
    from triton.runtime import driver

    from tritonblas import kernels

    driver.set_active(StubDriver(target))
    for name in kernels.__all__:
        fn = getattr(kernels, name)
        if hasattr(fn, "device_caches"):
            fn.device_caches.clear()


def prepare_on_cpu(plan, a, b, out, **kwargs):
    """``tritonblas.plan.prepare_launch`` on CPU tensors for a compile (not a launch): past its "CPU
    tensors need the interpreter" guard, which is restored after."""
    from tritonblas import _interpreter
    from tritonblas import plan as P

    real = _interpreter.interpreting
    _interpreter.interpreting = lambda: True
    try:
        return P.prepare_launch(plan, a, b, out, **kwargs)
    finally:
        _interpreter.interpreting = real

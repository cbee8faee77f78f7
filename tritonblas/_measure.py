"""What ``tritonblas.calibrate`` and ``tritonblas.bench`` share: their usage error, the GPU check,
``do_bench`` medians and the TF32 switch."""

from __future__ import annotations

import contextlib
import warnings
from typing import Any, Callable

__all__ = ["CalibrationError", "require_gpu", "do_bench", "with_tf32", "one_line"]


class CalibrationError(ValueError):
    """Bad input to calibrate/bench (or no GPU where one is needed): one line, CLI exit code 2."""


def require_gpu(what: str, hint: str = ""):
    """torch, when a CUDA/ROCm GPU is usable; else CalibrationError (one line)."""
    try:
        import torch
    except ImportError:
        raise CalibrationError(f"{what}: needs a CUDA GPU and torch, which is not installed") from None
    if not torch.cuda.is_available():
        raise CalibrationError(f"{what}: needs a CUDA GPU (torch.cuda.is_available() is False here){hint}")
    return torch


def do_bench(fn: Callable[[], Any], rep_ms: int) -> float:
    """Median ms of ``fn`` (``triton.testing.do_bench``, L2 flushed between runs)."""
    import triton.testing

    return float(triton.testing.do_bench(fn, warmup=max(5, rep_ms // 4), rep=rep_ms, return_mode="median"))


def with_tf32(torch, on: bool):
    """Context manager: fp32 matmuls may (or may not) use TF32, in torch and in our dispatcher."""

    @contextlib.contextmanager
    def ctx():
        m = torch.backends.cuda.matmul
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                old = ("allow_tf32", m.allow_tf32)
                m.allow_tf32 = on
            except RuntimeError:  # the new fp32_precision API was used: stay with it
                old = ("fp32_precision", m.fp32_precision)
                m.fp32_precision = "tf32" if on else "ieee"
        try:
            yield
        finally:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                setattr(m, *old)

    return ctx()


def one_line(e: Exception) -> str:
    """An error of several lines (a ProfileError names one bad field per line) as one line."""
    head, *rest = str(e).splitlines() or [""]
    return head + (" " + "; ".join(r.strip() for r in rest) if rest else "")

"""What tritonblas reports, and how to see it: the ``tritonblas`` logger and the warning classes.

- ``logging.getLogger("tritonblas")`` (:data:`logger`) carries what the library decides: tile-table
  loads, hits and misses (``tritonblas.tables``), calibration progress (``tritonblas.calibrate``),
  what the CLI ran (``tritonblas.cli``; ``python -m tritonblas -v ...`` shows it), and torch
  fallbacks (the dispatcher). It has a NullHandler, so nothing shows until the application configures
  logging (``logging.basicConfig(level=logging.INFO)``; DEBUG adds one line per table lookup). The
  model's own ``origami`` logger says only where numba caches (``origami._jitcache``).
- Warnings (``warnings.warn``; filter them by class): :class:`TableWarning` (a tile table or some of
  its entries ignored), :class:`DeviceMismatchWarning` (the profile does not describe the live
  device exactly), :class:`FallbackWarning` (a call ran on torch instead of our kernels).

No handler, level or filter is changed at import beyond the NullHandler.
"""

from __future__ import annotations

import logging

__all__ = ["logger", "TableWarning", "DeviceMismatchWarning", "FallbackWarning"]

logger = logging.getLogger("tritonblas")
logger.addHandler(logging.NullHandler())


class TableWarning(UserWarning):
    """A tile table (or some of its entries) was ignored; the model decides the affected shapes."""


class DeviceMismatchWarning(UserWarning):
    """The profile in use does not describe the live device exactly (MIG slice, CU mask, other SKU)."""


class FallbackWarning(RuntimeWarning):
    """A tritonblas call ran on torch instead of a tritonblas kernel (unsupported dtype, device or
    layout, or no valid config); the message names the op, the shapes and the reason."""

"""tritonblas: Triton GEMMs whose launch configuration is picked by the origami model.

Importing the package has no side effects: no torch/triton import, no device query, no allocation.
Submodules load on first attribute access.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

_LAZY = {
    "LaunchPlan": "tritonblas.plan",
    "make_plan": "tritonblas.plan",
    "launch": "tritonblas.plan",
    "precompile": "tritonblas.plan",
    "clear_workspaces": "tritonblas.plan",
    "matmul": "tritonblas.ops",
    "addmm": "tritonblas.ops",
    "bmm": "tritonblas.ops",
    "linear": "tritonblas.ops",
    "baddbmm": "tritonblas.ops",
    "addbmm": "tritonblas.ops",
    "mv": "tritonblas.ops",
    "addmv": "tritonblas.ops",
    "scaled_mm": "tritonblas.scaled",
    "enable": "tritonblas.routing",
    "explain": "tritonblas.ops",
    "clear_caches": "tritonblas.ops",
    "load_table": "tritonblas.tables",
    "TableWarning": "tritonblas.log",
    "DeviceMismatchWarning": "tritonblas.log",
    "FallbackWarning": "tritonblas.log",
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'tritonblas' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value

"""The environment variables tritonblas reads: their names, in one place, and readers that read them
at call time (never at import). origami's own variable, ``ORIGAMI_PROFILE_DIR``, is named in
``origami.hardware`` (origami does not import tritonblas) and re-exported here.

| name | effect |
|---|---|
| ``TRITONBLAS_PROFILE`` | profile name or YAML path for every launch without ``profile=`` (required on CPU) |
| ``TRITONBLAS_TABLE`` | tile table consulted before the model (exact hits) |
| ``TRITONBLAS_FAST`` | ``0`` turns the ops' warm path (:mod:`tritonblas.fastpath`) off |
| ``ORIGAMI_PROFILE_DIR`` | a directory of extra profiles, loadable by name |
| ``TRITON_INTERPRET`` | ``1`` runs the kernels on CPU tensors through Triton's interpreter |

Hot paths read these through their own cached accessors (``dispatch``'s encoded-key reader,
``fastpath``'s ``os.environ.get``); every module takes the names from here.
"""

from __future__ import annotations

import os

from origami.hardware import ENV_PROFILE_DIR

__all__ = ["ENV_PROFILE", "ENV_TABLE", "ENV_FAST", "ENV_PROFILE_DIR", "ENV_INTERPRET", "ALL",
           "profile", "table", "fast", "profile_dir", "interpret"]

ENV_PROFILE = "TRITONBLAS_PROFILE"
ENV_TABLE = "TRITONBLAS_TABLE"
ENV_FAST = "TRITONBLAS_FAST"
ENV_INTERPRET = "TRITON_INTERPRET"
ALL = (ENV_PROFILE, ENV_TABLE, ENV_FAST, ENV_PROFILE_DIR, ENV_INTERPRET)


def profile() -> str | None:
    return os.environ.get(ENV_PROFILE) or None


def table() -> str | None:
    return os.environ.get(ENV_TABLE) or None


def fast() -> bool:
    return os.environ.get(ENV_FAST) != "0"


def profile_dir() -> str | None:
    return os.environ.get(ENV_PROFILE_DIR) or None


def interpret() -> bool:
    return os.environ.get(ENV_INTERPRET, "0") == "1"

"""The compiler the model predicts for: which Triton release will build the kernels.

Some resource rules are the compiler's, not the hardware's: on gfx950, Triton 3.8 and later stage
every pipeline buffer in LDS (direct-to-LDS loads) where 3.6 keeps one stage in registers
(:func:`origami.space.smem_bytes`). origami imports neither torch nor triton, so it reads the
installed release from the package metadata, or from ``ORIGAMI_TRITON_VERSION`` (``MAJOR.MINOR``)
when the tables are made for another machine's compiler than this one's. Read at call time; the
selection caches are keyed by what depends on it (``origami.space.amd_direct_to_lds``), while
tritonblas' dispatcher keeps the plans it built, so set it before a process's first GEMM.
"""

from __future__ import annotations

import os
import re
from functools import lru_cache

__all__ = ["ENV_TRITON_VERSION", "triton_version", "installed_triton", "DISTRIBUTIONS"]

ENV_TRITON_VERSION = "ORIGAMI_TRITON_VERSION"
# the names Triton is installed under: upstream, and the ROCm builds PyTorch ships
DISTRIBUTIONS = ("triton", "pytorch-triton-rocm", "triton-rocm", "pytorch-triton")


def _parse(text: str, source: str) -> tuple[int, int]:
    m = re.match(r"\s*(\d+)\.(\d+)", text)
    if m is None:
        raise ValueError(f"{source}: {text!r} is not a Triton version (MAJOR.MINOR, e.g. 3.6)")
    return int(m.group(1)), int(m.group(2))


@lru_cache(maxsize=1)
def installed_triton() -> str | None:
    """The installed Triton's version string from its package metadata (any of
    :data:`DISTRIBUTIONS`; importing triton is slow and not needed), or None."""
    from importlib import metadata

    for name in DISTRIBUTIONS:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return None


def _installed() -> tuple[int, int] | None:
    text = installed_triton()
    try:
        return None if text is None else _parse(text, "the installed Triton's version")
    except ValueError:
        return None


def triton_version() -> tuple[int, int] | None:
    """(major, minor) of the Triton the model predicts for: ``$ORIGAMI_TRITON_VERSION`` if set (a
    ValueError naming it when it is not ``MAJOR.MINOR``), else the installed release, else None (no
    Triton here: the rules of the release the profiles were fitted with, 3.6, apply)."""
    forced = os.environ.get(ENV_TRITON_VERSION)
    if forced:
        return _parse(forced, f"${ENV_TRITON_VERSION}")
    return _installed()

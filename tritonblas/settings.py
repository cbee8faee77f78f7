"""The environment variables tritonblas reads: their names, in one place, and readers that read them
at call time (never at import). origami's own variables, ``ORIGAMI_PROFILE_DIR`` and
``ORIGAMI_TRITON_VERSION``, are named in ``origami.hardware`` and ``origami.toolchain`` (origami does
not import tritonblas) and re-exported here.

| name | effect |
|---|---|
| ``TRITONBLAS_PROFILE`` | profile name or YAML path for every launch without ``profile=`` (required on CPU) |
| ``TRITONBLAS_TABLE`` | tile table consulted before the model (exact hits) |
| ``TRITONBLAS_FAST`` | ``0`` turns the ops' warm path (:mod:`tritonblas.fastpath`) off |
| ``ORIGAMI_PROFILE_DIR`` | a directory of extra profiles, loadable by name |
| ``ORIGAMI_TRITON_VERSION`` | ``MAJOR.MINOR`` of the Triton the model predicts for, when it is not the installed one (tables made for another machine) |
| ``TRITONBLAS_GLUON`` | ``0``: the warp-specialised Gluon kernel (kind ``ws``, :mod:`tritonblas.kernels.gluon_hopper`) is never run, origami selects without it; unset: it runs where origami picks it (profiles with ``model.ws_efficiency`` > 0); ``1`` (an experiment): plain 2-D bf16/fp16 GEMMs (and F.linear's bias add; fp8 scaled_mm) of at least 128x128x64 whose output tiles reach 90% of the SMs run it whatever origami picks |
| ``TRITONBLAS_AUTOGRAD`` | ``aten`` (an experiment): under ``enable()``, GEMMs with autograd recording run our kernels below torch's C++ autograd (:mod:`tritonblas.below_autograd`) instead of through our Python autograd Function; read when the first block opens |
| ``TRITONBLAS_EAGER_MIN_GFLOP`` | ``G`` (an experiment, unset by default): in eager mode, a warm-path GEMM (``F.linear``, ``matmul``/``@``, ``bmm``, positional ``addmm``) of fewer than G GFLOP (2·M·N·K) runs torch's own op; CUDA graph capture and ``torch.compile`` keep ours. Host-bound eager workloads pay our Python call (:mod:`tritonblas.fastpath`) |
| ``TRITONBLAS_GRAD_MIN_GFLOP`` | ``G`` (default 20; ``0`` turns it off): under ``enable()``, an eager GEMM that autograd records (``F.linear``, ``matmul``/``@``, ``bmm``, positional ``addmm`` with an input that requires grad) of fewer than G GFLOP whose M, N and K are all multiples of 16 bytes' elements runs torch's own op, forward and backward; CUDA graph capture and ``torch.compile`` keep ours. Why: :func:`tritonblas.fastpath.small_grad` |
| ``TRITONBLAS_VENDOR_ALIGNED`` | unset or empty: on for NVIDIA GPUs' tensors (where it was measured, H100 and H200) unless a tile table is in force, off for the CPU and ROCm; ``1``: on everywhere; ``0``: off. Under ``enable()``, a bf16/fp16 GEMM of any routed op (``F.linear``, ``matmul``/``@``, ``mm``, ``bmm``, ``addmm``, ``baddbmm``, ``addbmm``, any spelling; under autocast, the 2-byte type it runs in) whose N and K (and M, when autograd records it) are multiples of 8 runs torch's own op (decode-sized ones included), as does a GEMM of any dtype and alignment whose K is under one tensor-core MMA step (``K * element_size < 32`` bytes), CUDA graph capture included and under ``torch.compile`` decided at trace time; so does an eager ``torch._scaled_mm`` call (fp8); ``tritonblas.scaled_mm`` and the other ``tritonblas`` functions called by name keep ours. Why: :func:`tritonblas.handover.vendor_aligned`, :func:`~tritonblas.handover.vendor_scaled` |
| ``TRITON_INTERPRET`` | ``1`` (or ``true``/``yes``/``on``, as Triton reads it) runs the kernels on CPU tensors through Triton's interpreter |

Hot paths read them through :func:`raw_reader` (``dispatch``'s fast key), :func:`raw_equals`
(``fastpath``'s off switch) and :func:`raw_getter` (``fastpath``'s small-GEMM threshold, set or not); every
module takes the names from here.
"""

from __future__ import annotations

import functools
import math
import os

from origami.hardware import ENV_PROFILE_DIR
from origami.toolchain import ENV_TRITON_VERSION

__all__ = ["ENV_PROFILE", "ENV_TABLE", "ENV_FAST", "ENV_PROFILE_DIR", "ENV_INTERPRET", "ENV_GLUON", "ENV_AUTOGRAD",
           "ENV_TRITON_VERSION", "ALL", "profile", "table", "fast", "profile_dir", "interpret", "gluon", "gluon_off",
           "autograd_aten", "ENV_EAGER_MIN_GFLOP", "eager_min_gflop", "ENV_GRAD_MIN_GFLOP", "GRAD_MIN_GFLOP",
           "grad_min_gflop", "ENV_VENDOR_ALIGNED", "vendor_aligned_on", "ENV_LINEAR_FORWARD", "linear_forward", "DEFAULT", "raw_reader", "raw_getter", "raw_equals"]

ENV_PROFILE = "TRITONBLAS_PROFILE"
ENV_TABLE = "TRITONBLAS_TABLE"
ENV_FAST = "TRITONBLAS_FAST"
ENV_INTERPRET = "TRITON_INTERPRET"
ENV_GLUON = "TRITONBLAS_GLUON"
ENV_AUTOGRAD = "TRITONBLAS_AUTOGRAD"
ENV_EAGER_MIN_GFLOP = "TRITONBLAS_EAGER_MIN_GFLOP"
ENV_GRAD_MIN_GFLOP = "TRITONBLAS_GRAD_MIN_GFLOP"
GRAD_MIN_GFLOP = 20.0  # the default of TRITONBLAS_GRAD_MIN_GFLOP (fastpath.small_grad says why)
ENV_VENDOR_ALIGNED = "TRITONBLAS_VENDOR_ALIGNED"
ENV_LINEAR_FORWARD = "TRITONBLAS_LINEAR_FORWARD"
ALL = (ENV_PROFILE, ENV_TABLE, ENV_FAST, ENV_PROFILE_DIR, ENV_TRITON_VERSION, ENV_INTERPRET, ENV_GLUON, ENV_AUTOGRAD,
       ENV_EAGER_MIN_GFLOP, ENV_GRAD_MIN_GFLOP, ENV_VENDOR_ALIGNED, ENV_LINEAR_FORWARD)


def profile() -> str | None:
    return os.environ.get(ENV_PROFILE) or None


def table() -> str | None:
    return os.environ.get(ENV_TABLE) or None


def fast() -> bool:
    return os.environ.get(ENV_FAST) != "0"


def gluon() -> bool:
    return os.environ.get(ENV_GLUON) == "1"


def gluon_off() -> bool:
    """``TRITONBLAS_GLUON=0``: the dispatcher never runs the warp-specialised kernel (kind 'ws')."""
    return os.environ.get(ENV_GLUON) == "0"


def linear_forward() -> bool:
    """``TRITONBLAS_LINEAR_FORWARD``: unset, empty or ``1``: ``enable()`` replaces ``nn.Linear.forward`` while a block
    is open (:func:`tritonblas.handover.linear_forward`); ``0``: it leaves it alone (every ``nn.Linear`` call then
    meets ``F.linear``'s wrapper). Read when the first block opens; anything else is an error naming the variable."""
    raw = os.environ.get(ENV_LINEAR_FORWARD, "").strip()
    if raw in ("", "1"):
        return True
    if raw == "0":
        return False
    raise ValueError(f"{ENV_LINEAR_FORWARD}={raw!r}: expected 0 or 1")


def autograd_aten() -> bool:
    """``TRITONBLAS_AUTOGRAD=aten``: GEMMs under autograd run below torch's C++ autograd (an experiment)."""
    return os.environ.get(ENV_AUTOGRAD) == "aten"


def _gflop(name: str, default: float) -> float:
    """A GFLOP threshold from the variable ``name``: ``default`` when unset or empty. A ValueError naming the
    variable for anything but a finite number >= 0."""
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{name}={text!r}: expected a number of GFLOP >= 0 (e.g. 20), or unset")
    return value


def eager_min_gflop() -> float:
    """``TRITONBLAS_EAGER_MIN_GFLOP``: the GFLOP under which an eager warm-path GEMM runs torch's op; 0 when
    unset or empty. A ValueError naming the variable for anything but a finite number >= 0."""
    return _gflop(ENV_EAGER_MIN_GFLOP, 0.0)


def grad_min_gflop() -> float:
    """``TRITONBLAS_GRAD_MIN_GFLOP``: the GFLOP under which an eager, autograd-recorded GEMM of 16-byte-aligned
    sizes runs torch's op; :data:`GRAD_MIN_GFLOP` when unset or empty, 0 (off) when set to 0. A ValueError naming
    the variable for anything but a finite number >= 0."""
    return _gflop(ENV_GRAD_MIN_GFLOP, GRAD_MIN_GFLOP)


class _Default:
    """What a switch reads when its variable is unset or empty: on, where its reader's evidence holds (truthy)."""

    def __bool__(self) -> bool:
        return True

    def __repr__(self) -> str:
        return "settings.DEFAULT"


DEFAULT = _Default()


def vendor_aligned_on() -> bool | _Default:
    """``TRITONBLAS_VENDOR_ALIGNED``: whether aligned bf16/fp16 GEMMs (decode-sized ones included) and GEMMs whose K
    is under one MMA step, under ``enable()``, run torch's op (:func:`tritonblas.handover.vendor_aligned`): ``1``
    True (on for every device), ``0`` False (off),
    empty or unset :data:`DEFAULT` (on for NVIDIA GPUs' tensors, where it was measured; off for the CPU and ROCm).
    A ValueError naming the variable for any other value."""
    text = os.environ.get(ENV_VENDOR_ALIGNED, "").strip()
    if text not in ("", "0", "1"):
        raise ValueError(f"{ENV_VENDOR_ALIGNED}={text!r}: expected 1 (on) or 0 (off), or unset (on for NVIDIA GPUs)")
    return DEFAULT if not text else text == "1"


def profile_dir() -> str | None:
    return os.environ.get(ENV_PROFILE_DIR) or None


_TRUE = frozenset(("1", "true", "yes", "on", "y"))  # what Triton's getenv_bool takes as true (any case)


def interpret() -> bool:
    """Whether ``TRITON_INTERPRET`` is on as Triton itself reads it (``1``, ``true``, ``yes``, ``on``,
    ``y``, any case): Triton interprets the kernels then, so tritonblas must treat CPU tensors as
    runnable and install its interpreter workarounds (``TRITON_INTERPRET=true`` sent every call to
    torch, silently, while Triton interpreted)."""
    value = os.environ.get(ENV_INTERPRET)
    return value is not None and value.lower() in _TRUE


def _raw_mapping():
    """(get, encode) over the environment without ``os.environ.get``'s str encoding (~50 ns instead of
    ~300): CPython keeps the encoded mapping in ``os.environ._data``, which ``os.environ[...] =``,
    ``del`` and ``putenv`` through ``os.environ`` keep current; else ``os.environ.get`` itself."""
    environ = os.environ
    data, encode = getattr(environ, "_data", None), getattr(environ, "encodekey", None)
    if not isinstance(data, dict) or encode is None:
        return environ.get, (lambda text: text)
    return data.get, encode


def raw_reader(*names: str):
    """A function giving the current values of the variables ``names`` as one tuple, read per call
    (never cached) in the raw representation of :func:`_raw_mapping` (for keys and comparisons)."""
    get, encode = _raw_mapping()
    keys = tuple(encode(n) for n in names)
    return lambda: tuple(map(get, keys))


def raw_getter(name: str):
    """A function giving the current raw value of the variable ``name`` (None when unset), read per call,
    with no Python frame on POSIX (a partial of the environment's own dict lookup): for a hot path's
    "is it set at all" check."""
    get, encode = _raw_mapping()
    return functools.partial(get, encode(name))


def raw_equals(name: str, text: str):
    """A function telling, per call, whether the variable ``name`` is exactly ``text``."""
    get, encode = _raw_mapping()
    key, want = encode(name), encode(text)
    return lambda: get(key) == want

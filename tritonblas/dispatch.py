"""Tensors → ``GemmKey`` → cached ``LaunchPlan`` → kernel launch. The only torch → DType map.

``gemm(a, b, out, c=..., alpha=..., beta=...)`` is what the custom ops of :mod:`tritonblas.ops` run,
in three tiers:

- **Warm**: :func:`tritonblas.launchcache.fast_key` of the tensors finds a recorded
  :class:`~tritonblas.launchcache.FastEntry`, which binds the pointers and launches (no checks, no
  plan lookup; see :mod:`tritonblas.launchcache`, which also shares compiled kernels between keys of
  one specialisation). ``ops.matmul`` and :mod:`tritonblas.fastpath` look entries up before their own
  checks.
- **Checked path**: build the frozen :class:`GemmKey` from the tensors (sizes, dtypes, layout orders,
  alignment class, device index, profile hash, TF32 flag, epilogue, table) and look it up in ``_PLANS``;
  then ``plan.prepare_launch`` and the launch, after which the warm entry is recorded (only when its
  binding reproduces ``prepare_launch``'s argument by argument). The model never runs.
- **Cold path**: one ``origami.select`` (one numba call over the candidate array), a tile table's
  entry, or the forced ``config=`` (checked by ``make_plan`` with the shared predicates: ``ValueError``
  naming every violation), one ``make_plan`` (asking for the TMA kernel; the plan and ``launch`` fall
  back to the pointer kernel when the problem or the tensors are not 16-byte aligned), stored in the
  bounded ``_PLANS`` (at most :data:`MAX_PLANS`, oldest dropped first; :func:`clear_caches` empties it).
  A pick Triton refuses for lack of resources is replaced by the next of the ranking (:data:`REPLANS`).

Around it: :mod:`tritonblas.fallback` says when torch runs a call and runs it;
:mod:`tritonblas.gluon_route` launches the warp-specialised Gluon kernel (origami's picks of kind
'ws', and the ``TRITONBLAS_GLUON=1`` experiment); :mod:`tritonblas.counters` holds :func:`stats`.

Semantics that the dispatcher owns:

- **Fallback**: what :func:`tritonblas.fallback.fallback_reason` names (dtypes without a kernel,
  non-strided layouts, other devices, CPU tensors outside the interpreter), a tile table's VENDOR entry
  and a problem the model finds no config for run torch's own op (``stats()['fallbacks']`` counts them,
  warm calls included). CPU tensors
  under the interpreter run our kernels and need a profile (``profile=`` or ``$TRITONBLAS_PROFILE``):
  without one, :class:`tritonblas._device.DeviceError` (a ``RuntimeError``) says so.
- **Empty and K = 0**: an M = 0, N = 0 or batch = 0 output is returned without a launch; K = 0 gives
  zeros, or ``beta·C`` with C (``stats()['empty']`` counts both).
- **fp32 precision**: fp32 inputs use TF32 only when torch allows it for matmuls
  (``torch.backends.cuda.matmul.allow_tf32`` / ``fp32_precision == "tf32"`` /
  ``set_float32_matmul_precision("high"|"medium")``); the key and the model's problem then say
  ``DType.TF32``. The flag is read at call time, for CPU tensors under the interpreter too.
- **Determinism**: every kernel family is deterministic by construction — DP and persistent kernels
  own their tiles, Stream-K and split-K write fp32 partials to a workspace and the last contributor
  sums them in a fixed order (no float atomics). :data:`DETERMINISTIC_KINDS` lists them; under
  ``torch.use_deterministic_algorithms(True)`` a plan of any other kind would raise a
  ``RuntimeError`` naming the op (or warn under ``warn_only``) — none exists today.
- **CUDA graphs**: a warm call launches nothing but the kernel (its workspace comes from the graph's
  pool during capture), so it can be captured. A cold call during capture raises ``RuntimeError``
  ("warm up first") before touching the device, so the capture itself stays valid.
- **Streams and devices**: the launch runs under ``torch.cuda.device(tensor.device)``, so it uses that
  device's current stream and never touches the current device when the tensors live elsewhere.
"""

from __future__ import annotations

import logging
import os
import threading
import warnings
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Callable, Mapping

import torch

import origami
from origami.space import without_promotion, without_ws, ws_available
from origami.config import Kind, TileConfig
from origami.hardware import HardwareProfile
from origami.problem import DType, GemmProblem, Layout
from tritonblas import _device, counters, gluon_route, launchcache, settings, tables
from tritonblas.log import FallbackWarning, logger
from tritonblas import plan as _plan
from tritonblas._device import ENV_PROFILE, DeviceError, DeviceInfo, clear_device_cache, profile_for_device
from tritonblas._compat import allow_tf32
from tritonblas.counters import COUNTS as _STATS, count, count_all
from tritonblas.fallback import KERNEL_DTYPES, fallback_reason, out_shape, placement_reason, torch_gemm
from tritonblas.gluon_route import GluonEntry, gluon_eligible
from tritonblas.launchcache import (FastEntry, capturing, environment, fast_context, fast_valid, launch_fast,
                                    launch_ready, launch_warm, raw_ready)

__all__ = [
    "DTYPES", "DETERMINISTIC_KINDS", "MAX_PLANS", "REPLANS", "GemmKey", "dtype_of", "device_info", "has_profile",
    "warm_has_profile", "gemm", "scaled_gemm", "plan_for", "explain", "overlap", "stats", "reset_stats",
    "planned_problems", "clear_caches", "fast_lookup", "fast_vendor", "run_fast", "run_fast_out",
    # re-exported: what the ops, the warm path and the routes reach through the dispatcher
    "KERNEL_DTYPES", "allow_tf32", "fallback_reason", "kernels_take", "placement_reason", "torch_gemm", "count", "count_all",
    "FastEntry", "GluonEntry", "gluon_eligible", "fast_valid", "fast_context", "environment", "launch_fast",
    "launch_ready", "launch_warm", "raw_ready", "capturing",
]

# torch dtype → DType: the inverse of plan.TORCH_DTYPES (fp32 storage maps to FP32; TF32 is a
# per-call choice, see allow_tf32).
DTYPES: Mapping[torch.dtype, DType] = MappingProxyType(
    {t: d for d, t in _plan.TORCH_DTYPES.items() if d is not DType.TF32})
DETERMINISTIC_KINDS = frozenset((Kind.DP, Kind.PERSISTENT, Kind.STREAMK, Kind.SPLITK, Kind.WS))
MAX_PLANS = 4096

_FALLBACK = object()  # a _PLANS value: the model found no config; torch runs this key
_PLANS: dict[GemmKey, Any] = {}
_VENDOR_KEYS: set = set()  # GemmKeys whose plan a tile table's VENDOR entry gave to torch
_VENDOR_FAST: set = set()  # the warm-path keys (launchcache.fast_key) of calls that ran torch for such a key
_TABLE_KEYS: set = set()  # GemmKeys whose config (or VENDOR) came from a tile table: no Gluon experiment
_LOCK = threading.Lock()
_cuda_guard = launchcache.cuda_guard


def dtype_of(t: torch.dtype, *, tf32: bool = False) -> DType:
    """The DType of a torch dtype (``tf32=True`` turns fp32 into TF32). KeyError if there is none."""
    d = DTYPES[t]
    return DType.TF32 if (tf32 and d is DType.FP32) else d


# --- the key ---------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class GemmKey:
    """Everything that decides the plan (and the compiled kernel variant) of one GEMM call.

    ``orders`` are the layout classes of a, b and out as the kernels see them (0: last dim
    contiguous, 1: transposed, 2: general strides; ``a_layout``/``b_layout`` are what the model sees).
    ``align`` is the alignment class (16, 4 or 1 bytes) of all three. ``device`` is the CUDA index
    (-1 for CPU under the interpreter). ``profile`` is the profile's content hash. ``c`` names the
    dtype of an addmm input (``""``: none). ``config`` is a forced TileConfig (None: the model's).
    ``ab_align``: the alignment classes of a and b alone (which operands alignment staging copies).
    ``ws``: whether the call can run on the warp-specialised kernel (:func:`ws_reason` None); when not,
    the model selects without it (``origami.space.without_ws``). ``fp8_fast``: an fp8 call with fast
    accumulation, which selects without the promoted kernels' spill rule (``origami.space.without_promotion``).
    """

    m: int
    n: int
    k: int
    batch: int
    a_dtype: DType
    b_dtype: DType
    c_dtype: DType
    a_layout: Layout
    b_layout: Layout
    align: int
    device: int
    profile: str
    allow_tf32: bool
    orders: tuple[int, int, int] = (0, 0, 0)
    c: str = ""
    config: TileConfig | None = None
    table: tuple = (0, None)  # tables.table_token(): which tile table (if any) may override the model
    deterministic: bool = False  # torch.use_deterministic_algorithms at plan time (it filters the kinds)
    ab_align: tuple[int, int] = (16, 16)
    ws: bool = False
    fp8_fast: bool = False

    @classmethod
    def from_tensors(cls, a: torch.Tensor, b: torch.Tensor, out: torch.Tensor, *, profile: HardwareProfile,
                     tf32: bool = False, c: torch.Tensor | None = None,
                     config: TileConfig | None = None, ws: bool = False, table: tuple | None = None,
                     fp8_fast: bool = False) -> "GemmKey":
        (oa, la, _), (ob, lb, _), (oo, lo, _) = _plan.layout_info(a), _plan.layout_info(b), _plan.layout_info(out)
        orders = (oa, ob, oo)
        align = _plan.align_class(min(la, lb, lo))
        batch = out.shape[0] if out.dim() == 3 else 1
        tf32 = tf32 and a.dtype == torch.float32
        idx = a.device.index if a.device.type == "cuda" else -1
        return cls(m=a.shape[-2], n=b.shape[-1], k=a.shape[-1], batch=batch,
                   a_dtype=dtype_of(a.dtype, tf32=tf32), b_dtype=dtype_of(b.dtype, tf32=tf32),
                   c_dtype=DTYPES[out.dtype],
                   a_layout=Layout.T if orders[0] == 1 else Layout.N,
                   b_layout=Layout.T if orders[1] == 1 else Layout.N,
                   align=align, device=-1 if idx is None else idx, profile=profile.content_hash,
                   allow_tf32=tf32, orders=orders, c="" if c is None else str(c.dtype).removeprefix("torch."),
                   config=config, table=tables.table_token() if table is None else table,
                   deterministic=torch.are_deterministic_algorithms_enabled(),
                   ab_align=(_plan.align_class(la), _plan.align_class(lb)), ws=ws, fp8_fast=fp8_fast)

    def problem(self) -> GemmProblem:
        return GemmProblem(self.m, self.n, self.k, a_dtype=self.a_dtype, b_dtype=self.b_dtype,
                           c_dtype=self.c_dtype, a_layout=self.a_layout, b_layout=self.b_layout,
                           batch=self.batch, align_bytes=self.align)


def device_info(device: torch.device, profile: "str | os.PathLike[str] | HardwareProfile | None" = None) -> DeviceInfo:
    """The profile for a tensor's device: ``profile=``, then $TRITONBLAS_PROFILE, then the device."""
    return profile_for_device(device if device.type == "cuda" else "cpu", profile=profile)


def has_profile(device: torch.device, profile: Any = None) -> bool:
    """Whether a profile is named (``profile=`` or $TRITONBLAS_PROFILE: errors in it are the user's
    to see) or the GPU maps to one; False for CPU without a named profile or an unknown GPU."""
    if profile is not None or os.environ.get(ENV_PROFILE):
        return True
    if device.type != "cuda":
        return False
    index = device.index if device.index is not None else torch.cuda.current_device()
    known = _device.HAS_PROFILE.get(index)
    if known is not None:
        return known
    if torch.compiler.is_compiling():
        # dynamo cannot trace the device lookup (its lock: "Unsupported context manager", torch 2.11
        # on the H200, 2026-12-01); enable() answers this eagerly for every visible GPU, so only a GPU
        # that appeared since is left to torch's op here
        return False
    try:
        device_info(device)
        known = True
    except DeviceError:
        known = False
    _device.HAS_PROFILE[index] = known
    return known


def kernels_take(*tensors: torch.Tensor | None) -> bool:
    """Whether our kernels can run a GEMM on these tensors with the default profile: no
    :func:`fallback_reason` (one kernel dtype, one device they run on) and a profile for that device
    (:func:`has_profile`). The one test of the drop-in's autograd path, its refused-class memory and the
    kernels below autograd."""
    return fallback_reason(*tensors) is None and has_profile(next(t for t in tensors if t is not None).device)


def warm_has_profile() -> None:
    """Answer :func:`has_profile` for every visible GPU now (eagerly), so a traced call reads the answer."""
    if not torch.cuda.is_available():
        return
    for i in range(torch.cuda.device_count()):
        has_profile(torch.device("cuda", i))


# --- stats -----------------------------------------------------------------------------------
def stats() -> dict[str, int]:
    """Counters since the last :func:`reset_stats`: ``launches`` (kernel launches), ``plans``
    (cold-path plans built), ``empty`` (results made without a launch: empty output or K = 0),
    ``fallbacks`` (calls torch ran), ``routed`` (calls ``enable()`` sent to tritonblas),
    ``table_hits`` (plans whose config came from a tile table), ``intercepted`` (GEMM calls that
    reached ``enable()``'s routing, routed or not), ``fast_hits`` (calls served by the ops' warm path,
    :mod:`tritonblas.fastpath`), ``ws`` (checked-path launches of the warp-specialised kernel, origami's
    pick of kind 'ws'; its warm calls count under ``launches`` / ``fast_hits`` only), ``triton_launches``
    (warm launches that went through Triton's own Python launcher: no raw launcher bound, or a
    launch hook installed; each costs tens of µs of host time more than a raw launch), ``vendor``
    (plans a tile table's :data:`~tritonblas.tables.VENDOR` entry gave to torch; their calls count
    under ``fallbacks``)."""
    return counters.stats()


def planned_problems() -> list[GemmProblem]:
    """The distinct problems the cold path has planned since the last :func:`clear_caches`, oldest
    first (what a model ran through tritonblas: :mod:`tritonblas.versus` measures these). Problems
    whose sizes GemmProblem refuses are left out."""
    out: dict[GemmProblem, None] = {}
    for key in list(_PLANS):
        try:
            out[key.problem()] = None
        except ValueError:
            continue
    return list(out)


def reset_stats() -> None:
    _STATS.clear()


def clear_caches() -> None:
    """Drop every cached plan, fast entry, shared compiled-kernel binding, workspace, device → profile
    mapping and model selection."""
    with _LOCK:
        _PLANS.clear()
        _VENDOR_KEYS.clear()
        _VENDOR_FAST.clear()
        _TABLE_KEYS.clear()
    launchcache.clear()
    _plan.clear_workspaces()
    clear_device_cache()
    origami.clear_cache()


# --- plans -----------------------------------------------------------------------------------
def _build(key: GemmKey, hw: HardwareProfile, device: torch.device, op: str, ws_why: str | None = None):
    """Cold path: select (or take the forced config), make the plan, cache it. ``ws_why``: the call's
    :func:`ws_reason` (when ``key.ws`` is False), for the error of a forced 'ws' config."""
    if device.type == "cuda":
        with _cuda_guard(device):
            in_capture = torch.cuda.is_current_stream_capturing()
        if in_capture:
            raise RuntimeError(
                f"tritonblas.{op}: {key.problem().describe()} on {device} has no launch plan yet and the "
                "current stream is capturing a CUDA graph; warm up first: run the same call once "
                "(same shapes, dtypes and layouts) before capturing. Nothing was launched, the capture "
                "is unaffected.")
    try:
        problem = key.problem()
    except ValueError as e:  # sizes outside what the kernels address (GemmProblem's range): torch runs it
        msg = f"tritonblas.{op}: {e}; torch runs this problem"
        logger.warning("%s", msg)
        warnings.warn(msg, FallbackWarning, stacklevel=4)
        return _store(key, _FALLBACK)
    from_model = False
    stage = (False, False)
    if key.config is not None and key.config.kind is Kind.WS and not key.ws and ws_available(hw):
        raise ValueError(f"config: {key.config.short()} is the warp-specialised kernel, which cannot run this call "
                         f"({'' if ws_why is None else ws_why + '; '}{_WS_NEEDS})")
    sel = _selection_profile(key, hw)
    if key.config is not None:
        cfg = key.config
    elif (hit := tables.lookup(problem, hw, key.table)) is not None and (key.ws or hit.kind is not Kind.WS):
        _STATS["table_hits"] += 1
        _TABLE_KEYS.add(key)
        if hit is tables.VENDOR:  # measured on this device: torch's own GEMM beats our pick (tritonblas.versus)
            _STATS["vendor"] += 1
            _VENDOR_KEYS.add(key)
            return _store(key, _FALLBACK)
        cfg = hit  # an exact tile-table entry (checked with the shared predicates when loaded)
    else:
        try:
            est = origami.select(problem, sel)
            cfg = est.config
            from_model = True
            if (staged := _align_staged(key, problem, _selection_profile(key, hw, ws=False),  # no 'ws' staged
                                        est.latency_ns)) is not None:
                problem, cfg, stage = staged
        except ValueError as e:
            msg = f"tritonblas.{op}: {e}; torch runs this problem"
            logger.warning("%s", msg)
            warnings.warn(msg, FallbackWarning, stacklevel=4)
            return _store(key, _FALLBACK)
    if torch.are_deterministic_algorithms_enabled() and cfg.kind not in DETERMINISTIC_KINDS:
        # a model pick or a table entry gives way to the best deterministic candidate of the ranking;
        # a forced config=, or a problem with no deterministic candidate, raises (warns if warn_only)
        alt = None if key.config is not None else next(
            (e.config for e in origami.rank(problem, sel, 1 << 30) if e.config.kind in DETERMINISTIC_KINDS), None)
        if alt is not None:
            cfg, from_model = alt, True
        else:
            why = "forced by config=" if key.config is not None else "and no deterministic kernel fits"
            msg = (f"tritonblas.{op}: the {cfg.kind.value} kernel for {problem.describe()} is not deterministic "
                   f"({why}; deterministic: {', '.join(sorted(k.value for k in DETERMINISTIC_KINDS)) or 'none'}), "
                   "and torch.use_deterministic_algorithms(True) is set")
            if not torch.is_deterministic_algorithms_warn_only_enabled():
                raise RuntimeError(msg)
            warnings.warn(msg, UserWarning, stacklevel=4)
    lp = _plan.make_plan(cfg, problem, hw, tma=True, checked=from_model, stage=stage)
    _STATS["plans"] += 1
    if logger.isEnabledFor(logging.DEBUG):
        logger.debug("plan %s -> %s (%s)", problem.describe(), cfg.short(),
                     "config=" if key.config is not None else "model" if from_model else "table")
    return _store(key, lp)


# what gluon_route.ws_reason asks of a call, for the error of a forced 'ws' config
_WS_NEEDS = ("it needs an sm_90 GPU and a Triton with Gluon, 2-D bf16/fp16 operands of one dtype, each row- or "
             "column-major, a bf16/fp16 row-major output, 16-byte-aligned pointers and strides, C rows of whole 16-byte "
             "chunks, alpha 1 and at most F.linear's bias; TRITONBLAS_GLUON=0 turns it off")


def _selection_profile(key: GemmKey, hw: HardwareProfile, ws: bool | None = None) -> HardwareProfile:
    """The profile the model selects ``key``'s config from: ``hw``, without the warp-specialised kernel
    when the call cannot run it (``key.ws`` False, or ``ws`` False: the alignment-staged launch), without
    the promoted fp8 kernels' spill rule for a fast-accumulation call (``key.fp8_fast``)."""
    sel = hw if (key.ws if ws is None else ws) else without_ws(hw)
    return without_promotion(sel) if key.fp8_fast else sel


def _align_staged(key: GemmKey, problem: GemmProblem, hw: HardwareProfile, unstaged_ns: float):
    """(aligned problem, its config, (stage A?, stage B?)) when copying the operands under 16-byte
    alignment into padded buffers (``plan.align_staging_for`` says which) pays by origami's cost
    policy (``origami.staging.staged_pick``), or when only ``out`` is under 16 bytes and the kernels read A
    and B as they are (``plan.reads_as_is``; ``origami.staging.unaligned_out_pick``, nothing staged); else None. Model picks only: a forced config or a tile-table entry runs as it is."""
    from origami.staging import staged_pick, unaligned_out_pick

    if key.align >= 16:
        return None
    stage = _plan.align_staging_for(problem, key.ab_align, key.orders[:2])
    if not any(stage) and _plan.reads_as_is(problem, key.ab_align, key.orders[:2]):
        picked = unaligned_out_pick(problem, hw, unstaged_ns)
    else:
        picked = staged_pick(problem, hw, stage, unstaged_ns)
    return None if picked is None else (picked[0], picked[1].config, stage)


def _store(key: GemmKey, value):
    with _LOCK:
        while len(_PLANS) >= MAX_PLANS:
            old = next(iter(_PLANS))
            del _PLANS[old]
            _TABLE_KEYS.discard(old)  # the key sets follow _PLANS (bounded with it)
            _VENDOR_KEYS.discard(old)
        _PLANS[key] = value
    return value


# --- the warm tier (tritonblas.launchcache holds the entries) -----------------------------------
def run_fast(f: FastEntry, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``gemm(a, b)``'s warm path for an entry ``f`` that :func:`tritonblas.launchcache.hit` returned for (a, b)."""
    out = torch.empty(f.out_shape, dtype=a.dtype, device=a.device)
    if out.data_ptr() & 15 != f.out_align:
        return gemm(a, b, out)
    f.call(a, b, out, None, 1.0, 0.0)
    _STATS["launches"] += 1
    return out


def run_fast_out(f: FastEntry, a: torch.Tensor, b: torch.Tensor, out: torch.Tensor) -> torch.Tensor | None:
    """``gemm(a, b, out)``'s warm path for an entry ``f`` that :func:`tritonblas.launchcache.hit` returned for
    (a, b, out), with the out= bookkeeping of ``tritonblas.matmul(..., out=)`` (the version counter
    bumped, as the op's ADInplaceOrView kernel does); None when ``out`` overlaps ``a`` or ``b``
    (the checked path computes into a temporary and copies)."""
    if _shares_memory(out, a) or _shares_memory(out, b):
        return None
    f.call(a, b, out, None, 1.0, 0.0)
    _STATS["launches"] += 1
    torch.autograd.graph.increment_version(out)
    return out


def fast_lookup(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor | None = None,
                c: torch.Tensor | None = None, config: TileConfig | None = None) -> "FastEntry | None":
    """The warm entry :func:`gemm` would launch for exactly these kernel-level operands (default
    profile; ``out``/``c``/``config`` as given), or None when the next call would take the checked
    path. The entry stays valid for operands with the same shapes, strides, dtypes, devices and
    address classes (``data_ptr() % 16``) under the same environment. Its ``out_shape`` is the
    kernel's output shape."""
    return launchcache.hit(launchcache.fast_key(a, b, out, c, None, config))


def fast_vendor(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor | None = None,
                c: torch.Tensor | None = None) -> bool:
    """Whether a :func:`gemm` call on exactly these kernel-level operands (default profile, no config)
    ran torch because a tile table's :data:`~tritonblas.tables.VENDOR` entry says so (the warm path
    then hands such signatures to torch's own function, :mod:`tritonblas.fastpath`)."""
    return bool(_VENDOR_FAST) and launchcache.fast_key(a, b, out, c, None, None) in _VENDOR_FAST


def overlap(x: torch.Tensor, y: torch.Tensor) -> str:
    """torch's overlap classes of two tensors: "none", "full" (same elements in the same order:
    same address, shape and strides; a size-1 dim's stride is never used, so it may differ) or
    "partial" (any other sharing of memory)."""
    if x.numel() == 0 or y.numel() == 0:
        return "none"
    if x.untyped_storage().data_ptr() != y.untyped_storage().data_ptr():
        return "none"
    if x.data_ptr() == y.data_ptr() and x.shape == y.shape and (x.stride() == y.stride() or all(
            sx == sy for n, sx, sy in zip(x.shape, x.stride(), y.stride()) if n != 1)):
        return "full"

    def span(t: torch.Tensor) -> tuple[int, int]:
        lo = t.data_ptr()
        hi = lo + (1 + sum((n - 1) * abs(st) for n, st in zip(t.shape, t.stride()))) * t.element_size()
        return lo, hi

    (a0, a1), (b0, b1) = span(x), span(y)
    return "partial" if a0 < b1 and b0 < a1 else "none"


def _partly_overlaps(out: torch.Tensor, c: torch.Tensor) -> bool:
    """Whether ``out`` shares memory with ``c`` other than by being it (same address, shape, strides:
    each element is then read before the same program writes it)."""
    return overlap(out, c) == "partial"


def _shares_memory(x: torch.Tensor, y: torch.Tensor) -> bool:
    return x.untyped_storage().data_ptr() == y.untyped_storage().data_ptr() and x.numel() > 0 and y.numel() > 0


def gemm(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor | None = None, *, c: torch.Tensor | None = None,
         alpha: float = 1.0, beta: float = 0.0, profile: Any = None, config: TileConfig | None = None,
         op: str = "mm") -> torch.Tensor:
    """``out = alpha·(a @ b) + beta·c`` (c broadcast to out; ignored when None or beta = 0).

    a: (M, K) or (batch|1, M, K), b: (K, N) or (batch|1, K, N), any strides (stride 0 included);
    out: (M, N) when both are 2-D, else (batch, M, N), allocated when None, any strides.
    Shape/dtype/device checks with torch's messages are the caller's (:mod:`tritonblas.ops`).
    """
    if beta == 0:
        c = None
    gen = tables.GENERATION[0]  # one reading for the warm key and the plan's key (set_table in another thread)
    fkey = launchcache.fast_key(a, b, out, c, profile, config, gen)
    if fkey is not None and (alpha != 1 or (c is not None and beta != 1)):
        # an epilogue the 'ws' kernel lacks (gluon_route.ws_reason): its plan may differ from the plain call's
        # (a @ b, or + F.linear's bias), whose key fast_lookup and the ops' warm paths share
        fkey += ("epilogue",)
    f = launchcache.hit(fkey)
    if f is not None:
        if out is None:
            out = torch.empty(f.out_shape, dtype=a.dtype, device=a.device)
        elif _shares_memory(out, a) or _shares_memory(out, b) or (c is not None and _partly_overlaps(out, c)):
            f = None
        if type(f) is GluonEntry and (alpha != 1 or (c is not None and beta != 1)):
            f = None  # the experiment takes a @ b (+ bias) only: origami's pick runs this one
        if f is not None and out.data_ptr() & 15 == f.out_align:
            f.call(a, b, out, c, float(alpha), float(beta))
            _STATS["launches"] += 1
            return out
    reason = fallback_reason(a, b, c, out)
    if reason is not None:
        _STATS["fallbacks"] += 1
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug("tritonblas.%s: torch runs a %s @ b %s: %s", op, tuple(a.shape), tuple(b.shape), reason)
        return torch_gemm(a, b, out, c, alpha, beta)
    if out is None:
        out = torch.empty(out_shape(a, b), dtype=a.dtype, device=a.device)
    elif _shares_memory(out, a) or _shares_memory(out, b) or (c is not None and _partly_overlaps(out, c)):
        tmp = gemm(a, b, c=c, alpha=alpha, beta=beta, profile=profile, config=config, op=op)
        return out.copy_(tmp)
    if out.numel() == 0 or a.shape[-1] == 0:
        _STATS["empty"] += 1
        if out.numel() and c is not None:
            out.copy_(c.expand(out.shape))
            if beta != 1:
                out.mul_(beta)
        elif out.numel():
            out.zero_()
        return out
    info, tf32, lp, key = _plan_of(a, b, out, c, profile, config, op, alpha, beta, gen)
    if alpha == 1 and config is None and settings.gluon() and key not in _TABLE_KEYS and key not in _VENDOR_KEYS:
        # the experiment replaces origami's pick, never a tile table's entry (a config or VENDOR)
        taken = gluon_route.gluon_gemm(a, b, out, c, beta)
        if taken is not None:
            _STATS["launches"] += 1
            if fkey is not None:
                gluon_route.remember(fkey, a, b, out, taken, profile, info)
            return out
    if lp is _FALLBACK:
        _STATS["fallbacks"] += 1
        if fkey is not None and key in _VENDOR_KEYS:
            with _LOCK:
                if len(_VENDOR_FAST) >= MAX_PLANS:
                    _VENDOR_FAST.clear()
                _VENDOR_FAST.add(fkey)
        return torch_gemm(a, b, out, c, alpha, beta)
    if lp.config.kind is Kind.WS:  # origami's pick (or config=) is the warp-specialised kernel: key.ws held
        taken = gluon_route.ws_gemm(a, b, out, c, beta, lp)
        _STATS["launches"] += 1
        _STATS["ws"] += 1
        if fkey is not None:
            gluon_route.remember(fkey, a, b, out, taken, profile, info)
        return out
    alpha, beta = float(alpha), float(beta)

    def prepare(plan):
        return _plan.prepare_launch(plan, a, b, out, c=c, alpha=alpha, beta=beta, allow_tf32=tf32)

    with _cuda_guard(a.device):
        prepared = prepare(lp)
        if fkey is not None and launchcache.reuse(fkey, lp, info, profile, prepared, a, b, out, c, alpha, beta):
            _STATS["launches"] += 1
            return out
        ran = _run_checked(key, lp, info, prepare, prepared, op)
    if ran is None:
        _STATS["fallbacks"] += 1
        return torch_gemm(a, b, out, c, alpha, beta)
    lp, prepared, compiled = ran
    _STATS["launches"] += 1
    if fkey is not None:
        launchcache.remember(fkey, lp, info, profile, prepared, a, b, out, c, alpha, beta, compiled)
    return out


def scaled_gemm(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor, *, scale_a: torch.Tensor,
                scale_b: torch.Tensor, bias: torch.Tensor | None = None, fast_accum: bool = False,
                profile: Any = None, config: TileConfig | None = None) -> torch.Tensor:
    """``out = scale_a ⊙ (a @ b) ⊙ scale_b + bias`` for 2-D fp8 ``a``, ``b`` into a bf16/fp16/fp32
    ``out`` (the caller, :mod:`tritonblas.scaled`, checked torch._scaled_mm's rules): the plan of
    this key (origami's pick for the fp8 problem, cached like every other), launched with the scales
    and bias in the epilogue. Returns ``out``, or None when our kernels cannot run the problem (no
    plan, or every pick refused by the compiler): the caller runs its fallback (:mod:`tritonblas.scaled`
    knows which of torch's fp8 recipes torch's own kernel accepts). ``config``: a forced TileConfig
    instead of the pick (as :func:`gemm`'s; benchmarks/scaled_mm_configs.py times the space's configs
    with the scale epilogue this way)."""
    if out.numel() == 0:
        return out
    if a.shape[-1] == 0:
        _STATS["empty"] += 1
        out.zero_()
        return out.add_(bias) if bias is not None else out
    if (profile is None and config is None and settings.gluon()
            and gluon_route.gluon_scaled(a, b, out, scale_a, scale_b, bias, fast_accum)):
        _STATS["launches"] += 1
        return out
    # the kernel's own views of the scales (what prepare_launch binds: one element, or a unit-stride
    # vector over M / N), and the bias as a broadcast C with beta = 1 (the epilogue adds beta·C after
    # scaling, which is what torch's bias is), so the warm entry rebinds them like any operand
    sa = scale_a.reshape(1) if scale_a.numel() == 1 else scale_a.reshape(-1)
    sb = scale_b.reshape(1) if scale_b.numel() == 1 else scale_b.reshape(-1)
    beta = 0.0 if bias is None else 1.0
    fkey = launchcache.fast_key(a, b, out, bias, profile, config)
    if fkey is not None:
        fkey += (3, sa.shape, sa.stride(), sa.dtype, sa.device, sa.data_ptr() & 15,
                 sb.shape, sb.stride(), sb.dtype, sb.device, sb.data_ptr() & 15, bool(fast_accum))
    f = launchcache.hit(fkey)
    if f is not None and out.data_ptr() & 15 == f.out_align:
        f.call(a, b, out, bias, 1.0, beta, sa, sb)
        _STATS["launches"] += 1
        _STATS["fast_hits"] += 1
        return out
    info, _, lp, key = _plan_of(a, b, out, bias, profile, config, "scaled_mm", fp8_fast=bool(fast_accum))

    def prepare(plan):
        return _plan.prepare_launch(plan, a, b, out, c=bias, beta=beta, scale_a=sa, scale_b=sb,
                                    fp8_fast_accum=fast_accum)

    ran = None
    if lp is not _FALLBACK:
        with _cuda_guard(a.device):
            ran = _run_checked(key, lp, info, prepare, None, "scaled_mm")
    if ran is None:
        _STATS["fallbacks"] += 1
        return None
    lp, prepared, compiled = ran
    _STATS["launches"] += 1
    if fkey is not None:
        launchcache.remember(fkey, lp, info, profile, prepared, a, b, out, bias, 1.0, beta, compiled, sa, sb)
    return out


def plan_for(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor | None = None, *, c: torch.Tensor | None = None,
             profile: Any = None, config: TileConfig | None = None, alpha: float = 1.0,
             beta: float = 1.0) -> _plan.LaunchPlan | None:
    """The plan :func:`gemm` would launch for these kernel-level operands (built and cached if
    new); None when torch would run it (fallback, empty output or K = 0). ``c`` is added with
    ``beta`` (1 here: an addmm; 0 drops it, as gemm does) and the product scaled by ``alpha``: the
    epilogue decides whether the warp-specialised kernel may run the call (:func:`ws_reason`)."""
    if beta == 0:
        c = None
    if fallback_reason(a, b, c, out) is not None:
        return None
    if out is None:
        out = torch.empty(out_shape(a, b), dtype=a.dtype, device=a.device)
    if out.numel() == 0 or a.shape[-1] == 0:
        return None
    lp = _plan_of(a, b, out, c, profile, config, "plan_for", alpha, beta)[2]
    return None if lp is _FALLBACK else lp


def _plan_of(a, b, out, c, profile: Any, config: TileConfig | None, op: str, alpha: float = 1.0,
             beta: float = 0.0, generation: int | None = None,
             fp8_fast: bool = False) -> tuple[DeviceInfo, bool, Any, GemmKey]:
    """(device info, TF32 allowed, the cached plan or _FALLBACK, the key) for these operands: the
    checked path's key, built on a miss (the cold path, :func:`_build`). ``alpha``/``beta``: the
    epilogue, which decides whether the warp-specialised kernel may run the call (:func:`ws_reason`).
    ``generation``: the tile-table generation the caller read (default: now). ``fp8_fast``: an fp8 call
    with fast accumulation (``GemmKey.fp8_fast``)."""
    info = device_info(a.device, profile)
    tf32 = a.dtype == torch.float32 and allow_tf32()
    why = gluon_route.ws_reason(a, b, out, c, alpha, beta, info.plan_profile)
    key = GemmKey.from_tensors(a, b, out, profile=info.plan_profile, tf32=tf32, c=c, config=config, ws=why is None,
                               table=tables.table_token(generation), fp8_fast=fp8_fast)
    lp = _PLANS.get(key)
    if lp is None:
        lp = _build(key, info.plan_profile, a.device, op, why)
    return info, tf32, lp, key


# --- a config the compiler refuses ------------------------------------------------------------
REPLANS = 3  # next picks tried after Triton refuses a model pick for lack of resources


def _out_of_resources() -> tuple:
    try:
        from triton.runtime.errors import OutOfResources
    except ImportError:  # pragma: no cover - a Triton without the class
        return ()
    return (OutOfResources,)


def _resources(cfg: TileConfig) -> tuple:
    """What a config's shared memory and registers depend on: its tile, warps and stages (its kind,
    GROUP_M and grid change neither)."""
    return (cfg.block_m, cfg.block_n, cfg.block_k, cfg.num_warps, cfg.num_stages)


def _replan(key: GemmKey, hw: HardwareProfile, failed: list, op: str):
    """The plan of ``key`` from the model's best config whose resources (:func:`_resources`) differ from
    every refused one in ``failed`` (deterministic kinds only under
    ``torch.use_deterministic_algorithms``), stored for the key; _FALLBACK when none is left."""
    problem = key.problem()
    det = torch.are_deterministic_algorithms_enabled()
    refused = {_resources(f) for f in failed}
    for est in origami.rank(problem, _selection_profile(key, hw), 1 << 30):
        cfg = est.config
        if _resources(cfg) in refused or (det and cfg.kind not in DETERMINISTIC_KINDS):
            continue
        lp = _plan.make_plan(cfg, problem, hw, tma=True, checked=True)
        _STATS["plans"] += 1
        return _store(key, lp)
    return _store(key, _FALLBACK)


def _run_checked(key: GemmKey, lp, info: DeviceInfo, prepare: Callable, prepared, op: str):
    """``(plan, prepared, compiled)`` for the first plan of ``key`` that Triton builds, starting with ``lp``
    (``prepared`` is its launch, or None). When Triton refuses a config for lack of resources
    (OutOfResources: shared memory or registers — origami's predicates and this compiler disagree,
    e.g. another Triton version's allocation), nothing was launched: the key is replanned with the
    model's next pick (:func:`_replan`; a FallbackWarning names both), at most :data:`REPLANS` times;
    None when no config is left (the caller runs torch). A forced ``config=`` is the caller's choice:
    its refusal is a RuntimeError naming it."""
    failed: list = []
    oor = _out_of_resources()
    while True:
        if prepared is None:
            prepared = prepare(lp)
        try:
            return lp, prepared, prepared.run_kernel()
        except oor as e:
            cfg = lp.config
            need = f"{getattr(e, 'name', 'resources')}: needs {getattr(e, 'required', '?')}, " \
                   f"the device has {getattr(e, 'limit', '?')}"
            if key.config is not None:
                raise RuntimeError(f"tritonblas.{op}: config={cfg.short()} does not fit this device ({need})") from e
            failed.append(cfg)
            lp = _replan(key, info.plan_profile, failed, op) if len(failed) <= REPLANS else _store(key, _FALLBACK)
            nxt = "torch runs it" if lp is _FALLBACK else f"using the next pick, {lp.config.short()}"
            msg = (f"tritonblas.{op}: Triton refused {cfg.short()} for {key.problem().describe()} ({need}); "
                   f"origami's resource predicates and this compiler disagree; {nxt}")
            logger.warning("%s", msg)
            warnings.warn(msg, FallbackWarning, stacklevel=4)
            if lp is _FALLBACK:
                return None
            prepared = None


def explain(a: torch.Tensor, b: torch.Tensor, *, profile: Any = None, config: TileConfig | None = None,
            what: str = "") -> str:
    """What :func:`gemm` does with these kernel-level operands: profile, plan, predicted time and the
    model's breakdown (``origami.explain``)."""
    head = f"tritonblas: {what or 'a @ b'}: a {tuple(a.shape)} {a.dtype} @ b {tuple(b.shape)} {b.dtype} on {a.device}"
    reason = fallback_reason(a, b)
    if reason is not None:
        return f"{head}\n  torch runs it (not supported by the kernels: {reason})"
    out = torch.empty(out_shape(a, b), dtype=a.dtype, device=a.device)
    if out.numel() == 0 or a.shape[-1] == 0:
        return f"{head}\n  no launch: {'empty output' if out.numel() == 0 else 'K = 0, the result is zeros'}"
    info = device_info(a.device, profile)
    hw = info.plan_profile
    tf32 = a.dtype == torch.float32 and allow_tf32()
    why = gluon_route.ws_reason(a, b, out, profile=hw)
    key = GemmKey.from_tensors(a, b, out, profile=hw, tf32=tf32, config=config, ws=why is None)
    problem = key.problem()
    sel = _selection_profile(key, hw)  # what _build selected from: without the 'ws' kernel when the call cannot run it
    lines = [head,
             f"  profile: {hw.name} ({hw.arch}, {info.compute_units} CUs"
             f"{'' if info.capped is None else ' live, of ' + str(info.profile.compute_units)}; from {info.how})",
             f"  problem: {problem.describe()} (alignment {key.align} B, layouts a {key.a_layout.value} "
             f"b {key.b_layout.value}{', TF32 allowed' if tf32 else ''})"]
    lp = _PLANS.get(key) or _build(key, hw, a.device, "explain", why)
    if lp is _FALLBACK:
        lines.append("  the tile table's entry is VENDOR (measured: torch's GEMM is faster): torch runs it"
                     if key in _VENDOR_KEYS else "  the model found no valid config: torch runs it")
        return "\n".join(lines)
    cached = "forced by config=" if config is not None else "model's pick"
    kernel = lp.kernel_name if lp.problem != problem else _plan.resolve_kernel_name(lp, a, b)
    lines.append(f"  config: {lp.config.short()} ({cached}) -> {kernel} grid {lp.grid[0]}")
    if lp.problem != problem:  # alignment staging (_align_staged): the kernel runs the aligned problem
        unstaged = origami.select(problem, sel)
        if lp.stage_a or lp.stage_b:
            which = " and ".join(n for n, s in (("a", lp.stage_a), ("b", lp.stage_b)) if s)
            copy_us = _plan.staging_copy_ns(problem, hw, (lp.stage_a, lp.stage_b)) / 1e3
            lines.append(f"  staging: {which} copied into 16-byte-aligned buffers before each launch (predicted "
                         f"{copy_us:.2f} us; unstaged pick {unstaged.config.short()} predicted "
                         f"{unstaged.latency_ns / 1e3:.2f} us)")
        else:
            how = "through TMA" if lp.tma else "with 16-byte vector loads"
            lines.append(f"  unaligned out only: a and b read {how} as they are, out stored at its own "
                         f"alignment; nothing copied (the unaligned problem's pick {unstaged.config.short()} "
                         f"predicted {unstaged.latency_ns / 1e3:.2f} us)")
        problem = lp.problem
    if config is None:
        est = origami.select(problem, sel)
        terms = ", ".join(f"{n} {v / 1e3:.2f}" for n, v in est.terms.items() if v > 0)
        lines.append(f"  predicted: {est.latency_ns / 1e3:.2f} us, {est.tflops(problem):.1f} TFLOP/s, "
                     f"bound: {est.bound}; terms (us): {terms}")
    lines.append(origami.explain(problem, sel))
    return "\n".join(lines)


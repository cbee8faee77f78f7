"""Tensors → ``GemmKey`` → cached ``LaunchPlan`` → kernel launch. The only torch → DType map.

``gemm(a, b, out, c=..., alpha=..., beta=...)`` is what the custom ops of :mod:`tritonblas.ops` run:

- **Warm path**: one flat tuple built from the tensors — per operand (shape, strides, dtype, device,
  ``data_ptr() % 16``), plus the TF32 flag, ``$TRITONBLAS_PROFILE`` / ``$ORIGAMI_PROFILE_DIR`` (read
  per call, so changes are honoured), ``profile=`` and ``config=`` — looked up in ``_FAST``. A hit
  holds everything ``plan.prepare_launch`` derived once for that key (kernel, grid, constexpr and
  option kwargs, the integer sizes/strides, TMA descriptor templates, workspace sizes and, on a GPU,
  Triton's ``CompiledKernel`` and its raw C launcher), so the call only binds the tensor pointers
  (and alpha/beta) and launches; see :class:`_Fast`. ``ops.matmul`` looks the entry up before its
  own checks (``ops._warm_matmul``). Measured on the H200 host (2026-11-30, c7aaf5d): 16.0 µs per
  warm 64³ call against torch.matmul's 11.3 µs. Everything else in the key being equal, Triton's own
  specialisation (pointer alignment, integer values) is equal too, so the compiled kernel is the one
  ``kernel[grid](...)`` would pick. A miss (anything differs: a new alignment or stride class,
  device, dtype, env, profile, a cleared device cache) takes the checked path below and records
  the fast entry after it has verified, argument by argument, that its binding reproduces
  ``prepare_launch``'s exactly (no entry otherwise).
- **Shared compiled kernels**: on a GPU, each verified binding (Triton's ``CompiledKernel``, the
  constexpr tail, the raw launcher) is also kept in ``_COMPILED`` under a specialisation key
  (:func:`_spec_key`: the kernel, its constexprs and options, the device, Triton's debug knobs, and
  per argument the classes Triton 3.6 specialises on, and finer). A miss whose launch has an equal
  key — typically a new M or N of a config already run — launches through that binding directly
  (:func:`_reuse`: no ``JITFunction.run``, no re-binding), after ``prepare_launch`` and the
  argument-by-argument check of its own fast entry. Launch hooks, pre-run hooks, CUDA-graph
  capture, staged operands and CPU tensors keep Triton's own launch.
- **Checked path**: build the frozen :class:`GemmKey` from the tensors (sizes, dtypes, layout orders,
  alignment class, device index, profile hash, TF32 flag, epilogue) and look it up in ``_PLANS``;
  then ``plan.prepare_launch`` and the launch. The model never runs.
- **Cold path**: one ``origami.select`` (one numba call over the candidate array) or the forced
  ``config=`` (checked by ``make_plan`` with the shared predicates: ``ValueError`` naming every
  violation), one ``make_plan`` (asking for the TMA kernel; the plan and ``launch`` fall back to the
  pointer kernel when the problem or the tensors are not 16-byte aligned), stored in the bounded
  ``_PLANS`` (at most :data:`MAX_PLANS`, oldest dropped first; :func:`clear_caches` empties it).

Semantics that the dispatcher owns:

- **Fallback**: dtypes other than fp32/fp16/bf16 (fp64, integers, complex, fp8 — torch has no plain
  fp8 matmul), non-strided layouts, devices other than CUDA/ROCm, and CPU tensors when
  ``TRITON_INTERPRET`` is not 1 run torch's own op (``stats()['fallbacks']`` counts them). CPU tensors
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

import contextlib
import inspect
import logging
import operator
import os
import threading
import warnings
from collections import defaultdict
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Callable, Mapping

import torch

import origami
from origami.space import without_ws, ws_available
from origami.config import Kind, TileConfig
from origami.hardware import HardwareProfile, ProfileError
from origami.problem import DType, GemmProblem, Layout
from tritonblas import _device, _fastlaunch, _interpreter, settings, tables
from tritonblas.log import FallbackWarning, logger
from tritonblas import plan as _plan
from tritonblas._device import ENV_PROFILE, DeviceError, DeviceInfo, clear_device_cache, profile_for_device

__all__ = [
    "DTYPES", "KERNEL_DTYPES", "DETERMINISTIC_KINDS", "MAX_PLANS", "GemmKey",
    "dtype_of", "allow_tf32", "fallback_reason", "device_info", "has_profile", "gemm", "plan_for", "explain",
    "stats", "reset_stats", "clear_caches", "warm_has_profile", "scaled_gemm", "gluon_eligible", "GluonEntry", "torch_gemm", "placement_reason", "fast_lookup", "fast_valid", "fast_context", "launch_fast", "launch_ready", "launch_warm",
    "raw_ready", "count", "count_all", "overlap", "FastEntry", "run_fast", "run_fast_out",
]

# torch dtype → DType: the inverse of plan.TORCH_DTYPES (fp32 storage maps to FP32; TF32 is a
# per-call choice, see allow_tf32).
DTYPES: Mapping[torch.dtype, DType] = MappingProxyType(
    {t: d for d, t in _plan.TORCH_DTYPES.items() if d is not DType.TF32})
# What matmul/addmm/bmm/linear run on our kernels (same dtype for a, b and the result).
KERNEL_DTYPES = frozenset((torch.float32, torch.float16, torch.bfloat16))
DETERMINISTIC_KINDS = frozenset((Kind.DP, Kind.PERSISTENT, Kind.STREAMK, Kind.SPLITK, Kind.WS))
MAX_PLANS = 4096

_FALLBACK = object()  # a _PLANS value: the model found no config; torch runs this key
_PLANS: dict[GemmKey, Any] = {}
_VENDOR_KEYS: set = set()  # GemmKeys whose plan a tile table's VENDOR entry gave to torch
_VENDOR_FAST: set = set()  # the warm-path keys (_fast_key) of calls that ran torch for such a key
_TABLE_KEYS: set = set()  # GemmKeys whose config (or VENDOR) came from a tile table: no Gluon experiment
_FAST: dict[tuple, "_Fast"] = {}  # fast key (see _fast_key) → everything a warm launch needs
_CLEARS = [0]  # clear_caches calls so far: part of fast_context, so warm signatures kept elsewhere lapse
_LOCK = threading.Lock()
_STATS: defaultdict = defaultdict(int)  # a Counter's += costs 2x a (default)dict's: ~80 ns per count (CPU)


def dtype_of(t: torch.dtype, *, tf32: bool = False) -> DType:
    """The DType of a torch dtype (``tf32=True`` turns fp32 into TF32). KeyError if there is none."""
    d = DTYPES[t]
    return DType.TF32 if (tf32 and d is DType.FP32) else d


def allow_tf32() -> bool:
    """Whether torch lets fp32 matmuls use TF32 now (legacy flag, or the fp32_precision API)."""
    try:
        return bool(torch._C._get_cublas_allow_tf32())
    except RuntimeError:  # legacy and new APIs were mixed: the new one wins, as in cuBLAS
        return getattr(torch.backends.cuda.matmul, "fp32_precision", "ieee") == "tf32"


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
    the model selects without it (``origami.space.without_ws``).
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

    @classmethod
    def from_tensors(cls, a: torch.Tensor, b: torch.Tensor, out: torch.Tensor, *, profile: HardwareProfile,
                     tf32: bool = False, c: torch.Tensor | None = None,
                     config: TileConfig | None = None, ws: bool = False, table: tuple | None = None) -> "GemmKey":
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
                   ab_align=(_plan.align_class(la), _plan.align_class(lb)), ws=ws)

    def problem(self) -> GemmProblem:
        return GemmProblem(self.m, self.n, self.k, a_dtype=self.a_dtype, b_dtype=self.b_dtype,
                           c_dtype=self.c_dtype, a_layout=self.a_layout, b_layout=self.b_layout,
                           batch=self.batch, align_bytes=self.align)


# --- support and profiles --------------------------------------------------------------------
_is_dynamo_compiling = torch.compiler.is_dynamo_compiling  # dynamo folds it to True while tracing; False
# whenever code really runs (is_compiling() is True for the whole compile session, AOT and Inductor included)


def _placement_reason(t: torch.Tensor, dev: torch.device) -> str | None:
    if t.layout != torch.strided:
        return f"layout {t.layout}"
    # while dynamo traces (enable()'s routes under torch.compile), these C queries are not traceable
    # (a graph break, an error under fullgraph=True): the custom op's own call of dispatch.gemm
    # checks the real tensors at run time
    if not _is_dynamo_compiling():
        if t.is_neg():  # a lazily negated view (e.g. ``z.conj().imag``): the kernels read the stored values
            return "a negative-bit view (is_neg())"
        if t._is_zerotensor():  # autograd's efficient zero tensor: no storage to read
            return "an efficient zero tensor (no storage)"
    if t.device != dev:
        return f"tensors on {dev} and {t.device}"
    return None


def _device_reason(dev: torch.device) -> str | None:
    if dev.type == "cpu":
        return None if _interpreter.interpreting() else "CPU tensors (set TRITON_INTERPRET=1 to run the kernels)"
    if dev.type != "cuda":
        return f"device {dev}"
    return None


def fallback_reason(*tensors: torch.Tensor | None) -> str | None:
    """Why torch (not our kernels) must run a GEMM on these tensors; None when ours can."""
    ts = [t for t in tensors if t is not None]
    dev, dt = ts[0].device, ts[0].dtype
    for t in ts:
        r = _placement_reason(t, dev)
        if r is not None:
            return r
        if t.dtype != dt:
            return f"dtypes {dt} and {t.dtype}"
    if dt not in KERNEL_DTYPES:
        return f"dtype {dt}"
    return _device_reason(dev)


def placement_reason(*tensors: torch.Tensor | None) -> str | None:
    """:func:`fallback_reason` without the dtype rules (the scaled fp8 GEMM has its own): why our
    kernels cannot run on these tensors' layouts and devices; None when they can."""
    ts = [t for t in tensors if t is not None]
    dev = ts[0].device
    for t in ts:
        r = _placement_reason(t, dev)
        if r is not None:
            return r
    return _device_reason(dev)


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
    return {k: _STATS.get(k, 0) for k in ("launches", "plans", "empty", "fallbacks", "routed", "table_hits",
                                   "intercepted", "fast_hits", "ws", "triton_launches", "vendor")}


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
        _CLEARS[0] += 1
        _PLANS.clear()
        _FAST.clear()
        _VENDOR_KEYS.clear()
        _VENDOR_FAST.clear()
        _TABLE_KEYS.clear()
        _COMPILED.clear()
        _SPLITS.clear()
    _plan.clear_workspaces()
    clear_device_cache()
    origami.clear_cache()


# --- plans -----------------------------------------------------------------------------------
def _cuda_guard(device: torch.device):
    return torch.cuda.device(device) if device.type == "cuda" else contextlib.nullcontext()


def _build(key: GemmKey, hw: HardwareProfile, device: torch.device, op: str, ws_why: str | None = None):
    """Cold path: select (or take the forced config), make the plan, cache it. ``ws_why``: the call's
    :func:`ws_reason` (when ``key.ws`` is False), for the error of a forced 'ws' config."""
    if device.type == "cuda":
        with _cuda_guard(device):
            capturing = torch.cuda.is_current_stream_capturing()
        if capturing:
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
            if (staged := _align_staged(key, problem, without_ws(hw), est.latency_ns)) is not None:
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


# what ws_reason asks of a call, for the error of a forced 'ws' config
_WS_NEEDS = ("it needs an sm_90 GPU and a Triton with Gluon, 2-D bf16/fp16 operands of one dtype, each row- or "
             "column-major, a bf16/fp16 row-major output, 16-byte-aligned pointers and strides, C rows of whole 16-byte "
             "chunks, alpha 1 and at most F.linear's bias; TRITONBLAS_GLUON=0 turns it off")


def _selection_profile(key: GemmKey, hw: HardwareProfile) -> HardwareProfile:
    """The profile the model selects ``key``'s config from: ``hw``, without the warp-specialised kernel
    when the call cannot run it (``key.ws`` False)."""
    return hw if key.ws else without_ws(hw)


def _align_staged(key: GemmKey, problem: GemmProblem, hw: HardwareProfile, unstaged_ns: float):
    """(aligned problem, its config, (stage A?, stage B?)) when copying the operands under 16-byte
    alignment into padded buffers (``plan.align_staging_for`` says which) pays by origami's cost
    policy (``origami.staging.staged_pick``); else None. Model picks only: a forced config or a
    tile-table entry runs as it is."""
    from origami.staging import staged_pick

    if key.align >= 16:
        return None
    stage = _plan.align_staging_for(problem, hw, key.ab_align, key.orders[:2])
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



# --- the fast path ---------------------------------------------------------------------------
_ENV_PROFILE_DIR = settings.ENV_PROFILE_DIR
_ENV_INTERPRET = settings.ENV_INTERPRET
_environ_get = os.environ.get


# the environment that picks the profile, the table or the Gluon experiment, read per call (settings.raw_reader)
_env_now = settings.raw_reader(ENV_PROFILE, _ENV_PROFILE_DIR, _ENV_INTERPRET, tables.ENV_TABLE, settings.ENV_GLUON)
_deterministic = torch.are_deterministic_algorithms_enabled
_N_FIXED = 9  # prepare_launch's args: 9 tensors, then the integers, then alpha and beta


def _fast_key(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor | None, c: torch.Tensor | None,
              profile: Any, config: TileConfig | None, generation: int | None = None) -> tuple | None:
    """Everything that decides a launch but the tensors' addresses and alpha/beta, as one flat tuple.

    Per operand: shape, strides, dtype, device, ``data_ptr() % 16`` (which fixes Triton's pointer
    specialisation and, with the strides, the alignment/edge classes and the TMA check) and the
    unreadable bit: a lazily negated view or an efficient zero tensor (no storage, ``data_ptr()``
    0), which the checked path sends to torch, so the warm entry of its plain twin must not take it
    (a zero-tensor bias would have been launched as a null pointer). Then the TF32 flag, the
    environment that picks the profile, the tile-table generation (``generation``, else the current
    one), ``profile=``, ``config=``. None when a tensor has no strides (sparse and other layouts: the
    checked path sends those to torch).
    """
    try:
        key = (a.shape, a.stride(), a.dtype, a.device, a.data_ptr() & 15, a.is_neg() or a._is_zerotensor(),
               b.shape, b.stride(), b.dtype, b.device, b.data_ptr() & 15, b.is_neg() or b._is_zerotensor())
        if out is not None:
            key += (1, out.shape, out.stride(), out.dtype, out.device, out.data_ptr() & 15,
                    out.is_neg() or out._is_zerotensor())
        if c is not None:
            key += (2, c.shape, c.stride(), c.dtype, c.device, c.data_ptr() & 15, c.is_neg() or c._is_zerotensor())
    except (RuntimeError, NotImplementedError):
        return None
    if profile is not None and type(profile) is not str:
        profile = ("id", id(profile))  # the entry keeps the object alive, so the id is not reused
    return (*key, a.dtype is torch.float32 and allow_tf32(), _env_now(),
            tables.GENERATION[0] if generation is None else generation, profile, config, _deterministic())


def _desc_template(d) -> tuple:
    return (type(d), {k: v for k, v in vars(d).items() if k != "base"})


def _desc(template: tuple, base: torch.Tensor):
    """A TensorDescriptor like the validated one ``prepare_launch`` built for this key, over ``base``
    (same shape, strides, block and pointer alignment class: its checks would pass again)."""
    cls, fields = template
    d = cls.__new__(cls)
    d.__dict__.update(fields)
    d.base = base
    return d


class FastEntry:
    """What a warm call needs for one fast key: the checked path's ``PreparedLaunch`` minus its tensors.

    ``call(a, b, out, c, alpha, beta)`` launches on the current stream of the tensors' device: on a
    GPU through ``raw`` (:mod:`tritonblas._fastlaunch`: Triton's C launcher with integer pointers and
    cached descriptor expansions, bound and checked against Triton's own arguments when the entry
    was recorded), else through ``launch(args(...))``: ``args`` rebuilds the kernel's positional
    arguments and ``launch`` runs Triton's ``CompiledKernel.run`` (what ``JITFunction.run`` calls
    once it has bound and looked up the kernel) or, under the interpreter or with a Triton launch
    hook installed (a profiler), ``kernel[grid](*args, **kwargs)``.
    """

    __slots__ = ("plan", "info", "devkey", "profile_ref", "out_shape", "out_align", "kernel", "grid", "kwargs",
                 "ints", "a_desc", "b_desc", "ws", "device", "cuda_index", "run", "function", "packed", "tail", "raw",
                 "staged")

    def call(self, a, b, out, c, alpha: float, beta: float, sa=None, sb=None) -> None:
        """Launch for these tensors (``sa``/``sb``: the epilogue's scale vectors of a scaled entry, bound
        at the ScaleA/ScaleB positions): through the raw launcher when one is bound and no Triton launch
        hook is installed, else ``launch(args(...))``. A staged entry (``staged``: (operand position,
        buffer major) of each operand the plan copies) first stages a and b as the checked path does
        (fresh buffers from the caching allocator, ``plan.stage_copy`` on the current stream) and
        launches on the buffers (H200 host, a78d6e5: 46-81 us per staged call in all, against
        336-555 us through the checked path; benchmarks/results/diag_staging_h200_a78d6e5.txt)."""
        if self.staged:
            a, b = self._stage(a, b)
        raw = self.raw
        if raw is None or _hooks_on():
            _STATS["triton_launches"] += 1
            self.launch(self.args(a, b, out, c, alpha, beta, sa, sb))
            return
        idx = self.cuda_index
        if _get_device() != idx:
            with torch.cuda.device(idx):
                self._call_raw(raw, idx, a, b, out, c, alpha, beta, sa, sb)
        else:
            self._call_raw(raw, idx, a, b, out, c, alpha, beta, sa, sb)

    def call_ready(self, a, b, out, c, alpha: float, beta: float) -> None:
        """:meth:`call` for an entry whose raw launch was just found ready (``raw_ready``)."""
        idx = self.cuda_index
        if _get_device() != idx:
            with torch.cuda.device(idx):
                self._call_raw(self.raw, idx, a, b, out, c, alpha, beta)
            return
        # _call_raw, inlined: the warm path's launch (one Python frame less per call)
        raw, stream = self.raw, _raw_stream(idx)
        ws, cnt = (None, None) if self.ws is None else self._workspace(idx, stream)
        raw(self.grid[0], stream, self.raw_args(raw, a, b, out, c, alpha, beta, ws, cnt))

    def _stage(self, a, b) -> tuple:
        """(a, b) as the kernel binds them: fresh staging buffers (``plan.staging_buffer``, of the
        majors recorded with the entry) filled from a and b (``plan.stage_copy``, current stream)."""
        guard = torch.cuda.device(self.cuda_index) if self.cuda_index is not None and \
            _get_device() != self.cuda_index else contextlib.nullcontext()
        with guard:
            ops, copies = [a, b], []
            for i, order in self.staged:
                ops[i] = _plan.staging_buffer(ops[i], order, copies)
            if len(copies) != len(self.staged):
                # the key fixes every input of that (shapes, strides, alignment class): never here
                raise RuntimeError("tritonblas: a staged fast entry's operands did not stage as recorded "
                                   f"({self.plan.config.short()}); please report this")
            for buffer, source in copies:
                _plan.stage_copy(buffer, source)
        return ops[0], ops[1]

    def _call_raw(self, raw, idx: int, a, b, out, c, alpha: float, beta: float, sa=None, sb=None) -> None:
        stream = _raw_stream(idx)
        if self.ws is None:
            ws = cnt = None
        else:
            ws, cnt = self._workspace(idx, stream)
        raw(self.grid[0], stream, self.raw_args(raw, a, b, out, c, alpha, beta, ws, cnt, sa, sb))

    def raw_args(self, raw, a, b, out, c, alpha: float, beta: float, ws, cnt, sa=None, sb=None) -> tuple:
        """The raw launcher's kernel arguments: pointers as integers, descriptors expanded (cached)."""
        po = out.data_ptr()
        pa = raw.expand(0, a.data_ptr()) if self.a_desc is not None else (a.data_ptr(),)
        pb = raw.expand(1, b.data_ptr()) if self.b_desc is not None else (b.data_ptr(),)
        pw, pn = (po, po) if ws is None else (ws.data_ptr(), cnt.data_ptr())
        return (*pa, *pb, po if c is None else c.data_ptr(), po, po, po if sa is None else sa.data_ptr(),
                po if sb is None else sb.data_ptr(), pw, pn, *self.ints, alpha, beta, *self.tail)

    def _workspace(self, idx: int, stream: int):
        """``plan.workspace`` for this device and stream, with its cache read directly when not
        capturing (what ``plan.workspace`` would return: same key, large enough)."""
        if stream == 0 and not _capturing():
            ws = _plan.WORKSPACES.get(("cuda", idx, stream))
            if ws is not None and ws[0].numel() >= self.ws[0] and ws[1].numel() >= self.ws[1]:
                return ws
        return _plan.workspace(self.device, *self.ws)

    def args(self, a, b, out, c, alpha: float, beta: float, sa=None, sb=None) -> tuple:
        a_arg = a if self.a_desc is None else _desc(self.a_desc, a)
        b_arg = b if self.b_desc is None else _desc(self.b_desc, b)
        if self.ws is None:
            ws = cnt = out
        else:
            ws, cnt = _plan.workspace(self.device, *self.ws)
        return (a_arg, b_arg, out if c is None else c.expand(self.out_shape), out, out,
                out if sa is None else sa, out if sb is None else sb, ws, cnt, *self.ints, alpha, beta)

    def launch(self, args: tuple) -> None:
        idx = self.cuda_index
        if idx is None:
            with _interpreter.serial():
                self.kernel[self.grid](*args, **self.kwargs)
            return
        if torch.cuda.current_device() != idx:
            with torch.cuda.device(idx):
                self._launch_cuda(idx, args)
        else:
            self._launch_cuda(idx, args)

    def _launch_cuda(self, idx: int, args: tuple) -> None:
        hooks = _triton_runtime_knobs()
        if self.run is None or _hooked(hooks.launch_enter_hook) or _hooked(hooks.launch_exit_hook):
            self.kernel[self.grid](*args, **self.kwargs)
            return
        self.run(self.grid[0], 1, 1, torch.cuda.current_stream(idx).cuda_stream if _raw_stream is None
                 else _raw_stream(idx), self.function, self.packed, None, None, None, *args, *self.tail)


_Fast = FastEntry  # the name the tests and older code use


_hooked = _fastlaunch.hooked  # one predicate for "a launch hook is installed"


def _hooks_on() -> bool:
    hooks = (_KNOBS or _triton_knobs()).runtime  # _triton_runtime_knobs() without its two calls
    return _hooked(hooks.launch_enter_hook) or _hooked(hooks.launch_exit_hook)


_get_device = torch._C._cuda_getDevice if hasattr(torch._C, "_cuda_getDevice") else torch.cuda.current_device
_capturing = (torch._C._cuda_isCurrentStreamCapturing if hasattr(torch._C, "_cuda_isCurrentStreamCapturing")
              else torch.cuda.is_current_stream_capturing)


try:
    from torch._C import _cuda_getCurrentRawStream as _raw_stream  # what Triton's driver uses
except ImportError:  # pragma: no cover - a torch without CUDA bindings
    _raw_stream = None

_KNOBS = None


def _triton_knobs():
    global _KNOBS
    if _KNOBS is None:
        from triton import knobs

        _KNOBS = knobs
    return _KNOBS


def _triton_runtime_knobs():
    return _triton_knobs().runtime


def _same_arg(x, y) -> bool:
    """Whether two kernel arguments launch identically (tensors: same address, dtype, shape, strides)."""
    if x is y:
        return True
    if isinstance(x, torch.Tensor) or isinstance(y, torch.Tensor):
        return (isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor) and x.data_ptr() == y.data_ptr()
                and x.dtype == y.dtype and x.shape == y.shape and x.stride() == y.stride())
    if type(x) is not type(y):
        return False
    if hasattr(x, "base") and hasattr(x, "block_shape"):  # TensorDescriptor
        return x.base is y.base and vars(x) == vars(y)  # the bases compare by identity
    return x == y


def _devkey(device: torch.device, profile: Any) -> tuple:
    """The ``_device.CACHE`` key of the mapping a warm entry for ``device`` was built under (the
    non-strict lookup ``device_info`` makes): a warm entry holds while that key maps to its info."""
    return (device.index if device.type == "cuda" else None, False,
            _device.override_key(profile if profile is not None else (_environ_get(ENV_PROFILE) or None)),
            _environ_get(_ENV_PROFILE_DIR))


def _fast_entry(lp, info: DeviceInfo, profile: Any, prepared, a, b, out, c, alpha: float,
                beta: float, sa=None, sb=None) -> "_Fast | None":
    """The fast entry for a launch the checked path prepared, not yet bound to a compiled kernel — if
    (and only if) its own binding reproduces ``prepared``'s arguments exactly; None otherwise."""
    if prepared.kernel is None or len(prepared.args) < _N_FIXED + 2:
        return None  # nothing launched
    device = out.device
    devkey = _devkey(device, profile)
    if _device.CACHE.get(devkey) is not info:
        return None
    f = _Fast()
    f.plan, f.info, f.devkey, f.profile_ref = lp, info, devkey, profile
    f.out_shape, f.out_align = tuple(out.shape), out.data_ptr() & 15
    f.kernel, f.grid, f.kwargs = prepared.kernel, prepared.grid, prepared.kwargs
    f.ints = tuple(prepared.args[_N_FIXED:-2])
    pa, pb = prepared.args[0], prepared.args[1]
    # a staged launch binds staging buffers (bases of its descriptors) in place of a and/or b
    bound_a = pa if isinstance(pa, torch.Tensor) else getattr(pa, "base", pa)
    bound_b = pb if isinstance(pb, torch.Tensor) else getattr(pb, "base", pb)
    f.staged = tuple((i, _plan.operand_order(op)) for i, (op, t) in enumerate(((bound_a, a), (bound_b, b))) if op is not t)
    if len(f.staged) != len(getattr(prepared, "staged", ())):
        return None
    if f.staged:
        a, b = bound_a, bound_b  # the check below rebuilds the arguments from what the kernel binds
    f.a_desc = None if pa is a else _desc_template(pa)
    f.b_desc = None if pb is b else _desc_template(pb)
    f.device = device
    ws = prepared.args[7]
    if ws is out:
        f.ws = None
    else:
        cfg = lp.config
        f.ws = (max(1, lp.workspace_tiles * cfg.block_m * cfg.block_n), max(1, lp.counters))
    f.cuda_index = device.index if device.type == "cuda" else None
    f.run = f.function = f.packed = f.tail = f.raw = None
    mine = f.args(a, b, out, c, alpha, beta, sa, sb)
    if len(mine) != len(prepared.args) or not all(x is y or _same_arg(x, y) for x, y in zip(mine, prepared.args)):
        return None
    return f


def _store_fast(fkey: tuple, f: "_Fast") -> None:
    with _LOCK:
        while len(_FAST) >= MAX_PLANS:
            _FAST.pop(next(iter(_FAST)))
        _FAST[fkey] = f


def _remember(fkey: tuple, lp, info: DeviceInfo, profile: Any, prepared, a, b, out, c,
              alpha: float, beta: float, compiled: Any = None, sa=None, sb=None) -> None:
    """Record a fast entry for ``fkey`` after the checked path launched ``prepared``, if (and only
    if) the entry's own binding reproduces ``prepared``'s arguments exactly; on a GPU, bind it to
    the compiled kernel and record that binding for later keys of the same specialisation
    (:func:`_reuse`)."""
    f = _fast_entry(lp, info, profile, prepared, a, b, out, c, alpha, beta, sa, sb)
    if f is None:
        return
    if f.cuda_index is not None:
        _bind_compiled(f, prepared, compiled)
        if f.run is not None:
            _record_compiled(f, prepared)
    _store_fast(fkey, f)


def _bind_compiled(f: _Fast, prepared, compiled: Any = None) -> None:
    """Bind Triton's CompiledKernel for this launch — ``compiled``, the one ``kernel[grid](...)``
    returned, else ``JITFunction.warmup`` (a cache hit right after the launch, but a full argument
    binding: ~100 µs) — and the constexpr tail of its argument list, in the kernel's parameter order."""
    kernel = f.kernel
    params = getattr(kernel, "params", None)
    if params is None:
        return
    n = len(prepared.args)
    tail = []
    for p in params[n:]:
        if p.name in f.kwargs:
            tail.append(f.kwargs[p.name])
        elif p.default is not inspect.Parameter.empty:
            tail.append(p.default)
        else:
            return
    if any(p.name in f.kwargs for p in params[:n]):
        return
    try:
        if compiled is None or not hasattr(compiled, "packed_metadata"):
            compiled = prepared.compile()
    except Exception:  # noqa: BLE001 - the fast launch is an optimisation; kernel[grid] still works
        return
    if compiled is None or getattr(compiled, "function", None) is None or not hasattr(compiled, "packed_metadata"):
        return
    f.run, f.function, f.packed, f.tail = compiled.run, compiled.function, compiled.packed_metadata, tuple(tail)
    descs = {pos: prepared.args[pos] for pos, t in ((0, f.a_desc), (1, f.b_desc)) if t is not None}
    raw = _fastlaunch.bind(compiled, descs)
    if raw is not None and _raw_matches(f, raw, prepared):
        f.raw = raw


def _raw_matches(f: _Fast, raw, prepared) -> bool:
    """Whether ``f.raw_args`` for the prepared launch's own tensors gives what Triton's launcher
    would pass: every tensor as its address, every descriptor expanded to the same layout
    arguments, every other argument equal (the encoded maps themselves are not compared)."""
    args = prepared.args
    a = args[0].base if 0 in raw.desc else args[0]
    b = args[1].base if 1 in raw.desc else args[1]
    out = args[3]
    c = None if args[2] is out else args[2]
    ws, cnt = (None, None) if args[7] is out else (args[7], args[8])
    sa, sb = (None if args[5] is out else args[5]), (None if args[6] is out else args[6])
    mine = f.raw_args(raw, a, b, out, c, args[-2], args[-1], ws, cnt, sa, sb)
    want = []
    for pos, x in enumerate((*args, *f.tail)):
        if pos in raw.desc:
            d = x
            want += [None, *d.shape, *d.strides]
        else:
            want.append(x.data_ptr() if isinstance(x, torch.Tensor) else x)
    if len(mine) != len(want):
        return False
    return all(w is None or type(m) is type(w) and m == w for m, w in zip(mine, want))


# --- compiled kernels shared across keys ------------------------------------------------------
_MAX_COMPILED = 256
_COMPILED: dict[tuple, "_Bound"] = {}  # specialisation key (see _spec_key) → a verified binding


@dataclass(frozen=True, slots=True)
class _Bound:
    """One compiled kernel as a fast entry binds it (see :func:`_bind_compiled`), kept for other keys
    of the same specialisation. ``raw``: the first key's :class:`_fastlaunch.RawLauncher` (None when
    it could not be bound), rebound to each new key's descriptors."""

    kernel: Any
    run: Any
    function: Any
    packed: Any
    tail: tuple
    raw: Any


_I32_MIN, _I32_MAX = -(1 << 31), (1 << 31) - 1
_I64_MIN, _I64_MAX = -(1 << 63), (1 << 63) - 1
_mod16 = (16).__rmod__
_dtype_of = operator.attrgetter("dtype")
_data_ptr = torch.Tensor.data_ptr


class _IntClasses(dict):
    """int → its class, as Triton 3.6's ``native_specialize_impl`` sees it and finer: 1 itself
    (Triton passes a 1 as a constexpr), else (divisible by 16, width: 0 int32, 1 int64, 2 wider;
    Triton types an int i32, i64 or u64 by its range). Memoised (at most 4096 values)."""

    def __missing__(self, v: int):
        if v == 1:
            c = 1
        else:
            c = (v % 16 == 0, 0 if _I32_MIN <= v <= _I32_MAX else 1 if _I64_MIN <= v <= _I64_MAX else 2)
        if len(self) < 4096:
            self[v] = c
        return c


_int_class = _IntClasses().__getitem__
_DESC_FIELDS = frozenset(("base", "shape", "strides", "block_shape", "padding"))


def _int_classes(values) -> tuple:
    """The class (:class:`_IntClasses`) of each int in ``values``."""
    return tuple(map(_int_class, values))


def _desc_spec(d) -> tuple:
    """A TensorDescriptor's class: the base's type, dtype and address residue mod 16, the classes of
    its shape and stride values, and every other field (block shape, padding, ...) as it is."""
    base, fields = d.base, vars(d)
    if fields.keys() == _DESC_FIELDS:  # Triton 3.6's TensorDescriptor
        rest = (tuple(d.block_shape), d.padding)
    else:
        rest = tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in fields.items()
                     if k not in ("base", "shape", "strides"))
    return (type(base), base.dtype, base.data_ptr() % 16, _int_classes(d.shape), _int_classes(d.strides), rest)


def _picker(positions: list[int]):
    """A function of a tuple returning its items at ``positions``, as a tuple."""
    if not positions:
        return lambda args: ()
    if len(positions) == 1:
        i = positions[0]
        return lambda args: (args[i],)
    return operator.itemgetter(*positions)


_SPLITS: dict[tuple, Any] = {}  # argument types → (pick ints, pick tensors, descriptor positions), or None


def _split(kinds: tuple):
    """Where the ints, tensors and host TensorDescriptors are among arguments of these types; None
    when one is of a kind :func:`_spec_key` does not cover (then no compiled kernel is shared)."""
    from triton.tools.tensor_descriptor import TensorDescriptor

    ints, tensors, descs = [], [], []
    for i, t in enumerate(kinds):
        if t is int:
            ints.append(i)
        elif t is float:
            pass
        elif issubclass(t, torch.Tensor):
            tensors.append(i)
        elif issubclass(t, TensorDescriptor):
            descs.append(i)
        else:
            return None
    return _picker(ints), _picker(tensors), tuple(descs)


def _spec_key(kernel, args: tuple, kwargs: Mapping[str, Any], index: int) -> tuple | None:
    """A key that is equal for two launches only if Triton would run the same CompiledKernel for both,
    and the fast entry's binding has the same shape; None when an argument is of a kind not covered.

    Triton 3.6 (``JITFunction.run``) looks a kernel up by the current device and
    ``(specialisation, options)``: per parameter the constexpr value, or for a tensor its dtype and
    whether ``data_ptr() % 16 == 0``, for an int whether it is 1 (then a constexpr), divisible by
    16 and its i32/i64/u64 width, for a float just fp32, for a host TensorDescriptor its base's
    dtype and block shape; ``options`` are the launch options (num_warps, num_stages) with
    ``debug`` (the kernel's or ``knobs.runtime.debug``) and ``knobs.compilation.instrumentation_mode``.
    This key holds all of that and more: the kernel object and its source hash, the CUDA index,
    both knobs, every keyword argument with its type (``True`` and ``1`` differ here), and per
    positional argument its type, a tensor's address residue mod 16 (not just whether it is 0), a
    descriptor's base residue, padding and the classes of its shape and stride values.
    """
    kinds = tuple(map(type, args))
    split = _SPLITS.get(kinds, _SPLITS)
    if split is _SPLITS:
        split = _split(kinds)
        if len(_SPLITS) < 256:
            _SPLITS[kinds] = split
    if split is None:
        return None
    pick_ints, pick_tensors, descs = split
    tensors = pick_tensors(args)
    try:
        dspec = tuple(_desc_spec(args[i]) for i in descs)
    except (AttributeError, TypeError):
        return None
    knobs = _triton_knobs()
    return (id(kernel), getattr(kernel, "hash", None), index, getattr(kernel, "debug", None), knobs.runtime.debug,
            knobs.compilation.instrumentation_mode, kinds, _int_classes(pick_ints(args)),
            tuple(map(_dtype_of, tensors)), tuple(map(_mod16, map(_data_ptr, tensors))), dspec,
            tuple(kwargs), tuple(kwargs.values()), tuple(map(type, kwargs.values())))


def _record_compiled(f: "_Fast", prepared) -> None:
    """Keep ``f``'s verified binding (compiled kernel, constexpr tail, raw launcher) under the
    launch's specialisation key."""
    spec = _spec_key(prepared.kernel, prepared.args, prepared.kwargs, f.cuda_index)
    if spec is None:
        return
    bound = _Bound(f.kernel, f.run, f.function, f.packed, f.tail, f.raw)
    try:
        with _LOCK:
            while len(_COMPILED) >= _MAX_COMPILED:
                _COMPILED.pop(next(iter(_COMPILED)))
            _COMPILED[spec] = bound
    except TypeError:  # an unhashable keyword argument: no sharing
        return


def _reuse_index(device: torch.device) -> int | None:
    """The CUDA index for which a miss may reuse a compiled kernel; None: no reuse (CPU and the
    interpreter, or a stream capturing a CUDA graph: those misses launch through Triton as before)."""
    if device.type != "cuda" or _raw_stream is None or _capturing():
        return None
    return device.index


def _reuse(fkey: tuple, lp, info: DeviceInfo, profile: Any, prepared, a, b, out, c,
           alpha: float, beta: float) -> bool:
    """Launch a miss through the compiled kernel and binding of an earlier key of the same
    specialisation (:func:`_spec_key`), and record its fast entry; False (nothing launched) when
    there is none, or the launch needs Triton's own path (launch hooks, pre-run hooks, CPU, capture).

    What it skips: Triton's JIT dispatch (binding ~50 arguments, the cache lookup), and the
    binding's checks — ``_bind_compiled``, ``_fastlaunch.bind`` and ``_raw_matches`` verified
    for the same compiled kernel and the same argument kinds, position by position, that the
    constexpr tail and the raw launcher's arguments are what Triton passes; nothing in those
    checks depends on the values that differ between the keys (sizes, strides, addresses). What
    it keeps: ``prepare_launch``'s validation (already run) and :func:`_fast_entry`'s
    argument-by-argument check that the entry rebuilds ``prepared``'s arguments. The launch uses
    ``prepared``'s own arguments and workspace.
    """
    kernel = prepared.kernel
    if not _COMPILED or kernel is None or getattr(kernel, "pre_run_hooks", None) or _hooks_on() or prepared.staged:
        return False  # (a staged launch copies its operands first: the checked path's run_kernel does)
    idx = _reuse_index(prepared.device)
    if idx is None:
        return False
    spec = _spec_key(kernel, prepared.args, prepared.kwargs, idx)
    try:
        bound = None if spec is None else _COMPILED.get(spec)
    except TypeError:
        return False
    if bound is None or bound.kernel is not kernel:
        return False
    f = _fast_entry(lp, info, profile, prepared, a, b, out, c, alpha, beta)
    if f is None:
        return False
    raw = bound.raw
    if raw is not None:
        raw = raw.rebind({pos: prepared.args[pos] for pos, t in ((0, f.a_desc), (1, f.b_desc)) if t is not None})
    f.run, f.function, f.packed, f.tail, f.raw = bound.run, bound.function, bound.packed, bound.tail, raw
    if raw is None or f.cuda_index is None:
        f.launch(prepared.args)
    else:
        ws, cnt = (None, None) if f.ws is None else (prepared.args[7], prepared.args[8])
        raw(f.grid[0], _raw_stream(f.cuda_index), f.raw_args(raw, a, b, out, c, alpha, beta, ws, cnt))
    _store_fast(fkey, f)
    return True


def _fast_hit(fkey: tuple | None) -> "_Fast | None":
    if fkey is None:
        return None
    f = _FAST.get(fkey)
    if f is None or _device.CACHE.get(f.devkey) is not f.info:
        return None
    return f


def run_fast(f: _Fast, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``gemm(a, b)``'s warm path for an entry ``f`` that :func:`_fast_hit` returned for (a, b)."""
    out = torch.empty(f.out_shape, dtype=a.dtype, device=a.device)
    if out.data_ptr() & 15 != f.out_align:
        return gemm(a, b, out)
    f.call(a, b, out, None, 1.0, 0.0)
    _STATS["launches"] += 1
    return out


def run_fast_out(f: _Fast, a: torch.Tensor, b: torch.Tensor, out: torch.Tensor) -> torch.Tensor | None:
    """``gemm(a, b, out)``'s warm path for an entry ``f`` that :func:`_fast_hit` returned for
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
    return _fast_hit(_fast_key(a, b, out, c, None, config))


def fast_vendor(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor | None = None,
                c: torch.Tensor | None = None) -> bool:
    """Whether a :func:`gemm` call on exactly these kernel-level operands (default profile, no config)
    ran torch because a tile table's :data:`~tritonblas.tables.VENDOR` entry says so (the warm path
    then hands such signatures to torch's own function, :mod:`tritonblas.fastpath`)."""
    return bool(_VENDOR_FAST) and _fast_key(a, b, out, c, None, None) in _VENDOR_FAST


def fast_valid(f: "_Fast") -> bool:
    """Whether a warm entry looked up earlier still holds: the device → profile mapping it was built
    under is current (``clear_caches`` or a profile change invalidates it)."""
    return _device.CACHE.get(f.devkey) is f.info


def fast_context(dtype: torch.dtype) -> tuple:
    """What besides the operands decides a warm entry, as one hashable value: the TF32 flag (fp32
    only), the environment that picks the profile or table, the tile-table generation, and the number of
    :func:`clear_caches` calls (a signature remembered before one, e.g. the ops' VENDOR signatures, stops
    applying)."""
    return (dtype is torch.float32 and allow_tf32(), _env_now(), tables.GENERATION[0], _deterministic(), _CLEARS[0])


def launch_fast(f: "_Fast", a: torch.Tensor, b: torch.Tensor, out: torch.Tensor, c: torch.Tensor | None = None,
                alpha: float = 1.0, beta: float = 0.0) -> torch.Tensor:
    """Launch the warm entry ``f`` (from :func:`fast_lookup`) on operands of its key; returns out.
    ``out`` must have ``f``'s output address class (a fresh torch allocation does)."""
    f.call(a, b, out, c, alpha, beta)
    _STATS["launches"] += 1
    return out


def launch_ready(f: "_Fast", a: torch.Tensor, b: torch.Tensor, out: torch.Tensor, c: torch.Tensor | None = None,
                 alpha: float = 1.0, beta: float = 0.0) -> torch.Tensor:
    """:func:`launch_fast` for an entry :func:`raw_ready` has just vouched for (raw launcher, no
    staging, no launch hook): the raw launch without checking those again."""
    f.call_ready(a, b, out, c, alpha, beta)
    _STATS["launches"] += 1
    return out


def launch_warm(f: "_Fast", a: torch.Tensor, b: torch.Tensor, out: torch.Tensor, c: torch.Tensor | None = None,
                alpha: float = 1.0, beta: float = 0.0) -> bool:
    """:func:`launch_ready` if :func:`raw_ready` holds, in one call: True once launched, False when
    nothing was launched (then the caller launches the key's own views with :func:`launch_fast`)."""
    if f.raw is None or f.staged or _hooks_on():
        return False
    f.call_ready(a, b, out, c, alpha, beta)
    _STATS["launches"] += 1
    return True


def raw_ready(f: "_Fast") -> bool:
    """Whether ``f`` launches through the raw launcher with nothing but the operands' addresses
    (no staging copy, no Triton launch hook, a GPU entry): then any tensors with the same base
    addresses as the key's operands may stand in for them (e.g. an N-D activation for its 2-D view)."""
    return f.raw is not None and not f.staged and not _hooks_on()


def count(name: str, n: int = 1) -> None:
    """Add ``n`` to the counter ``name`` of :func:`stats`."""
    _STATS[name] += n


def count_all(names: tuple) -> None:
    """Add one to each counter in ``names``."""
    for name in names:
        _STATS[name] += 1


def _out_shape(a: torch.Tensor, b: torch.Tensor) -> tuple[int, ...]:
    m, n = a.shape[-2], b.shape[-1]
    if a.dim() == 2 and b.dim() == 2:
        return (m, n)
    ba = a.shape[0] if a.dim() == 3 else 1
    bb = b.shape[0] if b.dim() == 3 else 1
    return (ba if bb == 1 else bb, m, n)


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


def torch_gemm(a, b, out, c, alpha, beta):
    """``out = alpha·(a @ b) + beta·c`` by torch's own ops, for a call tritonblas does not run (torch's
    results and errors; the arguments as :func:`gemm` takes them). Without C, alpha ≠ 1 goes into
    torch's addmm/baddbmm with beta = 0 (C ignored), as the caller's ``addmm(..., beta=0)`` does: one
    rounding, and an fp16 ``a @ b`` past 65504 is scaled before it could become inf. Autocast is off
    inside: the operands' dtypes are the call's, as for the kernels (an autocast region would compute an
    fp32 call in bf16 and return it as fp32)."""
    if torch.is_autocast_enabled(a.device.type):
        with torch.autocast(a.device.type, enabled=False):
            return torch_gemm(a, b, out, c, alpha, beta)
    if c is None and alpha != 1:
        c, beta = a.new_zeros(()), 0.0
    if a.dim() == 2 and b.dim() == 2:
        r = torch.addmm(c, a, b, beta=beta, alpha=alpha) if c is not None else torch.mm(a, b)
    else:
        shape = _out_shape(a, b)
        a3 = a.expand(shape[0], *a.shape[-2:])
        b3 = b.expand(shape[0], *b.shape[-2:])
        r = torch.baddbmm(c, a3, b3, beta=beta, alpha=alpha) if c is not None else torch.bmm(a3, b3)
    if out is None:
        return r
    return out.copy_(r)


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
    fkey = _fast_key(a, b, out, c, profile, config, gen)
    if fkey is not None and (alpha != 1 or (c is not None and beta != 1)):
        # an epilogue the 'ws' kernel lacks (ws_reason): its plan may differ from the plain call's
        # (a @ b, or + F.linear's bias), whose key fast_lookup and the ops' warm paths share
        fkey += ("epilogue",)
    f = _fast_hit(fkey)
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
        out = torch.empty(_out_shape(a, b), dtype=a.dtype, device=a.device)
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
        taken = _gluon_gemm(a, b, out, c, beta)
        if taken is not None:
            _STATS["launches"] += 1
            if fkey is not None:
                _remember_gluon(fkey, a, b, out, taken, profile)
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
        taken = _ws_gemm(a, b, out, c, beta, lp)
        _STATS["launches"] += 1
        _STATS["ws"] += 1
        if fkey is not None:
            _remember_gluon(fkey, a, b, out, taken, profile)
        return out
    alpha, beta = float(alpha), float(beta)

    def prepare(plan):
        return _plan.prepare_launch(plan, a, b, out, c=c, alpha=alpha, beta=beta, allow_tf32=tf32)

    with _cuda_guard(a.device):
        prepared = prepare(lp)
        if fkey is not None and _reuse(fkey, lp, info, profile, prepared, a, b, out, c, alpha, beta):
            _STATS["launches"] += 1
            return out
        ran = _run_checked(key, lp, info, prepare, prepared, op)
    if ran is None:
        _STATS["fallbacks"] += 1
        return torch_gemm(a, b, out, c, alpha, beta)
    lp, prepared, compiled = ran
    _STATS["launches"] += 1
    if fkey is not None:
        _remember(fkey, lp, info, profile, prepared, a, b, out, c, alpha, beta, compiled)
    return out


GLUON_MIN = (128, 128, 64)  # M, N, K: one full 128-row tile, one 128-column tile, one K-step
# The Gluon kernel is persistent without a K split: with fewer output tiles than this fraction of
# the SMs, the idle SMs are lost, where origami's pick can split K (Stream-K, split-K). Measured
# (H200, 2026-12-01, a8a7db8, scaled_mm_h200_gluon_a8a7db8.csv against 36cc947's origami picks):
# fp8 128x4096x4096 (16 tiles of 128x128) 97 us on the Gluon kernel against 19 us; 512x6144x4096
# (48 tiles) 119 against 37; at 160-448 tiles the Gluon kernel was 1.0-1.4x faster. bf16
# 4096x1024xK (128 tiles of 128x256 on 132 SMs) ran within 8% of cuBLAS (gluon_h200_870c48f.log).
GLUON_FILL = 0.9


def gluon_runs(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor) -> str | None:
    """Why the warp-specialised Gluon kernel cannot compute ``out = a @ b``, or None when it can: 2-D
    bf16/fp16 operands of one dtype and a bf16/fp16 output on an sm_90 GPU (not the interpreter), what
    :func:`tritonblas.kernels.gluon_hopper.supports` accepts, and 16-byte-aligned pointers."""
    if a.dim() != 2 or b.dim() != 2 or out.dim() != 2:
        return "not a 2-D GEMM"
    half = (torch.bfloat16, torch.float16)
    if a.dtype != b.dtype or a.dtype not in half or out.dtype not in half:
        return f"dtypes {a.dtype}, {b.dtype} -> {out.dtype}: needs bf16 / fp16"
    if a.device.type != "cuda" or torch.cuda.get_device_capability(a.device) != (9, 0):
        return f"{a.device} is not an sm_90 GPU"
    from tritonblas.kernels import gluon_hopper

    (m, k), n = a.shape, b.shape[1]
    why = gluon_hopper.supports(m, n, k, a.dtype, a.stride(), b.stride(), out.stride(), out.dtype)
    if why is None and (a.data_ptr() | b.data_ptr() | out.data_ptr()) % 16:
        why = "a pointer is not 16-byte aligned"
    return why


def ws_reason(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor, c: torch.Tensor | None = None,
              alpha: float = 1.0, beta: float = 0.0, profile: HardwareProfile | None = None) -> str | None:
    """Why ``out = alpha·(a @ b) + beta·c`` cannot run on the warp-specialised kernel should origami
    pick it (kind 'ws'), or None: ``profile`` (when given) has the kernel (``origami.space.ws_available``),
    not under ``TRITONBLAS_GLUON=0``, alpha 1, ``c`` none or F.linear's bias add (:func:`_gluon_bias`),
    and :func:`gluon_runs`. The dispatcher's key carries the answer (``GemmKey.ws``); without it the
    model selects from the space without that kernel."""
    if profile is not None and not ws_available(profile):
        return "no 'ws' kernel"
    if settings.gluon_off():
        return f"{settings.ENV_GLUON}=0"
    if alpha != 1:
        return f"alpha={alpha}: its epilogue does not scale"
    if c is not None and beta != 0 and _gluon_bias(c, b.shape[-1], beta) is False:
        return "c: its epilogue adds F.linear's bias (N elements, beta 1) only"
    return gluon_runs(a, b, out)


def gluon_eligible(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor) -> str | None:
    """Why the ``TRITONBLAS_GLUON=1`` experiment does not take ``out = a @ b``, or None when it does:
    :func:`gluon_runs`, at least :data:`GLUON_MIN`, and an output whose tiles give :data:`GLUON_FILL`
    of the SMs one (:func:`_gluon_config` not None)."""
    if a.dim() == 2 and b.dim() == 2:
        (m, k), n = a.shape, b.shape[1]
        if m < GLUON_MIN[0] or n < GLUON_MIN[1] or k < GLUON_MIN[2]:
            return f"{m}x{n}x{k} is under {GLUON_MIN}"
    why = gluon_runs(a, b, out)
    (m, k), n = a.shape[-2:], b.shape[-1]
    if why is None:
        sms = _sm_count(a.device)
        if _gluon_config(m, n, sms) is None:
            why = (f"{m}x{n}: under {GLUON_FILL:.0%} of the {sms} SMs get an output tile of either "
                   "Gluon tile (no K split): origami's pick runs")
    return why


def _sm_count(device: torch.device) -> int:
    """SMs of a CUDA device; 0 elsewhere (only the CPU stand-in tests get this far off a GPU)."""
    return torch.cuda.get_device_properties(device).multi_processor_count if device.type == "cuda" else 0


def _fills(m: int, n: int, block_n: int, sms: int) -> bool:
    """Whether 128 x block_n tiles of an M x N output give at least GLUON_FILL of ``sms`` SMs one."""
    return -(-m // 128) * -(-n // block_n) >= GLUON_FILL * sms


def _gluon_bias(c: torch.Tensor, n: int, beta: float):
    """``c`` as the Gluon kernel's bias vector when ``out = a @ b + beta·c`` is F.linear's bias add
    (beta 1, N contiguous bf16/fp16/fp32 elements: shape (N,) or (1, N)), else False."""
    from tritonblas.kernels import gluon_hopper

    if c.dim() == 0 or beta != 1 or c.dtype not in gluon_hopper.BIAS_DTYPES or c.shape[-1] != n:
        return False
    if c.dim() == 1 or (c.dim() == 2 and c.shape[0] == 1):
        return c.reshape(n) if c.stride(-1) == 1 else False
    return False


def _gluon_gemm(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor, c: torch.Tensor | None = None,
                beta: float = 0.0) -> tuple | None:
    """``out = a @ b`` (``+ c`` when ``c`` is F.linear's bias, :func:`_gluon_bias`) on the Gluon kernel
    when :func:`gluon_eligible` (the tile of :func:`_gluon_config`): what it launched, (bias or None,
    gluon_matmul's tile keywords), for :func:`_remember_gluon`; None when it does not take the call. The
    ``TRITONBLAS_GLUON=1`` experiment: it forces the kernel by a grid-fill rule whatever origami
    picks (without the variable origami scores the kernel as kind 'ws' and :func:`_ws_gemm` runs its
    picks), kept to compare the two inside real models (``benchmarks/models.py --gluon``)."""
    bias = None if c is None else _gluon_bias(c, b.shape[-1], beta)
    if bias is False or gluon_eligible(a, b, out) is not None:
        return None
    from tritonblas.kernels import gluon_hopper

    block_n, stages = _gluon_config(a.shape[0], b.shape[1], _sm_count(a.device))
    tile = dict(block_n=block_n, stages=stages)
    with _cuda_guard(a.device):
        gluon_hopper.gluon_matmul(a, b, out=out, bias=bias, **tile)
    return bias, tile


def _ws_gemm(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor, c: torch.Tensor | None, beta: float,
             lp) -> tuple:
    """``out = a @ b`` (``+ c``: F.linear's bias) on the warp-specialised kernel with the plan ``lp``'s tile
    and grid (kind 'ws', origami's pick for a key whose ``ws`` held): (bias or None, gluon_matmul's tile
    keywords), as :func:`_gluon_gemm` returns them for :func:`_remember_gluon`."""
    from tritonblas.kernels import gluon_hopper

    cfg = lp.config
    bias = None if c is None else _gluon_bias(c, b.shape[-1], beta)
    # the plan's whole tile and its grid (min(cfg.grid, tiles): num_sms caps the kernel's grid so)
    tile = dict(block_m=cfg.block_m, block_n=cfg.block_n, block_k=cfg.block_k, stages=cfg.num_stages,
                group_m=cfg.group_m, num_sms=lp.grid[0])
    with _cuda_guard(a.device):
        gluon_hopper.gluon_matmul(a, b, out=out, bias=bias, **tile)
    return bias, tile


class GluonEntry:
    """The warm entry of a fast key whose call ran the Gluon kernel: origami's 'ws' pick (:func:`_ws_gemm`)
    or the ``TRITONBLAS_GLUON=1`` experiment (:func:`_gluon_gemm`):
    what :class:`FastEntry` offers the warm paths (``out_shape``, ``out_align``, ``call``,
    ``call_ready``, ``raw``/``staged`` for :func:`raw_ready`, the device-cache check of
    :func:`fast_valid`). ``warm`` is the Gluon kernel's bound raw launch for the key
    (:func:`tritonblas.kernels.gluon_hopper.bound_launch`): a warm call goes straight to
    :func:`~tritonblas.kernels.gluon_hopper.raw_launch` with the operands' addresses, as a
    FastEntry's does; without one (or with a Triton launch hook) it runs ``gluon_matmul``'s checked
    launch. Through ``gluon_matmul``'s own warm key every call paid its checks and key (H200,
    2026-12-01, 870c48f: 46 us per ``tritonblas.matmul`` at 256x256x64 against 20 us for the
    origami path; ``benchmarks/gluon_host.py``). The fast key holds ``$TRITONBLAS_GLUON``, so its
    three settings find three sets of entries; a call with ``alpha != 1`` or a ``c`` that is not the
    entry's bias add, which the kernel cannot run, runs torch (:func:`gemm` keys such calls apart
    and plans them without the kernel; only a warm path that looks up the plain key gets here)."""

    __slots__ = ("info", "devkey", "out_shape", "out_align", "tile", "raw", "warm", "mnk", "has_bias", "views",
                 "staged", "cuda_index")

    def call(self, a, b, out, c, alpha: float, beta: float, sa=None, sb=None) -> None:
        bias = None if c is None else _gluon_bias(c, out.shape[-1], beta)
        if alpha != 1.0 or sa is not None or sb is not None or bias is False or (bias is not None) != self.has_bias:
            torch_gemm(a, b, out, c, alpha, beta)
            return
        if self.warm is not None and not _hooks_on():
            self.call_ready(a, b, out, c, alpha, beta)
            return
        from tritonblas.kernels import gluon_hopper

        _STATS["triton_launches"] += 1
        with _cuda_guard(out.device):
            gluon_hopper.gluon_matmul(a, b, out=out, bias=bias, **self.tile)

    def call_ready(self, a, b, out, c, alpha: float, beta: float) -> None:
        """The raw launch over the operands' base addresses (any tensors at the key's operands'
        addresses: an N-D activation for its 2-D view, a Linear's (N, K) weight for its transpose);
        a call that is not the experiment's runs torch on the key's 2-D views at those addresses."""
        if alpha != 1.0 or (c is not None) != self.has_bias or (c is not None and beta != 1.0):
            a, b, out = (t.as_strided(*v) for t, v in zip((a, b, out), self.views))
            self.call(a, b, out, c, alpha, beta)  # not the experiment's call: torch runs it
            return
        from tritonblas.kernels.gluon_hopper import raw_launch

        idx = self.cuda_index
        m, n, k = self.mnk
        pc = None if c is None else c.data_ptr()
        if _get_device() != idx:
            with torch.cuda.device(idx):
                raw_launch(self.warm, _raw_stream(idx), a.data_ptr(), b.data_ptr(), out.data_ptr(), m, n, k, pc)
        else:
            raw_launch(self.warm, _raw_stream(idx), a.data_ptr(), b.data_ptr(), out.data_ptr(), m, n, k, pc)


def _gluon_scaled(a, b, out, scale_a, scale_b, bias, fast_accum: bool) -> bool:
    """``scaled_gemm`` on the Gluon kernel (:func:`tritonblas.kernels.gluon_hopper.gluon_scaled_mm`)
    under ``TRITONBLAS_GLUON=1``: a bf16/fp16 ``out``, at least :data:`GLUON_MIN`, what its
    ``supports`` accepts (A row-major, B column-major) with 16-byte-aligned pointers on an sm_90 GPU,
    torch's tensor- or row-wise scales, and an output whose tiles of gluon_scaled_mm's default
    block_n (256 with ``fast_accum``, else 128) give :data:`GLUON_FILL` of the SMs one
    (:func:`_fills`); False (origami's pick runs) otherwise."""
    (m, k), n = a.shape, b.shape[1]
    if out.dtype not in (torch.bfloat16, torch.float16) or m < GLUON_MIN[0] or n < GLUON_MIN[1] or k < GLUON_MIN[2]:
        return False
    if b.dtype != a.dtype:  # e4m3 x e5m2: the kernel's ring holds one fp8 format
        return False
    if a.device.type != "cuda" or torch.cuda.get_device_capability(a.device) != (9, 0):
        return False
    if (a.data_ptr() | b.data_ptr() | out.data_ptr()) % 16 or (bias is not None and bias.stride(-1) != 1):
        return False
    from tritonblas.kernels import gluon_hopper

    if bias is not None and bias.dtype not in gluon_hopper.BIAS_DTYPES:
        return False  # scaled_mm takes any floating bias; gluon_scaled_mm raises on fp64 / fp8
    if not _fills(m, n, 256 if fast_accum else 128, _sm_count(a.device)):  # gluon_scaled_mm's tile
        return False
    row_wise = tuple(scale_a.shape) == (m, 1) and tuple(scale_b.shape) == (1, n)
    if not (scale_a.numel() == 1 and scale_b.numel() == 1) and not row_wise:
        return False
    if gluon_hopper.supports(m, n, k, a.dtype, a.stride(), b.stride(), out.stride(), out.dtype) is not None:
        return False
    with _cuda_guard(a.device):
        gluon_hopper.gluon_scaled_mm(a, b, scale_a, scale_b, out_dtype=out.dtype, bias=bias,
                                     use_fast_accum=bool(fast_accum), out=out)
    return True


def _gluon_config(m: int, n: int, sms: int) -> tuple[int, int] | None:
    """(block_n, stages) of the experiment for an M x N output on ``sms`` SMs: 128x256x64 with 3
    stages when N >= 256 and its tiles fill the machine (:func:`_fills`), else 128x128x64 with 4 when
    those do, else None (origami's pick: :data:`GLUON_FILL`)."""
    if n >= 256 and _fills(m, n, 256, sms):
        return 256, 3
    return (128, 4) if _fills(m, n, 128, sms) else None


def _remember_gluon(fkey: tuple, a: torch.Tensor, b: torch.Tensor, out: torch.Tensor, taken: tuple,
                    profile: Any) -> None:
    """Store a :class:`GluonEntry` for ``fkey`` after :func:`_gluon_gemm` took the call (``taken``: its
    bias and gluon_matmul's tile keywords), under the device mapping a :class:`FastEntry` would be checked
    against (none when it is not cached)."""
    device = out.device
    try:
        info = device_info(device, profile)
    except (DeviceError, ProfileError):
        return
    devkey = _devkey(device, profile)
    if _device.CACHE.get(devkey) is not info:
        return
    from tritonblas.kernels import gluon_hopper

    f = GluonEntry()
    f.info, f.devkey, f.out_shape, f.out_align = info, devkey, tuple(out.shape), out.data_ptr() & 15
    bias, f.tile = taken  # the gluon_matmul keywords of the first launch: every warm launch uses them
    f.has_bias, f.mnk = bias is not None, (a.shape[0], b.shape[1], a.shape[1])
    f.views = tuple((tuple(t.shape), t.stride()) for t in (a, b, out))  # the kernel's operands, for call_ready
    f.warm = None if _raw_stream is None else gluon_hopper.bound_launch(a, b, out, bias, **f.tile)
    f.raw = None if f.warm is None else f.warm[0]  # what raw_ready reads
    f.staged, f.cuda_index = False, device.index
    _store_fast(fkey, f)


def scaled_gemm(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor, *, scale_a: torch.Tensor,
                scale_b: torch.Tensor, bias: torch.Tensor | None = None, fast_accum: bool = False,
                profile: Any = None) -> torch.Tensor:
    """``out = scale_a ⊙ (a @ b) ⊙ scale_b + bias`` for 2-D fp8 ``a``, ``b`` into a bf16/fp16/fp32
    ``out`` (the caller, :mod:`tritonblas.scaled`, checked torch._scaled_mm's rules): the plan of
    this key (origami's pick for the fp8 problem, cached like every other), launched with the scales
    and bias in the epilogue. Returns ``out``, or None when our kernels cannot run the problem (no
    plan, or every pick refused by the compiler): the caller runs its fallback (:mod:`tritonblas.scaled`
    knows which of torch's fp8 recipes torch's own kernel accepts)."""
    if out.numel() == 0:
        return out
    if a.shape[-1] == 0:
        _STATS["empty"] += 1
        out.zero_()
        return out.add_(bias) if bias is not None else out
    if profile is None and settings.gluon() and _gluon_scaled(a, b, out, scale_a, scale_b, bias, fast_accum):
        _STATS["launches"] += 1
        return out
    # the kernel's own views of the scales (what prepare_launch binds: one element, or a unit-stride
    # vector over M / N), and the bias as a broadcast C with beta = 1 (the epilogue adds beta·C after
    # scaling, which is what torch's bias is), so the warm entry rebinds them like any operand
    sa = scale_a.reshape(1) if scale_a.numel() == 1 else scale_a.reshape(-1)
    sb = scale_b.reshape(1) if scale_b.numel() == 1 else scale_b.reshape(-1)
    beta = 0.0 if bias is None else 1.0
    fkey = _fast_key(a, b, out, bias, profile, None)
    if fkey is not None:
        fkey += (3, sa.shape, sa.stride(), sa.dtype, sa.device, sa.data_ptr() & 15,
                 sb.shape, sb.stride(), sb.dtype, sb.device, sb.data_ptr() & 15, bool(fast_accum))
    f = _fast_hit(fkey)
    if f is not None and out.data_ptr() & 15 == f.out_align:
        f.call(a, b, out, bias, 1.0, beta, sa, sb)
        _STATS["launches"] += 1
        _STATS["fast_hits"] += 1
        return out
    info, _, lp, key = _plan_of(a, b, out, bias, profile, None, "scaled_mm")

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
        _remember(fkey, lp, info, profile, prepared, a, b, out, bias, 1.0, beta, compiled, sa, sb)
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
        out = torch.empty(_out_shape(a, b), dtype=a.dtype, device=a.device)
    if out.numel() == 0 or a.shape[-1] == 0:
        return None
    lp = _plan_of(a, b, out, c, profile, config, "plan_for", alpha, beta)[2]
    return None if lp is _FALLBACK else lp


def _plan_of(a, b, out, c, profile: Any, config: TileConfig | None, op: str, alpha: float = 1.0,
             beta: float = 0.0, generation: int | None = None) -> tuple[DeviceInfo, bool, Any, GemmKey]:
    """(device info, TF32 allowed, the cached plan or _FALLBACK, the key) for these operands: the
    checked path's key, built on a miss (the cold path, :func:`_build`). ``alpha``/``beta``: the
    epilogue, which decides whether the warp-specialised kernel may run the call (:func:`ws_reason`).
    ``generation``: the tile-table generation the caller read (default: now)."""
    info = device_info(a.device, profile)
    tf32 = a.dtype == torch.float32 and allow_tf32()
    why = ws_reason(a, b, out, c, alpha, beta, info.plan_profile)
    key = GemmKey.from_tensors(a, b, out, profile=info.plan_profile, tf32=tf32, c=c, config=config, ws=why is None,
                               table=tables.table_token(generation))
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
    out = torch.empty(_out_shape(a, b), dtype=a.dtype, device=a.device)
    if out.numel() == 0 or a.shape[-1] == 0:
        return f"{head}\n  no launch: {'empty output' if out.numel() == 0 else 'K = 0, the result is zeros'}"
    info = device_info(a.device, profile)
    hw = info.plan_profile
    tf32 = a.dtype == torch.float32 and allow_tf32()
    why = ws_reason(a, b, out, profile=hw)
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
        which = " and ".join(n for n, s in (("a", lp.stage_a), ("b", lp.stage_b)) if s)
        copy_us = _plan.staging_copy_ns(problem, hw, (lp.stage_a, lp.stage_b)) / 1e3
        unstaged = origami.select(problem, sel)
        lines.append(f"  staging: {which} copied into 16-byte-aligned buffers before each launch (predicted "
                     f"{copy_us:.2f} us; unstaged pick {unstaged.config.short()} predicted "
                     f"{unstaged.latency_ns / 1e3:.2f} us)")
        problem = lp.problem
    if config is None:
        est = origami.select(problem, sel)
        terms = ", ".join(f"{n} {v / 1e3:.2f}" for n, v in est.terms.items() if v > 0)
        lines.append(f"  predicted: {est.latency_ns / 1e3:.2f} us, {est.tflops(problem):.1f} TFLOP/s, "
                     f"bound: {est.bound}; terms (us): {terms}")
    lines.append(origami.explain(problem, sel))
    return "\n".join(lines)


"""Warm launches: what a repeated GEMM call needs besides its tensors, recorded once and replayed.

A **warm entry** (:class:`FastEntry`) is kept per :func:`fast_key` — one flat tuple built from the
tensors: per operand (shape, strides, dtype, device, ``data_ptr() % 16``, the unreadable bit), plus the
TF32 flag, ``$TRITONBLAS_PROFILE`` / ``$ORIGAMI_PROFILE_DIR`` / the table and Gluon variables (read per
call, so changes are honoured), the tile-table generation, ``profile=``, ``config=`` and the
deterministic-algorithms flag. It holds everything ``plan.prepare_launch`` derived once for that key
(kernel, grid, constexpr and option kwargs, the integer sizes/strides, TMA descriptor templates,
workspace sizes and, on a GPU, Triton's ``CompiledKernel`` and its raw C launcher), so a warm call only
binds the tensor pointers (and alpha/beta) and launches. Everything else in the key being equal,
Triton's own specialisation (pointer alignment, integer values) is equal too, so the compiled kernel
is the one ``kernel[grid](...)`` would pick. The dispatcher records an entry (:func:`remember`) only
after it has verified, argument by argument, that the entry's binding reproduces ``prepare_launch``'s
exactly. Measured on the H200 host (2026-11-30, c7aaf5d): 16.0 µs per warm 64³ call against
torch.matmul's 11.3 µs.

**Shared compiled kernels**: on a GPU, each verified binding (Triton's ``CompiledKernel``, the
constexpr tail, the raw launcher) is also kept in :data:`COMPILED` under a specialisation key
(:func:`_spec_key`: the kernel, its constexprs and options, the device, Triton's debug knobs, and per
argument the classes Triton 3.6 specialises on, and finer). A miss whose launch has an equal key —
typically a new M or N of a config already run — launches through that binding directly
(:func:`reuse`: no ``JITFunction.run``, no re-binding), after ``prepare_launch`` and the
argument-by-argument check of its own entry. Launch hooks, pre-run hooks, CUDA-graph capture, staged
operands and CPU tensors keep Triton's own launch.

The tables are bounded (:data:`MAX_ENTRIES` entries, :data:`_MAX_COMPILED` bindings, oldest dropped
first) and emptied by :func:`clear`, which also advances :data:`CLEARS`: it is part of
:func:`fast_context`, so warm signatures kept elsewhere (``tritonblas.fastpath``) lapse with them.
"""

from __future__ import annotations

import contextlib
import inspect
import operator
import os
import threading
from dataclasses import dataclass
from typing import Any, Mapping

import torch

from tritonblas import _device, _fastlaunch, _interpreter, settings, tables
from tritonblas import plan as _plan
from tritonblas._compat import allow_tf32
from origami.config import TileConfig
from tritonblas._device import ENV_PROFILE, DeviceInfo
from tritonblas.counters import COUNTS

__all__ = ["FastEntry", "fast_key", "fast_context", "hit", "store", "remember", "reuse", "device_key", "clear",
           "fast_valid", "launch_fast", "launch_ready", "launch_warm", "raw_ready", "hooks_on", "cuda_guard",
           "get_device", "raw_stream", "capturing", "FAST", "COMPILED", "CLEARS", "MAX_ENTRIES", "environment"]

MAX_ENTRIES = 4096
FAST: dict[tuple, "FastEntry"] = {}  # fast key (see fast_key) → everything a warm launch needs
CLEARS = [0]  # clear() calls so far: part of fast_context, so warm signatures kept elsewhere lapse
_LOCK = threading.Lock()


def clear() -> None:
    """Forget every warm entry and shared compiled-kernel binding; signatures keyed on
    :func:`fast_context` elsewhere stop matching."""
    with _LOCK:
        CLEARS[0] += 1
        FAST.clear()
        COMPILED.clear()
        _SPLITS.clear()


def cuda_guard(device: torch.device):
    """``torch.cuda.device(device)`` for a CUDA device (its current stream, never the current device's),
    else nothing."""
    return torch.cuda.device(device) if device.type == "cuda" else contextlib.nullcontext()


_ENV_PROFILE_DIR = settings.ENV_PROFILE_DIR
_ENV_INTERPRET = settings.ENV_INTERPRET
_environ_get = os.environ.get


# the environment that picks the profile, the table or the Gluon experiment, read per call (settings.raw_reader)
_env_now = settings.raw_reader(ENV_PROFILE, _ENV_PROFILE_DIR, _ENV_INTERPRET, tables.ENV_TABLE, settings.ENV_GLUON)
environment = _env_now  # public: the values of the variables above, as one tuple (fastpath's refused classes)
# torch.are_deterministic_algorithms_enabled is a Python wrapper of this C query: the warm key reads it per call
_deterministic = getattr(torch._C, "_get_deterministic_algorithms", None) or torch.are_deterministic_algorithms_enabled
_N_FIXED = 9  # prepare_launch's args: 9 tensors, then the integers, then alpha and beta


def fast_key(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor | None, c: torch.Tensor | None,
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
        if raw is None or hooks_on():
            COUNTS["triton_launches"] += 1
            self.launch(self.args(a, b, out, c, alpha, beta, sa, sb))
            return
        idx = self.cuda_index
        if get_device() != idx:
            with torch.cuda.device(idx):
                self._call_raw(raw, idx, a, b, out, c, alpha, beta, sa, sb)
        else:
            self._call_raw(raw, idx, a, b, out, c, alpha, beta, sa, sb)

    def call_ready(self, a, b, out, c, alpha: float, beta: float) -> None:
        """:meth:`call` for an entry whose raw launch was just found ready (``raw_ready``)."""
        idx = self.cuda_index
        if get_device() != idx:
            with torch.cuda.device(idx):
                self._call_raw(self.raw, idx, a, b, out, c, alpha, beta)
            return
        # _call_raw, inlined: the warm path's launch (one Python frame less per call)
        raw, stream = self.raw, raw_stream(idx)
        ws, cnt = (None, None) if self.ws is None else self._workspace(idx, stream)
        raw(self.grid[0], stream, self.raw_args(raw, a, b, out, c, alpha, beta, ws, cnt))

    def _stage(self, a, b) -> tuple:
        """(a, b) as the kernel binds them: fresh staging buffers (``plan.staging_buffer``, of the
        majors recorded with the entry) filled from a and b (``plan.stage_copy``, current stream)."""
        guard = torch.cuda.device(self.cuda_index) if self.cuda_index is not None and \
            get_device() != self.cuda_index else contextlib.nullcontext()
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
        stream = raw_stream(idx)
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
        if stream == 0 and not capturing():
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
        self.run(self.grid[0], 1, 1, torch.cuda.current_stream(idx).cuda_stream if raw_stream is None
                 else raw_stream(idx), self.function, self.packed, None, None, None, *args, *self.tail)


_hooked = _fastlaunch.hooked  # one predicate for "a launch hook is installed"


def hooks_on() -> bool:
    hooks = (_KNOBS or _triton_knobs()).runtime  # _triton_runtime_knobs() without its two calls
    return _hooked(hooks.launch_enter_hook) or _hooked(hooks.launch_exit_hook)


get_device = torch._C._cuda_getDevice if hasattr(torch._C, "_cuda_getDevice") else torch.cuda.current_device
capturing = (torch._C._cuda_isCurrentStreamCapturing if hasattr(torch._C, "_cuda_isCurrentStreamCapturing")
              else torch.cuda.is_current_stream_capturing)


try:
    from torch._C import _cuda_getCurrentRawStream as raw_stream  # what Triton's driver uses
except ImportError:  # pragma: no cover - a torch without CUDA bindings
    raw_stream = None

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


def device_key(device: torch.device, profile: Any) -> tuple:
    """The ``_device.CACHE`` key of the mapping a warm entry for ``device`` was built under (the
    non-strict lookup ``device_info`` makes): a warm entry holds while that key maps to its info."""
    return (device.index if device.type == "cuda" else None, False,
            _device.override_key(profile if profile is not None else (_environ_get(ENV_PROFILE) or None)),
            _environ_get(_ENV_PROFILE_DIR))


def _fast_entry(lp, info: DeviceInfo, profile: Any, prepared, a, b, out, c, alpha: float,
                beta: float, sa=None, sb=None) -> "FastEntry | None":
    """The fast entry for a launch the checked path prepared, not yet bound to a compiled kernel — if
    (and only if) its own binding reproduces ``prepared``'s arguments exactly; None otherwise."""
    if prepared.kernel is None or len(prepared.args) < _N_FIXED + 2:
        return None  # nothing launched
    device = out.device
    devkey = device_key(device, profile)
    if _device.CACHE.get(devkey) is not info:
        return None
    f = FastEntry()
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


def store(fkey: tuple, f: "FastEntry") -> None:
    with _LOCK:
        while len(FAST) >= MAX_ENTRIES:
            FAST.pop(next(iter(FAST)))
        FAST[fkey] = f


def remember(fkey: tuple, lp, info: DeviceInfo, profile: Any, prepared, a, b, out, c,
              alpha: float, beta: float, compiled: Any = None, sa=None, sb=None) -> None:
    """Record a fast entry for ``fkey`` after the checked path launched ``prepared``, if (and only
    if) the entry's own binding reproduces ``prepared``'s arguments exactly; on a GPU, bind it to
    the compiled kernel and record that binding for later keys of the same specialisation
    (:func:`reuse`)."""
    f = _fast_entry(lp, info, profile, prepared, a, b, out, c, alpha, beta, sa, sb)
    if f is None:
        return
    if f.cuda_index is not None:
        _bind_compiled(f, prepared, compiled)
        if f.run is not None:
            _record_compiled(f, prepared)
    store(fkey, f)


def _bind_compiled(f: FastEntry, prepared, compiled: Any = None) -> None:
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


def _raw_matches(f: FastEntry, raw, prepared) -> bool:
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
COMPILED: dict[tuple, "_Bound"] = {}  # specialisation key (see _spec_key) → a verified binding


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


def _record_compiled(f: "FastEntry", prepared) -> None:
    """Keep ``f``'s verified binding (compiled kernel, constexpr tail, raw launcher) under the
    launch's specialisation key."""
    spec = _spec_key(prepared.kernel, prepared.args, prepared.kwargs, f.cuda_index)
    if spec is None:
        return
    bound = _Bound(f.kernel, f.run, f.function, f.packed, f.tail, f.raw)
    try:
        with _LOCK:
            while len(COMPILED) >= _MAX_COMPILED:
                COMPILED.pop(next(iter(COMPILED)))
            COMPILED[spec] = bound
    except TypeError:  # an unhashable keyword argument: no sharing
        return


def _reuse_index(device: torch.device) -> int | None:
    """The CUDA index for which a miss may reuse a compiled kernel; None: no reuse (CPU and the
    interpreter, or a stream capturing a CUDA graph: those misses launch through Triton as before)."""
    if device.type != "cuda" or raw_stream is None or capturing():
        return None
    return device.index


def reuse(fkey: tuple, lp, info: DeviceInfo, profile: Any, prepared, a, b, out, c,
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
    if not COMPILED or kernel is None or getattr(kernel, "pre_run_hooks", None) or hooks_on() or prepared.staged:
        return False  # (a staged launch copies its operands first: the checked path's run_kernel does)
    idx = _reuse_index(prepared.device)
    if idx is None:
        return False
    spec = _spec_key(kernel, prepared.args, prepared.kwargs, idx)
    try:
        bound = None if spec is None else COMPILED.get(spec)
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
        raw(f.grid[0], raw_stream(f.cuda_index), f.raw_args(raw, a, b, out, c, alpha, beta, ws, cnt))
    store(fkey, f)
    return True


def hit(fkey: tuple | None) -> "FastEntry | None":
    if fkey is None:
        return None
    f = FAST.get(fkey)
    if f is None or _device.CACHE.get(f.devkey) is not f.info:
        return None
    return f


def fast_valid(f: "FastEntry") -> bool:
    """Whether a warm entry looked up earlier still holds: the device → profile mapping it was built
    under is current (``clear_caches`` or a profile change invalidates it)."""
    return _device.CACHE.get(f.devkey) is f.info


def fast_context(dtype: torch.dtype) -> tuple:
    """What besides the operands decides a warm entry, as one hashable value: the TF32 flag (fp32
    only), the environment that picks the profile or table, the tile-table generation, and the number of
    :func:`clear_caches` calls (a signature remembered before one, e.g. the ops' VENDOR signatures, stops
    applying)."""
    return (dtype is torch.float32 and allow_tf32(), _env_now(), tables.GENERATION[0], _deterministic(), CLEARS[0])


def launch_fast(f: "FastEntry", a: torch.Tensor, b: torch.Tensor, out: torch.Tensor, c: torch.Tensor | None = None,
                alpha: float = 1.0, beta: float = 0.0) -> torch.Tensor:
    """Launch the warm entry ``f`` (from :func:`fast_lookup`) on operands of its key; returns out.
    ``out`` must have ``f``'s output address class (a fresh torch allocation does)."""
    f.call(a, b, out, c, alpha, beta)
    COUNTS["launches"] += 1
    return out


def launch_ready(f: "FastEntry", a: torch.Tensor, b: torch.Tensor, out: torch.Tensor, c: torch.Tensor | None = None,
                 alpha: float = 1.0, beta: float = 0.0) -> torch.Tensor:
    """:func:`launch_fast` for an entry :func:`raw_ready` has just vouched for (raw launcher, no
    staging, no launch hook): the raw launch without checking those again."""
    f.call_ready(a, b, out, c, alpha, beta)
    COUNTS["launches"] += 1
    return out


def launch_warm(f: "FastEntry", a: torch.Tensor, b: torch.Tensor, out: torch.Tensor, c: torch.Tensor | None = None,
                alpha: float = 1.0, beta: float = 0.0) -> bool:
    """:func:`launch_ready` if :func:`raw_ready` holds, in one call: True once launched, False when
    nothing was launched (then the caller launches the key's own views with :func:`launch_fast`)."""
    if f.raw is None or f.staged or hooks_on():
        return False
    f.call_ready(a, b, out, c, alpha, beta)
    COUNTS["launches"] += 1
    return True


def raw_ready(f: "FastEntry") -> bool:
    """Whether ``f`` launches through the raw launcher with nothing but the operands' addresses
    (no staging copy, no Triton launch hook, a GPU entry): then any tensors with the same base
    addresses as the key's operands may stand in for them (e.g. an N-D activation for its 2-D view)."""
    return f.raw is not None and not f.staged and not hooks_on()


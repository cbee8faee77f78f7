"""The warm path for what models call: ``F.linear`` and ``matmul`` on N-D activations, ``nn.Parameter``
weights, bias, under ``no_grad`` / ``inference_mode`` and under autograd; positional ``torch.addmm(c, a, b)``
(GPT-2's Conv1D, autograd included: :class:`_Addmm`) and ``torch.bmm(a, b)`` (no autograd) on the
dispatcher's fast entry for their exact operands (:func:`addmm_hot`, :func:`bmm_hot`).

Contract: :func:`linear` and :func:`matmul` return the same tensor (values, shape, strides, dtype,
autograd graph) as ``tritonblas.linear`` / ``tritonblas.matmul`` would, or None when
they cannot serve the call warm (then the caller takes the checked path, which records what the
next call needs). A call is served warm when

- this exact operand signature (shapes, strides, dtypes, devices, address classes ``data_ptr() % 16``,
  bias signature) ran through the checked path before and the dispatcher holds a fast entry for the
  kernel-level views it reduced to (:func:`tritonblas.dispatch.fast_lookup`), under the same
  :func:`tritonblas.dispatch.fast_context` (TF32 flag, environment, tile-table generation);
- the call may skip the custom op (:func:`direct`: plain tensors, nothing intercepting torch's ops);
- ``$TRITONBLAS_FAST`` is not ``0`` (the off switch: every call then takes the checked path).

Under autograd (grad enabled and an input requiring grad) the call runs through :class:`_Linear` /
:class:`_Matmul`, lean ``torch.autograd.Function`` s whose backward GEMMs go through the same warm path
and produce each gradient in its input's own layout: for ``linear`` the weight gradient is computed as
``grad.T @ x`` straight into an (out, in) row-major buffer, as torch's addmm backward does, so autograd
adds no transposing copy before accumulating it (the custom op's backward produced ``x.T @ grad`` and
AccumulateGrad copied it into the weight's layout: 69 strided-copy launches, 4.2 ms of a 2-layer
Llama training step on the H200, 2026-12-01). ``torch.compile`` / export keep the ``torch.library``
custom ops of :mod:`tritonblas.ops`.

Host cost (what this module is for): one tuple of the operands' metadata, two dict lookups, the output
allocation and the raw launch; on a GPU with the raw launcher bound the N-D activation and the
weight are passed by address (the kernel's 2-D views share them), so no view is built.
"""

from __future__ import annotations

import math
import threading

import torch

from tritonblas import _compat, autocast, counters, dispatch, handover
from tritonblas import plan as _plan

__all__ = ["ENV_FAST", "enabled", "direct", "linear", "matmul", "linear_hot", "matmul_hot", "clear", "MAX_ENTRIES",
           "TORCH", "record_unroutable_linear", "record_unroutable_matmul", "addmm_hot", "bmm_hot",
           "refused_class", "record_refused_class", "REFUSED_CLASSES", "small_eager", "small_grad", "stage_shared"]

from tritonblas import settings  # noqa: E402
from tritonblas.settings import (ENV_EAGER_MIN_GFLOP, ENV_FAST, ENV_GRAD_MIN_GFLOP, eager_min_gflop,  # noqa: E402
                                 grad_min_gflop, raw_equals, raw_getter)
MAX_ENTRIES = 4096

_PLAIN = (torch.Tensor, torch.nn.Parameter)
_C = torch._C
_is_compiling = torch.compiler.is_compiling
_grad_enabled = torch.is_grad_enabled
_tf_modes = _C._is_torch_function_mode_enabled
_dispatch_modes = _C._len_torch_dispatch_stack
_functorch_level = _C._functorch.peek_interpreter_stack
_tracing = _C._get_tracing_state
_fwad = torch.autograd.forward_ad  # its _current_level >= 0: a dual level is open (forward-mode AD)
_any_autocast = getattr(_C, "_is_any_autocast_enabled", None) or (lambda: any(
    torch.is_autocast_enabled(d) for d in ("cuda", "cpu")))
_new_empty = torch.Tensor.new_empty  # an output like its input (dtype, device): no keyword parsing, ~0.35 us less than torch.empty(dtype=, device=) (CPU)

_fast_context = dispatch.fast_context
_COUNTS = counters.COUNTS  # the warm paths count their hits directly (tritonblas.counters: a frame less a call)
_launch_warm = dispatch.launch_warm  # the raw launch when ready (raw_ready + launch_ready), else False
_LINEAR: dict[tuple, tuple] = {}  # linear signature → (fast entry, output shape)
_MATMUL: dict[tuple, tuple] = {}  # matmul signature → (fast entry, output shape, kernel views' shapes)
# linear / matmul signatures torch runs: True, a tile table's VENDOR entry (counted as a fallback); False, one
# the route could not take (record_unroutable_linear / _matmul: counted as intercepted only)
_TORCH_SIGS: dict[tuple, bool] = {}
# Operand classes, (dtype, device) → the environments (dispatch.environment()) in which no call of
# that class can route, whatever the op or its shapes: a dtype the kernels do not take or a device they cannot
# run on (record_refused_class). Every routing wrapper hands such a call to torch before anything else
# (refused_class). _ROUTABLE_CLASSES: the (class, environment) pairs found routable, so that a refusal of one
# call of a routable class costs a set lookup, not a probe, the next time.
REFUSED_CLASSES: dict[tuple, set] = {}
_ROUTABLE_CLASSES: set = set()
_LOCK = threading.Lock()
_environment = dispatch.environment
TORCH = object()  # linear / matmul / *_hot: "run torch's own function" (a VENDOR signature, known warm)


def _to_torch():
    """:data:`TORCH`, counted: torch runs the call, so ``stats()['fallbacks']`` counts it as the checked
    path's VENDOR plan does."""
    dispatch.count("fallbacks")
    return TORCH


def enabled() -> bool:
    """False when ``$TRITONBLAS_FAST`` is ``0`` (read per call)."""
    return not _fast_off()


_fast_off = raw_equals(ENV_FAST, "0")  # per call (tritonblas.settings.raw_equals)
_min_gflop_raw = raw_getter(ENV_EAGER_MIN_GFLOP)  # per call, no Python frame; parsed once per value (_MIN_FLOP)
_MIN_FLOP: dict = {}


def small_eager(raw: str, flop: int, t) -> bool:
    """Whether an eager GEMM of ``flop`` (2·M·N·K) on ``t``'s device runs torch's op under
    ``TRITONBLAS_EAGER_MIN_GFLOP``, whose raw value the caller read as ``raw`` (an experiment, unset: never). Not while ``t``'s stream captures a CUDA
    graph, where the host's cost is paid once. Why: inside a host-bound model our warm call costs ~40 us more
    than torch's (H100, gpt2-medium's training forward: ``benchmarks/results/train_forward_h100_90ab230.txt``),
    more than our kernel saves on a small GEMM. The callers (``*_hot``) ask only with the variable set."""
    if not _under(_MIN_FLOP, raw, eager_min_gflop, flop):
        return False
    return not (t.is_cuda and dispatch.capturing())


def _under(cache: dict, raw, reader, flop: int) -> bool:
    """Whether ``flop`` is under the GFLOP threshold ``reader()`` (a :mod:`tritonblas.settings` reader) gives for
    its variable's raw value ``raw``, parsed once per raw value into ``cache``."""
    limit = cache.get(raw)
    if limit is None:
        limit = cache[raw] = reader() * 1e9  # a bad value raises here, naming the variable
    return flop < limit


_grad_min_raw = raw_getter(ENV_GRAD_MIN_GFLOP)  # per call; parsed once per raw value, unset included (_GRAD_FLOP)
_GRAD_FLOP: dict = {}


def small_grad(raw, t, flop: int, m: int, n: int, k: int) -> bool:
    """Whether an eager GEMM that autograd records, of ``flop`` (2·M·N·K, batch included) and sizes m, n, k, runs
    torch's op (forward, and so its backward) under ``TRITONBLAS_GRAD_MIN_GFLOP``, whose raw value the caller
    read as ``raw`` (None: unset, the default threshold; "0": never). Only where m, n and k are all multiples of
    16 bytes' elements (under autocast, of the 2-byte type the GEMM will run in), and not while ``t``'s stream
    captures a CUDA graph (the host's cost is paid once there).

    Why, measured (H100, ``benchmarks/models.py``, bf16 training steps, eager): a small training step is
    host-bound, and our warm call under autograd costs about twice torch's host time in the model (gpt2-medium:
    58 against 30 us a forward GEMM, backward host 29.5 against 25.3 ms; ``results/models_h100_a9897a8.csv``),
    more than our kernel can save on a GEMM of a few GFLOP, where cuBLAS's aligned kernels are at their best.
    ``TRITONBLAS_EAGER_MIN_GFLOP=20`` on every eager GEMM moved gpt2-medium training 0.978x -> 1.037x and
    bert-large 0.909x -> 0.927x, but cost eager decode 2% (no autograd there: this rule leaves it alone) and
    DLRM training 3% (1.277x -> 1.234x; its unaligned widths are where cuBLAS is slow and we are not: this
    rule leaves them to us) (``results/models_h100_eager_6368e34.csv``). This rule, measured the same way
    (``results/models_h100_499b5b3.csv`` against a9897a8's run): gpt2-medium training 0.870x -> 0.982x,
    bert-large 0.865x -> 0.877x, the rest within host noise. Its own toll, a call it sends to torch, is ~3 us on a
    CPU in a loop (``python benchmarks/host_linear.py --grad-toll``)."""
    if not _under(_GRAD_FLOP, raw, grad_min_gflop, flop):
        return False
    e = 8 if _any_autocast() else 16 // t.element_size()  # elements in 16 bytes (autocast: of its 2-byte type)
    if m % e or n % e or k % e:
        return False
    return not (t.is_cuda and dispatch.capturing())


def clear() -> None:
    """Forget every warm signature and every weight's kept verdict (the dispatcher's fast entries are cleared with
    its caches)."""
    with _LOCK:
        _LINEAR.clear()
        _MATMUL.clear()
        _TORCH_SIGS.clear()
        REFUSED_CLASSES.clear()
        _ROUTABLE_CLASSES.clear()
    handover.clear()


def direct(*tensors) -> bool:
    """Whether running the dispatcher directly gives exactly what the custom op would: plain tensors
    (``Tensor`` / ``nn.Parameter``), and nothing that intercepts ops — not compiling (dynamo/export),
    no TorchFunctionMode or TorchDispatchMode (FakeTensorMode, make_fx, FlopCounterMode, ...), no
    functorch transform (vmap, grad, functionalize), no TorchScript tracing. Autograd is the
    caller's concern (:func:`needs_grad`)."""
    for t in tensors:
        if t is not None and type(t) not in _PLAIN:
            return False
    # is_compiling() first: dynamo folds it to True while tracing and never reaches the C queries
    # after it, which it cannot trace (a graph break there sent the rest of the call eager)
    return not (_is_compiling() or _intercepting())


def _intercepting() -> bool:
    """A TorchFunctionMode or TorchDispatchMode, a functorch transform, TorchScript tracing, or a
    forward-mode AD dual level (``torch.autograd.forward_ad.dual_level``: a dual tensor is a plain
    Tensor whose tangent only torch's ops carry) is active (what :func:`direct` checks besides
    ``is_compiling()``)."""
    return bool(_tf_modes() or _dispatch_modes() or _functorch_level() is not None or _tracing() is not None
                or _fwad._current_level >= 0)


def forward_ad() -> bool:
    """Whether a forward-mode AD dual level is open: the kernels (and the custom ops, whose autograd
    has no forward formula) would drop the tangents, so torch's ops run the call."""
    return _fwad._current_level >= 0


def needs_grad(*tensors) -> bool:
    if not _grad_enabled():
        return False
    for t in tensors:
        if t is not None and t.requires_grad:
            return True
    return False


def transposed_view(t) -> bool:
    """Whether ``t`` is a 2-D transposed view (column-major, both dims > 1), such as ``w.t()`` of a
    row-major weight: its gradient is produced as ``(grad.T @ a).T`` to land in that layout."""
    return t.dim() == 2 and t.stride(0) == 1 and t.stride(1) != 1 and t.shape[0] > 1 and t.shape[1] > 1


def _flat(t, keep: int = 1):
    """``t`` reshaped to (product of the leading dims, *its last ``keep`` dims), sizes spelled out:
    ``reshape(-1, ...)`` is ambiguous (an error) for a tensor with no elements, e.g. K = 0 or N = 0.
    For ``keep=1`` and ``t.dim() >= 2`` this is ``t.flatten(0, -2)`` (a reshape too), which the
    backward passes call directly."""
    return t.reshape(math.prod(t.shape[:-keep]), *t.shape[t.dim() - keep:])


def _store(table: dict, key: tuple, value: tuple) -> None:
    with _LOCK:
        while len(table) >= MAX_ENTRIES:
            table.pop(next(iter(table)))
        table[key] = value


# --- linear ----------------------------------------------------------------------------------
def _linear_key(x, w, bias) -> tuple:
    """Per tensor of x, w and bias (None) what a warm entry is keyed on (``launchcache.fast_key``'s fields:
    shape, strides, dtype, device, ``data_ptr() % 16``, the neg/zero bit), then the fast context, as
    one flat tuple (x's device at [3]). The neg/zero bit: a lazily negated view (``z.conj().imag``) or an
    efficient zero tensor has its plain twin's signature otherwise, and torch runs it."""
    dt = x.dtype
    if bias is None:
        return (x.shape, x.stride(), dt, x.device, x.data_ptr() & 15, x.is_neg() or x._is_zerotensor(),
                w.shape, w.stride(), w.dtype, w.device, w.data_ptr() & 15, w.is_neg() or w._is_zerotensor(),
                None, _fast_context(dt))
    return (x.shape, x.stride(), dt, x.device, x.data_ptr() & 15, x.is_neg() or x._is_zerotensor(),
            w.shape, w.stride(), w.dtype, w.device, w.data_ptr() & 15, w.is_neg() or w._is_zerotensor(),
            bias.shape, bias.stride(), bias.dtype, bias.device, bias.data_ptr() & 15,
            bias.is_neg() or bias._is_zerotensor(), _fast_context(dt))


def _linear_views(x, w):
    """The kernel operands of ``x @ w.T``: (rows, K) and the (K, N) view of w; None when x's leading
    dims cannot be viewed as one."""
    if x.dim() == 2:
        return x, w.t()
    try:
        return x.view(math.prod(x.shape[:-1]), x.shape[-1]), w.t()
    except RuntimeError:
        return None


def _linear_run(x, w, bias):
    """``x @ w.T + bias`` warm (grad off, or inside the autograd Function); None on a miss."""
    try:
        key = _linear_key(x, w, bias)
    except (RuntimeError, NotImplementedError):
        return None
    hit = _LINEAR.get(key)
    if hit is None:
        return None
    return _linear_warm(hit, x, w, bias)


def _linear_warm(hit: tuple, x, w, bias):
    """``x @ w.T + bias`` on the warm entry ``hit`` (``_LINEAR``'s value for the call's signature);
    None when the entry no longer holds (the device → profile mapping changed)."""
    f, out_shape = hit
    if not dispatch.fast_valid(f):
        return None
    out = _new_empty(x, out_shape)
    if not _launch_warm(f, x, w, out, bias, 1.0, 1.0 if bias is not None else 0.0):
        a, b = _linear_views(x, w)
        dispatch.launch_fast(f, a, b, out.view(-1, out_shape[-1]) if out.dim() != 2 else out, bias,
                             1.0, 1.0 if bias is not None else 0.0)
    _COUNTS["fast_hits"] += 1
    return out


def record_linear(x, w, bias) -> None:
    """After a checked ``linear(x, w, bias)`` (grad off, default profile, no config): remember its
    fast entry under the call's own signature, when the dispatcher holds one for its views and the
    launch binds them as the kernel-level views of exactly these tensors."""
    if not enabled() or w.dim() != 2 or x.dim() < 2:
        return
    views = _linear_views(x, w)
    if views is None:
        return
    a, b = views
    if bias is not None and (bias.dim() != 1 or bias.shape[0] != w.shape[0]):
        return
    try:
        f = dispatch.fast_lookup(a, b, None, bias)
        key = _linear_key(x, w, bias)
    except (RuntimeError, NotImplementedError):
        return
    if f is None:
        if dispatch.fast_vendor(a, b, None, bias):
            _store(_TORCH_SIGS, ("linear", key), True)
        return
    if tuple(f.out_shape) != (a.shape[0], w.shape[0]):
        return
    _store(_LINEAR, key, (f, (*x.shape[:-1], w.shape[0])))


class _Linear(torch.autograd.Function):
    """``F.linear`` on tritonblas kernels under autograd: forward warm, backward GEMMs warm, each
    gradient in its input's layout (weight: (out, in) row-major from ``grad.T @ x``)."""

    @staticmethod
    def forward(ctx, x, w, bias, hit):
        out = None if hit is None else _linear_warm(hit, x, w, bias)
        if out is None:
            out = _linear_checked(x, w, bias)
        if out._base is not None:  # a view of the kernel's 2-D output: autograd forbids in-place on it
            out = out.detach()
        # what torch's addmm saves: x for w's gradient, w for x's (a bias-only or frozen-weight
        # call must not pin, version-check or refuse as an inference tensor what it never reads)
        need = ctx.needs_input_grad
        ctx.save_for_backward(x if need[1] else None, w if need[0] else None)
        ctx.x_shape = x.shape
        ctx.has_bias = bias is not None
        return out

    @staticmethod
    def backward(ctx, grad):
        x, w = ctx.saved_tensors
        gx = gw = gb = None
        x_shape = ctx.x_shape
        g2 = grad.flatten(0, -2)  # _flat(grad): x (so grad) has >= 2 dims here; one C call
        # create_graph=True (grad mode on in backward): the gradients must carry their own graph for a
        # double backward; the raw launches below record none (their results were silently constants)
        mm = _mm_graph if _grad_enabled() else _mm
        need = ctx.needs_input_grad
        x2 = x.flatten(0, -2) if need[1] else None
        if need[0] and need[1] and mm is _mm and (g2.data_ptr() | g2.stride(0) * g2.stride(1) * g2.element_size()) & 15:
            g2s = stage_shared(g2, w, x2)  # a ragged grad (an lm_head's logits) is copied once, not once per GEMM
        else:
            g2s = g2
        if need[0]:
            gx = mm(g2s, w).view(*x_shape[:-1], w.shape[1])
        if need[1]:
            gw = mm(g2s.t(), x2)
        if ctx.has_bias and need[2]:
            gb = g2.sum(0)
        return gx, gw, gb, None


def stage_shared(g2, w, x2):
    """``g2``, or one 16-byte-aligned copy of it when the warm entries of both of ``F.linear``'s backward GEMMs,
    ``g2 @ w`` and ``g2.T @ x2``, would each copy it (alignment staging: ``tritonblas.plan.align_staging_for``)
    into buffers of one storage layout: the GEMMs then read the one copy (planned as the aligned problems they
    are) instead of making two. Why: GPT-2's lm_head gradient, 2048x50257 bf16 logits (206 MB, rows 2-byte
    aligned), was staged twice per training step, ~0.5 ms of copies on the H100 (``direct_copy``,
    ``models_h100_eager_6368e34.csv``: other GPU time 19.01 ms against torch's 18.52). Entries not yet warm, or
    whose copies would differ in layout (a K-major tf32/fp8 copy for one of them), leave ``g2`` as it is."""
    order = _plan.operand_order(g2)
    if order not in (0, 1):
        return g2
    f1 = dispatch.fast_lookup(g2, w)
    if f1 is None or (0, order) not in f1.staged:
        return g2
    f2 = dispatch.fast_lookup(g2.t(), x2)
    if f2 is None or (0, 1 - order) not in f2.staged:  # g2.T's copy in the same storage layout as g2's
        return g2
    copies: list = []
    bound = _plan.staging_buffer(g2, order, copies)
    for buffer, source in copies:
        _plan.stage_copy(buffer, source)
    return bound


def _linear_checked(x, w, bias):
    """``x @ w.T + bias`` through the dispatcher's checked path (the caller checked shapes and dtypes),
    then remember the signature for the warm path."""
    views = _linear_views(x, w)
    a, b = views if views is not None else (_flat(x), w.t())
    r = dispatch.gemm(a, b, c=bias, alpha=1.0, beta=0.0 if bias is None else 1.0, op="addmm" if bias is not None else "mm")
    record_linear(x, w, bias)
    return r.view(*x.shape[:-1], w.shape[0])


def _matmul_checked(a, b):
    """``a @ b`` for the cases :class:`_Matmul` takes — b 2-D, or a and b with equal batch dims —
    through the dispatcher's checked path, then remember the signature for the warm path."""
    if b.dim() == 2:
        ka, kb = _flat(a), b
    else:
        ka, kb = _flat(a, 2), _flat(b, 2)
    r = dispatch.gemm(ka, kb, op="mm")
    record_matmul(a, b, ka, kb)
    return r.view(*a.shape[:-1], b.shape[-1])


def _mm_graph(a, b):
    """a @ b for a backward under ``create_graph=True``: through :class:`_Matmul`, so the result is
    differentiable (its backward runs on the same kernels)."""
    return _Matmul.apply(a, b, _matmul_hit(a, b))


def _mm(a, b):
    """a @ b for 2-D kernel-level operands, warm when the dispatcher holds the entry."""
    f = dispatch.fast_lookup(a, b)
    if f is not None:
        out = _new_empty(a, f.out_shape)
        _COUNTS["fast_hits"] += 1
        if not _launch_warm(f, a, b, out):
            dispatch.launch_fast(f, a, b, out)
        return out
    return dispatch.gemm(a, b, op="mm")


def _torch_linear(x, w, bias) -> bool:
    """Whether this ``F.linear`` signature ran torch for a tile table's VENDOR entry (then torch's own
    ``F.linear`` serves it, autograd included: :data:`TORCH`)."""
    try:
        return _TORCH_SIGS.get(("linear", _linear_key(x, w, bias))) is True
    except (RuntimeError, NotImplementedError):
        return False


def _torch_matmul(a, b) -> bool:
    """:func:`_torch_linear` for ``matmul(a, b)``."""
    try:
        return _TORCH_SIGS.get(("matmul", _matmul_key(a, b))) is True
    except (RuntimeError, NotImplementedError):
        return False


def linear(x, w, bias=None):
    """``F.linear(x, w, bias)`` warm, :data:`TORCH` (the caller runs torch's F.linear), or None (see the
    module docstring)."""
    if type(x) not in _PLAIN or type(w) not in _PLAIN or (bias is not None and type(bias) not in _PLAIN):
        return None
    if not enabled() or not direct():
        return None
    if _TORCH_SIGS and not _any_autocast() and _torch_linear(x, w, bias):
        return _to_torch()  # (under autocast torch's function would cast; the checked path, like our kernels, does not)
    if _grad_enabled() and (x.requires_grad or w.requires_grad or (bias is not None and bias.requires_grad)):
        try:
            hit = _LINEAR.get(_linear_key(x, w, bias))  # a known signature passed the checks below before
        except (RuntimeError, NotImplementedError):
            return None
        if hit is None:
            if x.dim() < 2 or w.dim() != 2 or x.shape[-1] != w.shape[1] or x.dtype != w.dtype:
                return None
            if bias is not None and (bias.dim() != 1 or bias.shape[0] != w.shape[0] or bias.dtype != x.dtype):
                return None
            if not dispatch.kernels_take(x, w, bias):
                return None
        return _linear_grad(x, w, bias, hit)
    return _linear_run(x, w, bias)


def linear_hot(x, w, bias=None):
    """:func:`linear` for the eager, default-profile call the routing wrapper sees first
    (``F.linear(x, w[, b])`` positionally, not compiling: the wrapper checked; under autocast on the
    tensors :func:`tritonblas.autocast.cast_inputs` gives, as the route casts them): the warm
    result, :data:`TORCH` for a signature torch runs (a tile table's VENDOR entry, or one the route
    could not take: :func:`record_unroutable_linear`), or None and the caller takes its usual route.
    One function instead of the route's chain: 44 Python calls per warm ``F.linear`` under
    ``enable()`` against 64 through the route (cProfile, CPU host, launch stubbed out, 2026-12-01)."""
    if type(x) not in _PLAIN or type(w) not in _PLAIN or (bias is not None and type(bias) not in _PLAIN):
        return None
    if _fast_off():
        return None
    # the rules that hand a call to torch's op come before _intercepting(): torch's own op is right under any mode
    # or transform, and a call they hand over skips that check (~0.4 us of the fall-through's toll, CPU loop)
    if (raw := _min_gflop_raw()) is not None and w.dim() == 2 and small_eager(raw, 2 * x.numel() * w.shape[0], x):
        return TORCH
    # (the vendor rule was asked before this call, by the routing wrapper's front: handover.linear_handed)
    grad = _grad_enabled() and (x.requires_grad or w.requires_grad or (bias is not None and bias.requires_grad))
    if grad and w.dim() == 2 and x.dim() >= 1:
        (n, k), numel = w.shape, x.numel()  # (each read once: a Parameter's shape costs ~0.3 us)
        if small_grad(_grad_min_raw(), x, 2 * numel * n, numel // max(k, 1), n, k):
            return TORCH
    if _intercepting():
        return None
    if _any_autocast():  # the tensors torch's autocast would hand to aten::linear, as the route casts them
        x, w, bias = autocast.cast_inputs(x, w, bias, op="linear")
    try:
        key = _linear_key(x, w, bias)
    except (RuntimeError, NotImplementedError):
        return None
    if _TORCH_SIGS:
        vendor = _TORCH_SIGS.get(("linear", key))
        if vendor is not None:
            return _to_torch() if vendor else TORCH
    hit = _LINEAR.get(key)
    if grad:
        # under autograd: a known signature goes straight to the autograd Function (an unknown one
        # takes the route, whose fastpath.linear checks it first)
        if hit is None or not dispatch.fast_valid(hit[0]):  # the checked path runs inside the route
            return None
        return _linear_grad(x, w, bias, hit)
    return None if hit is None else _linear_warm(hit, x, w, bias)


def matmul_hot(a, b):
    """:func:`linear_hot` for ``torch.matmul(a, b)`` / ``a @ b``."""
    if type(a) not in _PLAIN or type(b) not in _PLAIN or a.is_nested or b.is_nested:
        return None  # (nested: sizes a strided-layout one lacks; the route hands it to torch)
    if _fast_off():
        return None
    if (raw := _min_gflop_raw()) is not None and a.dim() >= 2 and b.dim() >= 2 and \
            small_eager(raw, 2 * max(a.numel() * b.shape[-1], b.numel() * a.shape[-2]), a):
        return TORCH  # (2·K·output elements, a batch broadcast from either side)
    grad = _grad_enabled() and (a.requires_grad or b.requires_grad)  # (the vendor rule: handover.matmul_handed, before)
    if grad and a.dim() >= 2 and b.dim() >= 2:
        (m, k), n = a.shape[-2:], b.shape[-1]
        if small_grad(_grad_min_raw(), a, 2 * max(a.numel() * n, b.numel() * m), m, n, k):
            return TORCH
    if _intercepting():  # (after the rules: see linear_hot)
        return None
    if _any_autocast():
        a, b = autocast.cast_inputs(a, b, op="matmul")
    try:
        key = _matmul_key(a, b)
    except (RuntimeError, NotImplementedError):
        return None
    if _TORCH_SIGS:
        vendor = _TORCH_SIGS.get(("matmul", key))
        if vendor is not None:
            return _to_torch() if vendor else TORCH
    hit = _MATMUL.get(key)
    if grad:
        if not _matmul_autograd_case(a, b):
            return None
        if hit is None or not dispatch.fast_valid(hit[0]):  # the checked path runs inside the route
            return None
        return _matmul_grad(a, b, hit)
    return None if hit is None else _matmul_warm(hit, a, b)


def addmm_hot(c, a, b):
    """``torch.addmm(c, a, b)`` (positional: beta = alpha = 1; GPT-2's Conv1D) warm: the dispatcher's fast
    entry for exactly these kernel operands and this ``c`` (:func:`tritonblas.dispatch.fast_lookup`, which
    the checked call recorded), launched on a fresh output; under autograd through :class:`_Addmm` on
    that entry. None (the caller takes its route) when there is none or in a state :func:`linear_hot`
    bails on. Host work a call, launch stubbed (``python benchmarks/host_linear.py --cpu-stub``, this CPU,
    2026-12-05): the checked route 27.7 us without grad and 237 us for forward + backward under autograd
    (the custom op's), against 9.6 us warm."""
    if type(c) not in _PLAIN or type(a) not in _PLAIN or type(b) not in _PLAIN:
        return None
    if a.dim() != 2 or b.dim() != 2:  # an entry of a batched op with these operands: torch.addmm raises here
        return None
    if _fast_off():
        return None
    if (raw := _min_gflop_raw()) is not None and small_eager(raw, 2 * a.numel() * b.shape[1], a):
        return TORCH
    grad = _grad_enabled() and (c.requires_grad or a.requires_grad or b.requires_grad)  # (handover.addmm_handed's)
    if grad:
        (m, k), n = a.shape, b.shape[1]
        if small_grad(_grad_min_raw(), a, 2 * m * n * k, m, n, k):
            return TORCH
    if _intercepting():  # (after the rules: see linear_hot)
        return None
    if _any_autocast():
        c, a, b = autocast.cast_inputs(c, a, b, op="addmm")
    f = dispatch.fast_lookup(a, b, None, c)
    if grad:
        if f is None or not dispatch.fast_valid(f):  # the route's checked call records the entry first
            return None
        return _addmm_apply(_unwrap_dead(c), _unwrap_dead(a), _unwrap_dead(b), f)
    return _run_entry(f, a, b, c, 1.0)


class _Addmm(torch.autograd.Function):
    """``torch.addmm(c, a, b)`` (alpha = beta = 1, 2-D a and b, c broadcast to the result) under autograd
    on a warm entry (:func:`addmm_hot`): gradients in their inputs' layouts, as :class:`_Matmul`'s (b's
    from ``a.T @ grad`` into its row-major buffer, or transposed for a transposed view), c's summed
    down to its shape."""

    @staticmethod
    def forward(ctx, c, a, b, f):
        out = _run_entry(f, a, b, c, 1.0)
        if out is None:  # the entry went stale between the lookup and here: the checked path
            out = dispatch.gemm(a, b, c=c, alpha=1.0, beta=1.0, op="addmm")
        need = ctx.needs_input_grad  # as torch's addmm: a for b's gradient, b for a's
        ctx.save_for_backward(a if need[2] else None, b if need[1] else None)
        ctx.c_shape, ctx.b_t = c.shape, transposed_view(b)
        return out

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        gc = ga = gb = None
        graph = _grad_enabled()  # create_graph=True: differentiable gradients (see _Linear.backward)
        if ctx.needs_input_grad[0]:
            gc = grad.sum_to_size(ctx.c_shape)
        if ctx.needs_input_grad[1]:
            ga = (_mm_graph if graph else _mm)(grad, b.t())
        if ctx.needs_input_grad[2]:
            gb = _mm_graph(a.t(), grad) if graph else _mm_like(a.t(), grad, ctx.b_t)
        return gc, ga, gb, None


def bmm_hot(a, b):
    """:func:`addmm_hot` for ``torch.bmm(a, b)``."""
    if type(a) not in _PLAIN or type(b) not in _PLAIN:
        return None
    if a.dim() != 3 or b.dim() != 3 or a.is_nested or b.is_nested or a.shape[0] != b.shape[0]:
        return None  # (torch.bmm raises where the batches differ, a matmul entry may broadcast; nested: torch's)
    if _fast_off():
        return None
    if (raw := _min_gflop_raw()) is not None and small_eager(raw, 2 * a.numel() * b.shape[2], a):
        return TORCH
    grad = _grad_enabled() and (a.requires_grad or b.requires_grad)  # (the vendor rule: handover.bmm_handed, before)
    if grad:
        (_, m, k), n = a.shape, b.shape[2]
        if small_grad(_grad_min_raw(), a, 2 * a.numel() * n, m, n, k):
            return TORCH
        return None
    if _intercepting():  # (after the rules: see linear_hot)
        return None
    if _any_autocast():
        a, b = autocast.cast_inputs(a, b, op="bmm")
    return _run_entry(dispatch.fast_lookup(a, b), a, b, None, 0.0)


def _run_entry(f, a, b, c, beta: float):
    """Launch the fast entry ``f`` for kernel operands (a, b[, c]) on a fresh output; None without one."""
    if f is None or not dispatch.fast_valid(f):
        return None
    out = _new_empty(a, f.out_shape)
    if not _launch_warm(f, a, b, out, c, 1.0, beta):
        dispatch.launch_fast(f, a, b, out, c, 1.0, beta)
    _COUNTS["fast_hits"] += 1
    return out


run_entry = _run_entry  # public: tritonblas.below_autograd launches a looked-up entry the same way


def _unroutable(op: str, key_of, tensors) -> None:
    if (any(t is not None and type(t) not in _PLAIN for t in tensors) or _fast_off() or _is_compiling()
            or _intercepting() or _any_autocast()):
        return  # a state the hot path does not serve: the refusal may have come from it, not the signature
    try:
        key = key_of(*tensors)
    except (RuntimeError, NotImplementedError, AttributeError, TypeError):  # (no tensor where one must be: torch's error)
        return
    _store(_TORCH_SIGS, (op, key), False)


# --- refused classes (every routed op) ---------------------------------------------------------------
def _one_class(t0, args, kwargs) -> bool:
    """Whether every tensor among a call's arguments is a plain tensor of ``t0``'s dtype and device."""
    dt, dev = t0.dtype, t0.device
    for u in (args if not kwargs else (*args, *kwargs.values())):
        if type(u) in _PLAIN:
            if u.dtype is not dt or u.device != dev:
                return False
        elif isinstance(u, torch.Tensor):
            return False
    return True


def refused_class(args, kwargs) -> bool:
    """Whether a call (any routed op, its arguments as given; the first a plain tensor) is of a class
    :func:`record_refused_class` found no call can route in this environment: then the routing wrapper hands
    it to torch before the hot path or the route look at it. False at once while no class is refused (the
    warm path's case), with ``TRITONBLAS_FAST=0`` (this memory is part of the warm path) and under autocast
    (which changes the dtype the route would see). Why: with every GEMM falling through, ``torch.mm`` and
    ``addmm`` under ``enable()`` cost 17 us a call more than torch's own, ``bmm``, ``baddbmm``, ``addbmm``,
    ``mv`` and ``addmv`` 9-13 us (CPU fp32 without a profile, this CPU, 2026-12-05), when only ``F.linear`` and
    ``matmul`` had a memory of refusals (1.9-2.3 us)."""
    if not REFUSED_CLASSES or not args:
        return False
    t = args[0]
    if type(t) not in _PLAIN:
        return False
    dt, dev = t.dtype, t.device
    envs = REFUSED_CLASSES.get((dt, dev))
    if envs is None or _environment() not in envs or _fast_off() or _any_autocast():
        return False
    # _one_class, inline on purpose: this runs on every refused call, and calling it measured 0.05-0.2 us more a
    # call (host_linear.py --fallthrough-ops, 9 rounds each way, 2026-12-05)
    for u in (args[1:] if not kwargs else (*args[1:], *kwargs.values())):
        if type(u) in _PLAIN:
            if u.dtype is not dt or u.device != dev:
                return False
        elif isinstance(u, torch.Tensor):
            return False
    return True


def record_refused_class(args, kwargs) -> None:
    """After the route refused a call under the default profile: when its first argument is a plain tensor,
    every tensor argument is of its dtype and device, and no call of that class can route in this
    environment (:func:`_class_unroutable`), remember the class for :func:`refused_class`. A class found
    routable is remembered as such, so a later refusal of a call of it (its shapes, a layout, one tensor's
    own state) costs a lookup here, not a probe. Nothing is recorded under a mode, a transform, tracing or a
    forward-AD level (the probe tensor itself would pass through them and could be refused for that), nor
    with ``TRITONBLAS_FAST=0``."""
    if not args or type(args[0]) not in _PLAIN or _fast_off() or _intercepting():
        return
    t = args[0]
    cls, env = (t.dtype, t.device), _environment()
    if (cls, env) in _ROUTABLE_CLASSES or env in REFUSED_CLASSES.get(cls, ()):
        return
    if not _one_class(t, args[1:], kwargs):
        return
    refused = _class_unroutable(*cls)
    with _LOCK:
        if refused:
            REFUSED_CLASSES.setdefault(cls, set()).add(env)
        else:
            _ROUTABLE_CLASSES.add((cls, env))


def _class_unroutable(dt: torch.dtype, dev: torch.device) -> bool:
    """No call of this dtype on this device can run our kernels, whatever the op or its shapes, while the
    environment (profile, interpreter) stays: a dtype they do not take, or a device they cannot run on (CPU
    without the interpreter, a device other than CUDA/ROCm, a GPU without a profile). The route refuses such
    a call in every state (a mode, a transform, forward AD), so the wrapper answers it before checking those;
    only TRITONBLAS_FAST=0 (the warm path's off switch, this memory included) and autocast (which changes the
    dtype) are checked first."""
    probe = torch.empty(0, dtype=dt, device=dev)  # a plain tensor of the class: no reason of one tensor's own
    return not dispatch.kernels_take(probe)


def record_unroutable_linear(x, w, bias=None) -> None:
    """After the route refused a call :func:`linear_hot` had tried (positional, default profile): remember
    its signature, so the next call of it goes to torch from the hot path, without the route's checks
    again. Recorded only when no state the hot path bails on holds (compiling, a mode or transform,
    forward AD, autocast, ``TRITONBLAS_FAST=0``): then what refused it is the signature itself (shapes,
    dtypes, devices, layout, the profile lookup: all in the key with the fast context). Why: with every
    GEMM falling through (CPU tensors, no profile), a 4-layer Llama's decode under ``enable()`` took
    1.47-1.52x torch's time without this memory and 1.14-1.25x with it (this CPU, two runs, 2026-12-05,
    ``python benchmarks/host_linear.py --fallthrough``). Where no call of the operands' dtype can run on
    their device, the routing wrapper remembers the class as well (:func:`record_refused_class`)."""
    _unroutable("linear", _linear_key, (x, w, bias))


def record_unroutable_matmul(a, b) -> None:
    """:func:`record_unroutable_linear` for ``torch.matmul(a, b)`` / ``a @ b``."""
    _unroutable("matmul", _matmul_key, (a, b))


# --- matmul ----------------------------------------------------------------------------------
def _matmul_key(a, b) -> tuple:
    """:func:`_linear_key`'s fields for a and b, then the fast context, as one flat tuple (no nested
    tuples to build and hash)."""
    return (a.shape, a.stride(), a.dtype, a.device, a.data_ptr() & 15, a.is_neg() or a._is_zerotensor(),
            b.shape, b.stride(), b.dtype, b.device, b.data_ptr() & 15, b.is_neg() or b._is_zerotensor(),
            _fast_context(a.dtype))


def _matmul_run(a, b):
    try:
        key = _matmul_key(a, b)
    except (RuntimeError, NotImplementedError):
        return None
    hit = _MATMUL.get(key)
    if hit is None:
        return None
    return _matmul_warm(hit, a, b)


def _matmul_warm(hit: tuple, a, b):
    """``a @ b`` on the warm entry ``hit`` (``_MATMUL``'s value); None when it no longer holds."""
    f, out_shape, va, vb = hit
    if not dispatch.fast_valid(f):
        return None
    out = _new_empty(a, out_shape)
    if not _launch_warm(f, a, b, out):
        dispatch.launch_fast(f, a.view(va), b.view(vb), out.view(f.out_shape))
    _COUNTS["fast_hits"] += 1
    return out


def record_matmul(a, b, ka, kb) -> None:
    """After a checked ``matmul(a, b)`` whose kernel operands were ``ka``, ``kb``: remember the fast
    entry under (a, b)'s signature when ``ka``/``kb`` are views of a/b at their own base address
    (no copy) and the kernel's output is the result's storage in row-major order."""
    if not enabled():
        return
    try:
        if ka.data_ptr() != a.data_ptr() or kb.data_ptr() != b.data_ptr():
            return
        if not (ka._is_view() or ka is a) or not (kb._is_view() or kb is b):
            return
        f = dispatch.fast_lookup(ka, kb)
        key = _matmul_key(a, b)
    except (RuntimeError, NotImplementedError):
        return
    if f is None:
        if dispatch.fast_vendor(ka, kb) and _views_ok(a, ka) and _views_ok(b, kb):
            _store(_TORCH_SIGS, ("matmul", key), True)
        return
    shape = _matmul_shape(a, b)
    if shape is None or math.prod(shape) != math.prod(f.out_shape):
        return
    if not (_views_ok(a, ka) and _views_ok(b, kb)):
        return
    _store(_MATMUL, key, (f, shape, tuple(ka.shape), tuple(kb.shape)))


def _views_ok(t, v) -> bool:
    """Whether ``t.view(v.shape)`` is ``v`` element for element (same strides as a view gives)."""
    try:
        return t.view(v.shape).stride() == v.stride()
    except RuntimeError:
        return False


def _matmul_shape(a, b):
    da, db = a.dim(), b.dim()
    if da == 0 or db == 0:
        return None
    if db == 1:
        return tuple(a.shape[:-1])
    if da == 1:
        return (*b.shape[:-2], b.shape[-1])
    if da >= 2 and db == 2:
        return (*a.shape[:-1], b.shape[-1])
    if da == db and a.shape[:-2] == b.shape[:-2]:
        return (*a.shape[:-1], b.shape[-1])
    return None


def _matmul_autograd_case(a, b) -> bool:
    """Whether :class:`_Matmul` computes ``a @ b``'s gradients: one dtype, a (..., M, K) with b (K, N)
    or with b of a's batch dims. The warm table also holds signatures the no-grad path records that
    it does not (1-D operands: ``tritonblas.matmul``'s matrix-vector products), so a hit alone is not
    enough under autograd."""
    return a.dtype == b.dtype and a.dim() >= 2 and (b.dim() == 2 or (a.dim() == b.dim() and a.shape[:-2] == b.shape[:-2]))


class _Matmul(torch.autograd.Function):
    """``torch.matmul`` on tritonblas kernels under autograd for the warm-able cases: a (..., M, K)
    with b (K, N), or equal batch dims; gradients in their inputs' layouts."""

    @staticmethod
    def forward(ctx, a, b, hit):
        out = None if hit is None else _matmul_warm(hit, a, b)
        if out is None:
            out = _matmul_checked(a, b)
        if out._base is not None:  # a view of the kernel's output: autograd forbids in-place on it
            out = out.detach()
        need = ctx.needs_input_grad  # as torch's mm: a for b's gradient, b for a's
        ctx.save_for_backward(a if need[1] else None, b if need[0] else None)
        ctx.a_shape, ctx.b_dim, ctx.b_t = a.shape, b.dim(), transposed_view(b)
        return out

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        ga = gb = None
        graph = _grad_enabled()  # create_graph=True: differentiable gradients (see _Linear.backward)
        if ctx.b_dim == 2:
            g2 = grad.flatten(0, -2)  # _flat(grad): a (so grad) has >= 2 dims (_matmul_autograd_case)
            if ctx.needs_input_grad[0]:
                ga = (_mm_graph if graph else _mm)(g2, b.t()).view(ctx.a_shape)
            if ctx.needs_input_grad[1]:
                a2 = a.flatten(0, -2)
                gb = _mm_graph(a2.t(), g2) if graph else _mm_like(a2.t(), g2, ctx.b_t)
            return ga, gb, None
        mm = _mm_graph if graph else _matmul_checked
        if ctx.needs_input_grad[0]:
            ga = mm(grad, b.mT)
        if ctx.needs_input_grad[1]:
            gb = mm(a.mT, grad)
        return ga, gb, None


def _mm_like(a, b, transposed: bool):
    """a @ b produced in its input's layout: row-major, or (``transposed``: the input is a transposed
    view) as ``(b.T @ a.T).T`` so the gradient needs no copy to match its input."""
    if transposed:
        return _mm(b.t(), a.t()).t()
    return _mm(a, b)


def matmul(a, b):
    """``torch.matmul(a, b)`` warm, :data:`TORCH` (the caller runs torch's matmul), or None (see the
    module docstring)."""
    if type(a) not in _PLAIN or type(b) not in _PLAIN:
        return None
    if not enabled() or not direct():
        return None
    if _TORCH_SIGS and not _any_autocast() and _torch_matmul(a, b):
        return _to_torch()  # (under autocast torch's function would cast; the checked path, like our kernels, does not)
    if needs_grad(a, b):
        if not _matmul_autograd_case(a, b):
            return None
        try:
            hit = _MATMUL.get(_matmul_key(a, b))  # a known signature passed the checks below before
        except (RuntimeError, NotImplementedError):
            return None
        if hit is None:
            if a.shape[-1] != b.shape[-2] or dispatch.fallback_reason(a, b) is not None:
                return None
            if not dispatch.has_profile(a.device):
                return None
        return _matmul_grad(a, b, hit)
    return _matmul_run(a, b)


def _matmul_hit(a, b):
    """The warm entry of ``matmul(a, b)``'s signature, or None (unknown, or unreadable)."""
    try:
        return _MATMUL.get(_matmul_key(a, b))
    except (RuntimeError, NotImplementedError):
        return None


def _linear_grad(x, w, bias, hit):
    """``F.linear`` under autograd through :class:`_Linear` (``hit``: the signature's warm entry or None)."""
    return _linear_apply(_unwrap_dead(x), _unwrap_dead(w), bias if bias is None else _unwrap_dead(bias), hit)


def _matmul_grad(a, b, hit):
    """``a @ b`` under autograd through :class:`_Matmul` (``hit``: the signature's warm entry or None)."""
    return _matmul_apply(_unwrap_dead(a), _unwrap_dead(b), hit)


# The autograd Functions' C-level apply. ``Function.apply`` (Python) adds, per call, a setup_context
# probe, a functorch-transform check and a pytree walk that unwraps dead functorch wrappers; the
# callers here run only with no functorch transform active (``_intercepting``) and unwrap their
# tensors themselves (``_unwrap_dead``), which is what that path then does before the same C call.
_linear_apply = super(torch.autograd.Function, _Linear).apply
_matmul_apply = super(torch.autograd.Function, _Matmul).apply
_addmm_apply = super(torch.autograd.Function, _Addmm).apply
_unwrap_dead = _C._functorch.unwrap_if_dead

_compat.dynamo_eager_only(linear, matmul, _Linear.forward, _Linear.backward, _Matmul.forward, _Matmul.backward,
                          _Addmm.forward, _Addmm.backward)

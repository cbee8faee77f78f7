"""``enable()``: route torch's GEMM entry points to tritonblas inside a ``with`` block.

Mechanism: while at least one ``enable()`` block is open (in any thread), the GEMM entry points —
``torch.nn.functional.linear``, ``torch.matmul / mm / bmm / addmm / baddbmm / addbmm / mv / addmv``
and the ``Tensor`` methods of the same names (``@`` included), and ``torch._scaled_mm`` (fp8, see
:mod:`tritonblas.scaled` for what is routed) — are replaced by thin wrappers; every
other torch op is untouched. A wrapper routes the call to tritonblas only in a thread that has a
block open (so the routing stays scoped like a ``TorchFunctionMode``), only when tritonblas can run
it (plain tensors of a kernel dtype on a device with a profile, a signature it knows, shapes torch
accepts), and never re-enters itself (torch ops that tritonblas itself calls run torch's own op).
Anything else runs torch's original function, so results and errors are exactly torch's. Leaving the
last open block restores the originals.

``torch.nn.Linear.forward`` is replaced too (:func:`tritonblas.handover.linear_forward`), since ``nn.Linear`` is
what most models' GEMMs call: a call the vendor rule hands to torch's op runs it straight from the forward, the
rule's verdict kept per weight; every other call goes to ``F.linear``'s wrapper as before.

Why not a ``TorchFunctionMode`` (what this module replaced): a Python mode is entered for *every*
torch call, not only GEMMs. Measured on the H200 (2026-12-01, transformers Llama, bf16): an *empty*
mode added 4% to a prefill and 23% to a one-token decode step, with nothing routed. A wrapper on the
GEMM entry points costs nothing on the other ops and about a microsecond on a GEMM it lets through.
Under ``torch.compile`` the wrappers are traced like any Python function: they route to the
``torch.library`` custom ops (:mod:`tritonblas.ops`), which dynamo and Inductor see through.

Autocast: under ``torch.autocast`` the inputs are cast to the autocast dtype first, as torch would.
``tritonblas.dispatch.stats()``: ``intercepted`` counts GEMM calls that reached a wrapper in an
enabled thread, ``routed`` those tritonblas ran.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

import torch

from tritonblas import _compat, autocast, below_autograd, counters, dispatch, fastpath, handover, ops, scaled, settings

__all__ = ["enable", "active", "serving_default", "busy", "ROUTED"]

Tensor = torch.Tensor
_is_compiling = torch.compiler.is_compiling
_jit_tracing = torch._C._get_tracing_state
_functorch_level = torch._C._functorch.peek_interpreter_stack
_PLAIN = (torch.Tensor, torch.nn.Parameter)


class _Local(threading.local):
    def __init__(self) -> None:
        self.stack: list = []   # profiles of this thread's open blocks, innermost last
        self.busy = False       # inside a routed call: nested torch GEMMs run torch's own op


_TLS = _Local()
_ACTIVE = [0]            # open blocks in all threads; wrappers are installed while > 0
_COMPILE_PROFILE = [None]  # the profile of the innermost block most recently entered (dynamo reads it)
_PATCH_LOCK = threading.Lock()


# --- signatures (torch's, as plain Python: binding one costs ~0.1 us) -------------------------
def _p_linear(input, weight, bias=None):
    return input, weight, bias


def _p_binary(input, other, *, out=None):
    return input, other, out


def _p_method_binary(self, other):
    return self, other, None


def _p_mm(input, mat2, *, out=None):
    return input, mat2, out


def _p_method_mm(self, mat2):
    return self, mat2, None


def _p_addmm(input, mat1, mat2, *, beta=1, alpha=1, out=None):
    return input, mat1, mat2, beta, alpha, out


def _p_method_addmm(self, mat1, mat2, *, beta=1, alpha=1):
    return self, mat1, mat2, beta, alpha, None


def _p_mv(input, vec, *, out=None):
    return input, vec, out


def _p_method_mv(self, vec):
    return self, vec, None


def _p_addmv(input, mat, vec, *, beta=1, alpha=1, out=None):
    return input, mat, vec, beta, alpha, out


def _p_method_addmv(self, mat, vec, *, beta=1, alpha=1):
    return self, mat, vec, beta, alpha, None


def _p_scaled_mm(self, mat2, scale_a, scale_b, bias=None, scale_result=None, out_dtype=None, use_fast_accum=False):
    return self, mat2, scale_a, scale_b, bias, scale_result, out_dtype, use_fast_accum


# --- routes: (profile, *bound) -> result or NotImplemented ------------------------------------
def _kernel_ok(profile: Any, *tensors: Any) -> bool:
    """Whether tritonblas may run a GEMM on these tensors: plain tensors of one kernel dtype and
    device, and a profile for that device."""
    ts = [t for t in tensors if t is not None]
    for t in ts:
        if type(t) not in _PLAIN:
            return False
    if not _is_compiling() and (fastpath.forward_ad() or _functorch_level() is not None):
        # forward-mode AD (the kernels drop tangents) or a functorch transform (grad/jacrev/jvp raise
        # on the custom ops, whose autograd has no setup_context for functorch): torch's own op
        # (not while compiling: dynamo cannot trace the C query, and the compiled graph keeps the ops)
        return False
    if dispatch.fallback_reason(*ts) is not None:
        return False
    return dispatch.has_profile(ts[0].device, profile)


def _not_real(dtype: torch.dtype, *xs: Any) -> bool:
    """Whether an alpha/beta is not a real number torch takes (complex, or not a number at all: a
    string, None, a 1-D tensor), or a finite one beyond the largest value of the operands' ``dtype`` (torch
    converts it to float, or on some paths to the operands' type, and raises "value cannot be converted ...
    without overflow" where it does not fit; ours computed with it as inf): torch runs the call and raises or
    computes as it does."""
    if not all(ops.real_scalar(x) for x in xs):
        return True
    return dtype.is_floating_point and any(ops.scale_overflows(x, dtype) for x in xs)


def _tensors(*xs: Any) -> bool:
    """Whether every x is a tensor our routes read: not a nested tensor, whose sizes a strided-layout one does not
    have (reading them raises where torch's op computes or raises its own error)."""
    return all(isinstance(x, torch.Tensor) and not x.is_nested for x in xs)



def _run(profile: Any, fn: Callable, tensors: tuple, out: Any, **kwargs):
    """The shared tail of a route: autocast the tensors (as torch would for the op ``fn`` names), check
    tritonblas can run them (with ``out``), then call ``fn(*tensors, out=out, profile=profile, **kwargs)``;
    NotImplemented otherwise."""
    tensors = autocast.cast_inputs(*tensors, op=fn.__name__)
    if not _kernel_ok(profile, *tensors, out):
        return NotImplemented
    return fn(*tensors, out=out, profile=profile, **kwargs)


def _handed(profile, t: Tensor, m, n, k, *leaves) -> bool:
    """Whether the vendor rule (:func:`tritonblas.handover.vendor_aligned`) gives this call to torch's op, in a
    route: every form no front takes (keywords, ``torch.mm``, ``baddbmm``, ``addbmm``; :func:`_fronted`), every
    call under ``torch.compile`` (decided at trace time: the graph then holds torch's op), and again a call a front
    declined (the same verdict). Only for the default profile, as at the fronts; ``leaves`` are the operands whose
    ``requires_grad`` makes it a training GEMM."""
    if profile is not None:
        return False
    grad = torch.is_grad_enabled() and any(x is not None and x.requires_grad for x in leaves)
    if _is_compiling():  # the settings read outside dynamo, at trace time (torch 2.11 cannot trace the raw read)
        return handover.vendor_aligned_traced(t, m, n, k, grad)
    return handover.vendor_aligned(handover.vendor_aligned_raw(), t, m, n, k, grad)


def _r_linear(profile, x, w, bias):
    if not _tensors(x, w) or (bias is not None and not _tensors(bias)):
        return NotImplemented
    if w.dim() == 2 and _handed(profile, x, x.numel() // k if (k := w.shape[1]) else 0, w.shape[0], k, x, w, bias):
        return NotImplemented
    if profile is None and not _is_compiling() and not autocast.on(x.device.type):
        r = fastpath.linear(x, w, bias)
        if r is fastpath.TORCH:  # a tile table's VENDOR entry: torch's own function
            return NotImplemented
        if r is not None:
            return r
    if (w.dim() not in (1, 2) or x.dim() == 0 or x.shape[-1] != w.shape[-1]
            or (w.dim() == 1 and bias is not None)
            or (bias is not None and not ops.expands_to(tuple(bias.shape), (*x.shape[:-1], *w.shape[:-1])))):
        return NotImplemented
    x, w, bias = autocast.cast_inputs(x, w, bias, op="linear")
    if not _kernel_ok(profile, x, w, bias):
        return NotImplemented
    return ops.linear(x, w, bias, profile=profile)


def _matmul_shapes_ok(a: Tensor, b: Tensor) -> bool:
    if a.dim() == 0 or b.dim() == 0:
        return False
    kb = b.shape[0] if b.dim() == 1 else b.shape[-2]
    if a.shape[-1] != kb:
        return False
    sa = a.shape[:-2] if a.dim() > 2 else ()
    sb = b.shape[:-2] if b.dim() > 2 else ()
    n = max(len(sa), len(sb))
    sa, sb = (1,) * (n - len(sa)) + tuple(sa), (1,) * (n - len(sb)) + tuple(sb)
    return all(p == q or p == 1 or q == 1 for p, q in zip(sa, sb))


def _r_matmul(profile, a, b, out):
    if not _tensors(a, b) or (out is not None and not _tensors(out)):
        return NotImplemented
    if a.dim() >= 2 and b.dim() >= 2 and _handed(profile, a, a.shape[-2], b.shape[-1], a.shape[-1], a, b):
        return NotImplemented
    if out is None and profile is None and not _is_compiling() and not autocast.on(a.device.type):
        r = fastpath.matmul(a, b)
        if r is fastpath.TORCH:  # a tile table's VENDOR entry: torch's own function
            return NotImplemented
        if r is not None:
            return r
    if not _matmul_shapes_ok(a, b):
        return NotImplemented
    return _run(profile, ops.matmul, (a, b), out)


def _r_mm(profile, a, b, out):
    if not _tensors(a, b) or a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
        return NotImplemented
    return _r_matmul(profile, a, b, out)


def _r_bmm(profile, a, b, out):
    if (not _tensors(a, b) or a.dim() != 3 or b.dim() != 3 or a.shape[0] != b.shape[0]
            or a.shape[2] != b.shape[1]):
        return NotImplemented
    if _handed(profile, a, a.shape[1], b.shape[2], a.shape[2], a, b):
        return NotImplemented
    return _run(profile, ops.bmm, (a, b), out)


def _r_addmm(profile, c, a, b, beta, alpha, out):
    if (not _tensors(c, a, b) or a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]
            or not ops.expands_to(tuple(c.shape), (a.shape[0], b.shape[1])) or _not_real(a.dtype, alpha, beta)):
        return NotImplemented
    if _handed(profile, a, a.shape[0], b.shape[1], a.shape[1], c, a, b):
        return NotImplemented
    return _run(profile, ops.addmm, (c, a, b), out, alpha=alpha, beta=beta)


def _r_baddbmm(profile, c, a, b, beta, alpha, out):
    if (not _tensors(c, a, b) or a.dim() != 3 or b.dim() != 3 or a.shape[0] != b.shape[0]
            or a.shape[2] != b.shape[1] or not ops.expands_to(tuple(c.shape), (a.shape[0], a.shape[1], b.shape[2]))
            or _not_real(a.dtype, alpha, beta)):
        return NotImplemented
    if _handed(profile, a, a.shape[1], b.shape[2], a.shape[2], c, a, b):
        return NotImplemented
    return _run(profile, ops.baddbmm, (c, a, b), out, alpha=alpha, beta=beta)


def _r_addbmm(profile, c, a, b, beta, alpha, out):
    if (not _tensors(c, a, b) or a.dim() != 3 or b.dim() != 3 or a.shape[0] != b.shape[0]
            or a.shape[2] != b.shape[1] or not ops.expands_to(tuple(c.shape), (a.shape[1], b.shape[2]))
            or _not_real(a.dtype, alpha, beta)):
        return NotImplemented
    if _handed(profile, a, a.shape[1], b.shape[2], a.shape[2], c, a, b):
        return NotImplemented
    return _run(profile, ops.addbmm, (c, a, b), out, alpha=alpha, beta=beta)


def _r_mv(profile, a, v, out):
    if not _tensors(a, v) or a.dim() != 2 or v.dim() != 1 or a.shape[1] != v.shape[0]:
        return NotImplemented
    return _run(profile, ops.mv, (a, v), out)


def _r_addmv(profile, c, a, v, beta, alpha, out):
    if (not _tensors(c, a, v) or a.dim() != 2 or v.dim() != 1 or a.shape[1] != v.shape[0]
            or not ops.expands_to(tuple(c.shape), (a.shape[0],)) or _not_real(a.dtype, alpha, beta)):
        return NotImplemented
    return _run(profile, ops.addmv, (c, a, v), out, alpha=alpha, beta=beta)


def _r_scaled_mm(profile, a, b, scale_a, scale_b, bias, scale_result, out_dtype, use_fast_accum):
    # eager only: under torch.compile Inductor lowers torch._scaled_mm itself
    if _is_compiling():
        return NotImplemented
    if profile is None and isinstance(a, Tensor) and handover.vendor_scaled(a):  # on NVIDIA GPUs, by default: cuBLAS
        return NotImplemented  # ran these faster (handover.vendor_scaled says how much)
    return scaled.route(profile, a, b, scale_a, scale_b, bias, scale_result, out_dtype, use_fast_accum)


# (owner, attribute, signature, route[, hot, unroutable[, front]])
_TARGETS: tuple = (
    (torch.nn.functional, "linear", _p_linear, _r_linear, fastpath.linear_hot, fastpath.record_unroutable_linear,
     handover.linear_handed),
    (torch, "matmul", _p_binary, _r_matmul, fastpath.matmul_hot, fastpath.record_unroutable_matmul,
     handover.matmul_handed),
    (torch, "mm", _p_mm, _r_mm),
    (torch, "bmm", _p_mm, _r_bmm, fastpath.bmm_hot, None, handover.bmm_handed),
    (torch, "addmm", _p_addmm, _r_addmm, fastpath.addmm_hot, None, handover.addmm_handed),
    (torch, "baddbmm", _p_addmm, _r_baddbmm),
    (torch, "addbmm", _p_addmm, _r_addbmm),
    (torch, "mv", _p_mv, _r_mv),
    (torch, "addmv", _p_addmv, _r_addmv),
    (torch, "_scaled_mm", _p_scaled_mm, _r_scaled_mm),
    (torch.Tensor, "matmul", _p_method_binary, _r_matmul, fastpath.matmul_hot, fastpath.record_unroutable_matmul,
     handover.matmul_handed),
    (torch.Tensor, "__matmul__", _p_method_binary, _r_matmul, fastpath.matmul_hot,
     fastpath.record_unroutable_matmul, handover.matmul_handed),
    (torch.Tensor, "mm", _p_method_mm, _r_mm),
    (torch.Tensor, "bmm", _p_method_mm, _r_bmm, fastpath.bmm_hot, None, handover.bmm_handed),
    (torch.Tensor, "addmm", _p_method_addmm, _r_addmm, fastpath.addmm_hot, None, handover.addmm_handed),
    (torch.Tensor, "baddbmm", _p_method_addmm, _r_baddbmm),
    (torch.Tensor, "addbmm", _p_method_addmm, _r_addbmm),
    (torch.Tensor, "mv", _p_method_mv, _r_mv),
    (torch.Tensor, "addmv", _p_method_addmv, _r_addmv),
)
ROUTED = tuple(f"{'Tensor.' if owner is torch.Tensor else owner.__name__ + '.'}{name}"
               for owner, name, *_ in _TARGETS)
_SAVED: list = []  # (owner, name, had its own attribute, original) while installed


_INTERCEPTED = ("intercepted",)
_TORCH = fastpath.TORCH
_ROUTED_BOTH = ("intercepted", "routed")
refused_class, record_refused_class = fastpath.refused_class, fastpath.record_refused_class
_REFUSED = fastpath.REFUSED_CLASSES  # read before the call: empty (nothing refused) costs no call
count = dispatch.count_all
_COUNTS = counters.COUNTS


def _wrapper(orig: Callable, parse: Callable, route: Callable, hot: Callable | None = None,
             unroutable: Callable | None = None, front: Callable | None = None) -> Callable:
    """The routing wrapper of one entry point. ``hot`` (optional, :mod:`tritonblas.fastpath`'s
    ``*_hot``) is tried first on an eager, positional call in a block with the default profile: it
    serves a warm signature in one call, or returns None and the call takes ``route`` as usual; when
    the route then refuses the call, ``unroutable`` (fastpath's ``record_unroutable_*``) remembers its
    signature for ``hot``. ``front`` (optional, fastpath's ``*_handed``) comes before all of it
    (:func:`_fronted`). Before ``hot`` and the route, under the default profile, a call whose operands are of a class
    no call can route (fastpath.refused_class: fp64, a GPU without a profile, CPU without the interpreter)
    goes to torch; every op's refusals teach that memory (fastpath.record_refused_class)."""
    def routed(*args, **kwargs):
        if _ACTIVE[0]:
            if _is_compiling():
                try:
                    bound = parse(*args, **kwargs)
                except TypeError:
                    return orig(*args, **kwargs)
                r = route(_COMPILE_PROFILE[0], *bound)
                return orig(*args, **kwargs) if r is NotImplemented else r
            tls = _TLS
            stack = tls.stack
            if stack and not tls.busy:
                if _jit_tracing():  # torch.jit.trace: torch's op, so that every invocation records the same graph
                    count(_INTERCEPTED)
                    return orig(*args, **kwargs)
                default = stack[-1] is None
                if default and _REFUSED and refused_class(args, kwargs):  # a dtype/device no call can route: torch's
                    count(_INTERCEPTED)
                    return orig(*args, **kwargs)
                if _BELOW[0] is not None and default and below_autograd.wants(args, kwargs):
                    count(_INTERCEPTED)  # under autograd, armed: torch's op, whose GEMMs run below its C++ autograd
                    return orig(*args, **kwargs)
                tried = False
                if hot is not None and not kwargs and default:
                    try:
                        r = hot(*args)
                        tried = True
                    except TypeError:  # not the positional form hot takes
                        r = None
                    if r is not None:
                        if r is _TORCH:  # a rule's hand-over, or a tile table's VENDOR entry: torch's op
                            _COUNTS["intercepted"] += 1  # (count(_INTERCEPTED), inline: the hand-over's frame less)
                            return orig(*args)
                        _COUNTS["intercepted"] += 1  # (count(_ROUTED_BOTH), inline: the warm call's own frame less)
                        _COUNTS["routed"] += 1
                        return r
                try:
                    bound = parse(*args, **kwargs)
                except TypeError:  # a signature we do not route (deprecated forms, new keywords)
                    return orig(*args, **kwargs)
                tls.busy = True
                try:
                    r = route(stack[-1], *bound)
                finally:
                    tls.busy = False
                if r is not NotImplemented:
                    count(_ROUTED_BOTH)
                    return r
                count(_INTERCEPTED)
                if default:
                    record_refused_class(args, kwargs)
                if tried and unroutable is not None:
                    unroutable(*args)
        return orig(*args, **kwargs)

    _compat.dynamo_eager_only(routed)
    inner = routed
    if front is not None:
        routed = _fronted(orig, front, routed)
    routed._tritonblas_inner = inner  # the wrapper behind its front (the nn.Linear forward calls it: _install)
    routed.__name__ = getattr(orig, "__name__", "routed")
    routed.__qualname__ = getattr(orig, "__qualname__", routed.__name__)
    routed.__doc__ = getattr(orig, "__doc__", None)
    routed.__wrapped__ = orig
    routed._tritonblas_route = True
    # torch.jit.script inside a block: a call of the wrapper compiles as torch's op (the compiler cannot compile it)
    _compat.script_as_builtin(routed, orig)
    return routed


def _fronted(orig: Callable, front: Callable, routed: Callable) -> Callable:
    """``routed`` behind a front that hands a call to torch's op at the least cost: an eager, positional call in a
    thread whose innermost block has the default profile (and not inside a routed call) goes to ``orig`` when
    ``front(*args)`` (fastpath's ``*_handed``: the vendor rule) says so; every other call is ``routed``'s, unchanged.
    ``front`` raising TypeError, AttributeError or RuntimeError (a form, an argument or a tensor whose sizes it
    cannot read: a nested tensor of the strided layout) means not handed.
    Why: the hand-over is what most GEMM calls take on NVIDIA GPUs, and inside a model every Python operation on
    its way costs ~0.2 us (handover.linear_handed says what this front measured)."""
    def fronted(*args, **kwargs):
        # (torch.jit.trace: no front, whose reads of sizes the tracer records or refuses: the wrapper gives torch's op)
        if not kwargs and not _is_compiling() and not _jit_tracing():
            stack = _TLS.stack
            if stack and stack[-1] is None and not _TLS.busy:
                try:
                    handed = front(*args)
                except (TypeError, AttributeError, RuntimeError):
                    handed = False
                if handed:
                    _COUNTS["intercepted"] += 1  # (count(_INTERCEPTED), inline: a frame less)
                    return orig(*args)
        return routed(*args, **kwargs)

    _compat.dynamo_eager_only(fronted)
    return fronted


_WRAPPERS: dict = {}  # (owner, name, original) -> its wrapper: the same object every time it is installed,
# so code compiled under one enable() block (dynamo guards on the function's identity) stays valid in the next


_BELOW = below_autograd.LIBRARY  # non-empty while the kernels below autograd are armed


def _install() -> None:
    module_forward = settings.linear_forward()  # (a bad value raises here, before anything is installed)
    below_autograd.arm(serving_default, busy)
    for owner, name, parse, route, *hot in _TARGETS:
        own = name in vars(owner)
        orig = getattr(owner, name)
        if getattr(orig, "_tritonblas_route", False):  # installed by a copy of this module: leave it
            continue
        _SAVED.append((owner, name, own, orig))
        key = (id(owner), name, id(orig))
        w = _WRAPPERS.get(key)
        if w is None or w.__wrapped__ is not orig:
            w = _WRAPPERS[key] = _wrapper(orig, parse, route, *hot)
        setattr(owner, name, w)
    if module_forward:
        _install_linear_forward()


_TORCH_LINEAR_FORWARD = ("torch.nn.modules.linear", "Linear.forward")  # torch's own, the one replaced


def _install_linear_forward() -> None:
    """``torch.nn.Linear.forward`` replaced by :func:`tritonblas.handover.linear_forward` over ``F.linear``'s
    wrapper just installed (what most models' GEMMs call: its hand-over costs less than ``F.linear``'s front), unless
    ``TRITONBLAS_LINEAR_FORWARD=0``."""
    owner, lin = torch.nn.Linear, torch.nn.functional.linear
    orig = vars(owner).get("forward")
    inner = getattr(lin, "_tritonblas_inner", None)
    if orig is None or inner is None or getattr(orig, "_tritonblas_route", False):
        return  # F.linear not ours (a copy of this module installed it), or the forward is already one of ours
    if (getattr(orig, "__module__", None), getattr(orig, "__qualname__", None)) != _TORCH_LINEAR_FORWARD:
        return  # someone else's forward (a library patched nn.Linear): theirs runs, F.linear's wrapper behind it
    key = (id(owner), "forward", id(orig), id(lin))
    w = _WRAPPERS.get(key)
    if w is None:
        w = _WRAPPERS[key] = handover.linear_forward(_TLS, inner, lin.__wrapped__)
        w.__wrapped__ = orig
        w.__doc__ = orig.__doc__
        w._tritonblas_route = True
    _SAVED.append((owner, "forward", True, orig))
    owner.forward = w


def _uninstall() -> None:
    while _SAVED:
        owner, name, own, orig = _SAVED.pop()
        if own:
            setattr(owner, name, orig)
        else:
            delattr(owner, name)
    below_autograd.disarm()


def active() -> bool:
    """Whether this thread is inside an ``enable()`` block."""
    return bool(_TLS.stack)


def serving_default() -> bool:
    """Whether a GEMM in this thread now is one ``enable()`` serves with the default profile: inside a block
    whose profile is the default, and not inside a routed call (whose own torch ops run torch's)."""
    tls = _TLS
    return bool(tls.stack) and not tls.busy and tls.stack[-1] is None


class busy:
    """Inside: this thread is in a routed call (nested GEMMs run torch's own op); restored on leaving."""

    __slots__ = ("_was",)

    def __enter__(self) -> None:
        self._was, _TLS.busy = _TLS.busy, True

    def __exit__(self, *exc) -> None:
        _TLS.busy = self._was


class _Enabled:
    """The context manager :func:`enable` returns (re-entrant; nests; one per ``with``)."""

    __slots__ = ("profile", "_entered")

    def __init__(self, profile: Any = None) -> None:
        self.profile = profile
        self._entered: list = []  # per open entry, the stack (thread) it was pushed on

    def __enter__(self) -> "_Enabled":
        if not torch.compiler.is_compiling():
            dispatch.warm_has_profile()  # what a traced route asks (dispatch.has_profile), answered eagerly
        with _PATCH_LOCK:
            if _ACTIVE[0] == 0:
                _install()
            _ACTIVE[0] += 1
            _COMPILE_PROFILE[0] = self.profile
        stack = _TLS.stack
        stack.append(self.profile)
        self._entered.append(stack)
        if _BELOW[0] is not None:
            below_autograd.carry(stack)  # a CUDA backward runs in autograd's device thread: it reads this stack
        return self

    def __exit__(self, *exc) -> None:
        if not self._entered:
            raise RuntimeError("tritonblas.enable(): __exit__ without a matching __enter__")
        stack = _TLS.stack
        entered = self._entered
        # this thread's latest entry (one object may be open in several threads at once)
        i = next((i for i in range(len(entered) - 1, -1, -1) if entered[i] is stack), None)
        if i is None:
            # the block is scoped to the thread that entered it: popping this thread's stack (an
            # IndexError, or another block's entry) left the wrappers installed and the entering
            # thread routing for good; nothing changes here, that thread can still leave the block
            raise RuntimeError("tritonblas.enable(): __exit__ in a thread other than the one that entered "
                               "the block; leave it in the thread that entered it")
        del entered[i]
        stack.pop()
        with _PATCH_LOCK:
            _ACTIVE[0] -= 1
            if _ACTIVE[0] == 0:
                _uninstall()


def enable(profile: Any = None) -> _Enabled:
    """``with tritonblas.enable(profile=None):`` routes torch's GEMMs to tritonblas in this thread.

    Routed: ``F.linear``, ``torch.matmul`` / ``mm`` / ``bmm`` / ``addmm`` / ``baddbmm`` / ``addbmm`` /
    ``mv`` / ``addmv`` and the Tensor methods of those names (``@`` included), and ``torch._scaled_mm``
    (:func:`tritonblas.scaled.routable` says which). Calls our kernels cannot
    run — other dtypes (fp64, integers, complex), CPU tensors outside the interpreter (or without a
    profile), tensor subclasses, mixed devices or dtypes, shapes torch rejects — go to torch
    unchanged, so their results and errors are exactly torch's. ``profile`` (a name, path or loaded
    profile) applies to the routed calls. See the module docstring for the mechanism and its cost.
    """
    return _Enabled(profile)

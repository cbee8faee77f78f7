"""An experiment (``TRITONBLAS_AUTOGRAD=aten``, off by default): under ``enable()``, training's GEMMs run our
kernels *below* torch's own C++ autograd instead of through our Python ``torch.autograd.Function``.

Why: a training step of a small model is host-bound, and recording autograd through a Python Function costs
our call more than torch's C++ node costs torch's: inside a tiny twin of a model with launches stubbed
(``python benchmarks/host_linear.py --inmodel-grad``, CPU), +17-22 us a call against torch's +7-8, and a
Function whose forward only launched still paid +21 us.

Mechanism: while armed (:func:`arm`, by ``enable()`` when the variable says ``aten``), ``aten::mm`` and
``aten::addmm`` get a Python kernel at the ``ADInplaceOrView`` dispatch key. That key lies below
Autograd and above the backend, and every non-inference tensor carries it. torch's autograd kernel
records its C++ node (MmBackward0, AddmmBackward0) and redispatches to that key. Its backward formulas
call ``aten::mm`` again, so the backward GEMMs come here too, in the layouts torch picks. The kernel
launches our warm entry for the call's exact operands when there is one, else runs the checked path
(``dispatch.gemm``, which records the entry). It hands the call on to torch's own kernel
(``_AutoDispatchBelowADInplaceOrView``) in every other case:
- outside an enable() block of this thread (or of the thread whose backward this thread runs: :func:`carry`),
  or with a profile other than the default;
- inside a routed call;
- tensors that are not plain, or are meta/fake;
- a class no call routes (fastpath's refused classes, fallback reasons);
- ``alpha``/``beta`` other than 1.
The routing wrappers hand calls with autograd recording to torch's op (:func:`wants`), so that path runs; a
batched GEMM under autograd (``bmm``, ``baddbmm``, a 3-D @ 3-D ``matmul``) then runs torch's own kernel, as
no kernel is registered for it here.
Under no_grad and inference_mode the wrappers' warm paths serve the call as before (inference tensors do
not carry the key).

Evidence, and why it is off by default (H100, ``benchmarks/models.py --aten``: torch, the Function path and
this one alternating in one run; ``benchmarks/results/models_h100_90ab230.csv`` and
``models_h100_aten_008f895.csv``): gpt2-medium training 0.844x and 0.881x torch against 0.807x and 0.842x
through the Function; llama3.2-1b training 0.970x and 0.907x against 0.975x and 0.955x. GPT-2's Conv1D addmm
gains; Llama's F.linear (aten::linear -> matmul -> mm, each backward mm a crossing into Python) loses; neither
reaches torch's time. The training forward alone (``host_linear.py --train-forward``,
``train_forward_h100_90ab230.txt``) is +3.8-5.7 ms over torch across 96 calls on either path, with or without
recording: there the in-model cost of the warm call itself, not the Function, is the gap.

Registration is process-wide, which is why the kernel checks the enable() state on every call. Disarming
removes the kernels (the Library is destroyed).
"""

from __future__ import annotations

import threading

import torch

from tritonblas import counters, dispatch, fastpath, settings

__all__ = ["arm", "disarm", "armed", "wants", "carry", "LIBRARY", "STATS"]

_below = torch._C._AutoDispatchBelowADInplaceOrView
_grad_enabled = torch.is_grad_enabled
_PLAIN = (torch.Tensor, torch.nn.Parameter)
_LOCK = threading.Lock()
LIBRARY: list = [None]  # the torch.library.Library holding the kernels while armed (routing reads it)
# routing's thread state, handed over by arm() (routing imports this module, not the other way round):
# whether this thread's GEMMs are served with the default profile now, and the context that marks a routed call
_STATE: list = [None, None]
STATS = {"served": 0, "checked": 0, "handed_on": 0}  # kernel calls: warm, checked path, torch's kernel
# torch's C++ thread-local Python objects, which its autograd engine and jit.fork hand to their threads
_HAS_TLS = hasattr(torch._C, "_stash_obj_in_tls")
_TLS_KEY = "tritonblas.enable_stack"
_stash = getattr(torch._C, "_stash_obj_in_tls", None)
_in_tls = getattr(torch._C, "_is_key_in_tls", None)
_get_tls = getattr(torch._C, "_get_obj_in_tls", None)


def armed() -> bool:
    return LIBRARY[0] is not None


def wants(args, kwargs) -> bool:
    """Whether a routing wrapper should hand this call to torch's op so that it reaches the kernels below
    autograd: armed, grad mode on, and a plain tensor argument that requires grad."""
    if LIBRARY[0] is None or not _grad_enabled():
        return False
    for t in (args if not kwargs else (*args, *kwargs.values())):
        if type(t) in _PLAIN and t.requires_grad:
            return True
    return False


def arm(serving_default, busy) -> bool:
    """Register the kernels if ``TRITONBLAS_AUTOGRAD=aten`` (and they are not registered yet); returns
    whether they are registered. Called by ``enable()`` when its first block opens, with routing's
    ``serving_default`` (whether this thread's GEMMs are served with the default profile now) and
    ``busy`` (the context of a routed call, in which torch's ops run torch's kernels)."""
    if not settings.autograd_aten():
        return False
    _STATE[0], _STATE[1] = serving_default, busy
    with _LOCK:
        if LIBRARY[0] is None:
            lib = torch.library.Library("aten", "IMPL")
            lib.impl("mm", _mm, "ADInplaceOrView")
            lib.impl("addmm", _addmm, "ADInplaceOrView")
            LIBRARY[0] = lib
    return True


def disarm() -> None:
    """Remove the kernels (torch's dispatch is as before :func:`arm`). Called when the last block closes."""
    with _LOCK:
        lib, LIBRARY[0] = LIBRARY[0], None
    if lib is not None:
        lib._destroy()


def carry(stack: list) -> None:
    """Put the entering thread's block stack (routing's, a list that lives as long as the thread) in torch's
    C++ thread-local state, once a thread. torch hands that state to the threads that run this thread's work:
    autograd's device threads (a CUDA backward runs there, not in the thread that called ``backward()``) and
    ``torch.jit.fork`` tasks. A plain ``threading.Thread`` does not inherit it."""
    if _HAS_TLS and not _in_tls(_TLS_KEY):
        _stash(_TLS_KEY, stack)


def _serving() -> bool:
    """Whether a GEMM here is served with the default profile: this thread is in such a block, or it runs work
    (a backward) of a thread that is (:func:`carry`)."""
    if _STATE[0]():
        return True
    if not _HAS_TLS or not _in_tls(_TLS_KEY):
        return False
    stack = _get_tls(_TLS_KEY)
    return bool(stack) and stack[-1] is None


def _ours(*tensors) -> bool:
    """Whether this thread's state lets the call run on our kernels at all (see the module docstring)."""
    if not _serving():
        return False
    for t in tensors:
        if t.is_meta:
            return False
    return fastpath.direct(*tensors)  # plain tensors, no mode, transform or tracing


def _shapes_torch_takes(a, b, c) -> bool:
    """Whether torch's mm/addmm accepts these shapes: 2-D a and b with a's columns b's rows, and c (addmm)
    broadcastable to the (M, N) result."""
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
        return False
    if c is None:
        return True
    if c.dim() > 2:
        return False
    target = (a.shape[0], b.shape[1])[2 - c.dim():]
    return all(d == 1 or d == t for d, t in zip(c.shape, target))


def _run(a, b, c, alpha, beta):
    """Our result for ``alpha·(a @ b) + beta·c``, or None (torch's kernel runs the call)."""
    if alpha != 1 or (c is not None and beta != 1):
        return None
    tensors = (a, b) if c is None else (c, a, b)
    if not _ours(*tensors) or not _shapes_torch_takes(a, b, c):
        return None  # (shapes torch rejects: its kernel raises its own error)
    out = fastpath.run_entry(dispatch.fast_lookup(a, b, None, c), a, b, c, 1.0 if c is not None else 0.0)
    if out is not None:
        STATS["served"] += 1
        counters.count("routed")  # as the wrappers count a call they serve (run_entry counted the fast hit)
        return out
    if not dispatch.kernels_take(a, b, c):
        return None
    launches = counters.COUNTS["launches"]
    with _STATE[1]():  # torch ops the checked path calls run torch's own kernels
        out = dispatch.gemm(a, b, c=c, alpha=1.0, beta=1.0 if c is not None else 0.0,
                            op="mm" if c is None else "addmm")
    STATS["checked"] += 1
    if counters.COUNTS["launches"] != launches:  # ours ran it (not torch, for a tile table's VENDOR entry)
        counters.count("routed")
    return out


def _mm(a, b):
    out = _run(a, b, None, 1, 0)
    if out is not None:
        return out
    STATS["handed_on"] += 1
    with _below():
        return torch.ops.aten.mm.default(a, b)


def _addmm(c, a, b, *, beta=1, alpha=1):
    out = _run(a, b, c, alpha, beta)
    if out is not None:
        return out
    STATS["handed_on"] += 1
    with _below():
        return torch.ops.aten.addmm.default(c, a, b, beta=beta, alpha=alpha)

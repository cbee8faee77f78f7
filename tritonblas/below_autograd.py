"""An experiment (``TRITONBLAS_AUTOGRAD=aten``, off by default): under ``enable()``, training's GEMMs run our
kernels *below* torch's own C++ autograd instead of through our Python ``torch.autograd.Function``.

Why: a training step of a small model is host-bound, and there the Python Function is the drop-in's cost.
Measured on the H100 (2026-12-05, gpt2-medium, ``benchmarks/results/train_forward_h100_2331d60.txt``): the
forward costs +16 us a GEMM call over torch under no_grad and +51 us with autograd recording, so ~35 us a
call is the Function against torch's C++ node. On this CPU, inside a tiny twin of the model with launches
stubbed (``python benchmarks/host_linear.py --inmodel-grad``), recording costs our call +17-22 us against
torch's +7-8. A probe with the Function's forward cut down to the launch alone still paid +21 us. So the
cost is the Function's apply machinery, which no leaner body removes.

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

Measured on the H100 (session 23, ``models.py --aten``, alternating in one run with torch and the Function path;
``benchmarks/results/models_h100_90ab230.csv``): gpt2-medium training 0.844x torch against 0.807x through the
Function (forward host 60.9 against 72.6 us a GEMM call, backward host 42.7 against 45.9 ms); llama3.2-1b
training 0.970x against 0.975x (backward host 32.0 against 29.9 ms). A second run (``models_h100_aten_008f895.csv``):
gpt2-medium 0.881x against 0.842x, llama3.2-1b 0.907x against 0.955x. The first run (f3ff013) had the backward's
GEMMs on torch's kernels: a CUDA backward runs in autograd's device thread, which :func:`carry` now reaches. The
forward alone (``host_linear.py --train-forward``, ``train_forward_h100_90ab230.txt``) costs about as much
over torch with and without autograd recording on either path (+3.8-5.7 ms over 96 calls), so the in-model
cost of our warm call itself, not the Function, is what separates the two from torch there. Off by default:
GPT-2's Conv1D addmm gains ~4.5%, Llama's F.linear (aten::linear -> matmul -> mm, each backward mm a crossing
into Python) loses, and neither reaches torch's time.

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

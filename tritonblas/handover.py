"""The hand-over: which eager GEMM calls ``enable()`` gives to torch's own op instead of ours, and the fronts that
ask it at the least host cost.

- :func:`vendor_aligned` (``TRITONBLAS_VENDOR_ALIGNED``): the rule. An aligned bf16/fp16 GEMM on an NVIDIA GPU, and a
  GEMM of any kind whose K is under one tensor-core MMA step, runs torch's op (its docstring has the evidence);
  :func:`vendor_aligned_traced` is the same rule for a route ``torch.compile`` traces, :func:`vendor_scaled` the
  switch for ``torch._scaled_mm``.
- The fronts (``*_handed``): the rule asked with each op's own sizes, read the cheapest way the op allows, by the
  routing wrapper before anything else it does (:func:`tritonblas.routing._fronted`).
- :func:`linear_forward`: the ``nn.Linear.forward`` that ``enable()`` installs, which hands a call over straight
  from the forward, the rule's verdict kept per weight.

Contract: a call handed over is torch's op with the caller's arguments, so its result and its errors are exactly
torch's; handing over is never a correctness question, only a speed one. Everything here is read per call
(the switch, the tile table), except what :func:`linear_forward` keeps per weight and checks per call.
Used by :mod:`tritonblas.routing` (the fronts, the forward, the routes' checks) and :mod:`tritonblas.fastpath`
(whose hot paths no longer ask: the fronts did).
"""

from __future__ import annotations

import weakref

import torch

from tritonblas import counters, settings, tables
from tritonblas.settings import ENV_VENDOR_ALIGNED, raw_getter

__all__ = ["MMA_K_BYTES", "vendor_aligned", "vendor_aligned_raw", "vendor_aligned_traced", "vendor_scaled",
           "linear_handed", "matmul_handed", "addmm_handed", "bmm_handed", "linear_forward", "clear"]

_C = torch._C
_grad_enabled = torch.is_grad_enabled
_dynamo_compiling = torch.compiler.is_dynamo_compiling
_tracing = _C._get_tracing_state
_any_autocast = getattr(_C, "_is_any_autocast_enabled", None) or (lambda: any(
    torch.is_autocast_enabled(d) for d in ("cuda", "cpu")))
_COUNTS = counters.COUNTS


# the K extent of one tensor-core MMA step, in bytes of the operands' type (Hopper's wgmma and Ampere's mma.sync:
# K = 16 for bf16/fp16, 8 for tf32, 32 for fp8): a GEMM whose K is under it is an outer product of a few ranks, which
# the vendor rule hands to torch's op whatever its dtype and alignment (vendor_aligned)
MMA_K_BYTES = 32
vendor_aligned_raw = raw_getter(ENV_VENDOR_ALIGNED)  # per call; parsed once per raw value (_switch)
_VENDOR_ON: dict = {}
_UNREAD = object()
_TWO_BYTE = (torch.bfloat16, torch.float16)
_NVIDIA_BUILD = torch.version.hip is None  # torch's CUDA tensors are NVIDIA's GPUs (a ROCm build's are AMD's)
# a tile table in force, as tables.table_token() tells it, at 30 ns instead of 700 (set_table's number, the variable)
_TABLE_GEN, _table_raw = tables.GENERATION, raw_getter(tables.ENV_TABLE)


def _switch(raw):
    """``TRITONBLAS_VENDOR_ALIGNED``'s raw value ``raw`` parsed (:func:`tritonblas.settings.vendor_aligned_on`, once
    per raw value): True, False or :data:`~tritonblas.settings.DEFAULT`."""
    on = _VENDOR_ON.get(raw, _UNREAD)
    if on is _UNREAD:
        on = _VENDOR_ON[raw] = settings.vendor_aligned_on()  # a bad value raises here, naming the variable
    return on


def _default_on(t) -> bool:
    """Where the switch's default is on: an NVIDIA GPU's tensor (its evidence is cuBLAS's, not ROCm's libraries, not
    the CPU's), and no tile table in force (``set_table``, ``$TRITONBLAS_TABLE``: it measured its shapes itself,
    ours or torch's VENDOR entries, and decides)."""
    return bool(t.is_cuda and _NVIDIA_BUILD) and not (_TABLE_GEN[0] or _table_raw())


def _thin(k: int, t) -> bool:
    """Whether K is under one tensor-core MMA step for operands like ``t`` (:data:`MMA_K_BYTES`): the rule's test
    that holds whatever the dtype and alignment (:func:`vendor_aligned` spells it inline, a frame less a call)."""
    return k < MMA_K_BYTES and k * t.element_size() < MMA_K_BYTES


def vendor_aligned(raw, t, m: int, n: int, k: int, grad: bool) -> bool:
    """Whether an eager GEMM of sizes m, n, k on operands like ``t`` runs torch's op under
    ``TRITONBLAS_VENDOR_ALIGNED``, whose raw value the caller read as ``raw`` (None: unset, the default).

    Contract: a bf16/fp16 GEMM (under autocast, the 2-byte type it runs in) whose N and K are multiples of 8
    elements (16 bytes), and M too when autograd records it (the backward GEMMs lead with M), any M and N
    (decode-sized included); and a GEMM of any dtype, size or alignment whose K is under one tensor-core MMA step
    (``K * element_size < MMA_K_BYTES``: an outer product of a few ranks, such as the fp32 ``inv_freq @ positions``
    of ``transformers``' rotary embeddings, once a forward). CUDA graph capture included: the evidence is GPU time.
    The routing wrapper's fronts (``*_handed``: eager positional calls of the ops with a hot path, before it) and the
    routes (:mod:`tritonblas.routing`: every op and spelling, and ``torch.compile`` at trace time,
    :func:`vendor_aligned_traced`) ask it. Unset means on for NVIDIA GPUs' tensors
    (:data:`tritonblas.settings.DEFAULT`) unless a tile table is in force (``set_table``, ``TRITONBLAS_TABLE``: its
    entries are per-shape measurements, ours or torch's VENDOR), and off for the CPU (the interpreter) and ROCm
    builds, where nothing measured it; ``1`` on everywhere, ``0`` off. The callers read
    the sizes the cheapest way the op allows (``F.linear``: ``w.shape`` and ``x.numel()``), since every call pays them.

    Evidence (H200 unless said; history in CHANGELOG.md and docs/dropin.md):
    - per GEMM, our pick against ``torch.matmul``, CUDA graphs, warm L2 (``python benchmarks/vendor_gap.py
      --classes``): aligned shapes with min(M, N) > 16 at a geomean of 0.910x cuBLAS's speed on 164 training shapes
      under 100 GFLOP and 0.996x on 110 over, 0.811x and 0.950x on the held-out ones; min(M, N) <= 16 0.972x (49)
      and 1.041x (3 held-out) in the NN layout; in ``F.linear``'s K-major layout, the 30 decode GEMMs of three LLMs
      at 0.910x torch per GEMM (H100, cold L2, ``results/compare_decode_h100_5079c44.csv``);
    - in the models (``benchmarks/models.py``, each side in one alternation): 7 workloads geomean 0.966x -> 1.009x
      with the rule (``results/models_h200_635e95f.csv``), 0.978x -> 1.062x on an H100
      (``results/models_h100_bf08b62.csv``), no workload down by more than 1%; a decode step's GEMMs (M = 1,
      ``F.linear``'s K-major weight) on ours took 22.0 against cuBLAS's 19.6 ms of GPU time (635e95f) and 24.97
      against 24.08 on an H100 (``results/models_h100_cad2780.csv``; 0.79 against 0.76 under CUDA graphs);
    - what we keep is where we win: unaligned widths (GPT-2's 50257-wide lm_head, DLRM's MLP: 1.27-1.35x torch's
      training step). A handed-over call costs 2.16 us over torch's own on the CPU proxy of an eager decode (``python
      benchmarks/host_linear.py --vendor-toll``, 300 paired rounds, 2026-12-07);
    - K under one MMA step: the rotary embedding's fp32 K = 1 matmul was our warm path's miss on the H100, so our
      route ran once a forward (32 routed calls of an eager decode at 5a1b5be); on the CPU proxy that route costs
      28.7 us a call against 8.1 handed over and torch's 6.8 (``python benchmarks/host_linear.py --rope-toll``).
    """
    on = _VENDOR_ON.get(raw, _UNREAD)  # (_switch's lookup inline, its parse on a miss: a frame less every GEMM call)
    if on is _UNREAD:
        on = _switch(raw)
    if not on:
        return False
    thin = k < MMA_K_BYTES and k * t.element_size() < MMA_K_BYTES  # (_thin, inline: one int compare for most GEMMs)
    if not thin and (k % 8 or n % 8 or (grad and m % 8)):
        return False
    if on is settings.DEFAULT and (not (t.is_cuda and _NVIDIA_BUILD) or _TABLE_GEN[0] or _table_raw()):
        return False  # (not _default_on(t), inline: every GEMM call on an NVIDIA GPU reads it)
    return thin or t.dtype in _TWO_BYTE or _any_autocast()


def vendor_aligned_traced(t, m, n, k, grad: bool) -> bool:
    """:func:`vendor_aligned` for a route that ``torch.compile`` traces: the sizes' test is traced (dynamo guards
    it, symbolic sizes included), the switch and the tile table are read once at trace time by a call dynamo does
    not trace (:func:`_vendor_at_trace`), whose verdict becomes a constant of the graph.

    Why, measured: torch 2.11's dynamo cannot trace the hot path's raw read of the environment (a partial of its
    dict's lookup; "Attempted to call function marked as skipped"), and every routed form under
    ``torch.compile(fullgraph=True)`` failed on the GPU suite (H100, torch 2.11, 5a1b5be); torch 2.13 traces it."""
    thin = _thin(k, t)  # (vendor_aligned's size tests, as they read there)
    if not thin and (k % 8 or n % 8 or (grad and m % 8)):
        return False
    return _vendor_at_trace(t.device, t.dtype, thin)


@torch.compiler.assume_constant_result
def _vendor_at_trace(device, dtype, thin: bool) -> bool:
    """:func:`vendor_aligned`'s verdict for an aligned GEMM (``thin``: one whose K is under an MMA step) on
    ``device`` in ``dtype``, run eagerly at trace time (an empty tensor stands for the operands: the rule reads only
    their device, dtype and element size)."""
    return vendor_aligned(vendor_aligned_raw(), torch.empty(0, dtype=dtype, device=device), 8, 8,
                          1 if thin else MMA_K_BYTES, False)


def vendor_scaled(t) -> bool:
    """Whether an eager ``torch._scaled_mm`` call that :func:`tritonblas.scaled.routable` would give us, on operands
    like ``t``, runs torch's op instead under ``TRITONBLAS_VENDOR_ALIGNED`` (the same switch as
    :func:`vendor_aligned`: unset, on for NVIDIA GPUs' tensors unless a tile table is in force; ``1`` on, ``0`` off).
    Every call torch's CUDA kernel takes is 16-byte aligned (K and N multiples of 16), so no size is read.
    ``tritonblas.scaled_mm``, called by name, stays ours.

    Why, measured (H200, ``benchmarks/scaled_mm_compare.py``, 40 shapes of the llm set, e4m3 with row-wise scales, bf16
    out, one run each): origami's Triton pick ran at a geometric mean of 0.524x ``torch._scaled_mm``'s speed, faster on
    2 of 40 (``results/scaled_mm_h200_36cc947.csv``); the Gluon kernel at 0.546x, and 0.784x with fast
    accumulation (``results/scaled_mm_h200_gluon_a8a7db8.csv``, ``..._gluon_fast_a8a7db8.csv``). Routing torch's
    fp8 calls to ours made them slower, so on NVIDIA GPUs they are torch's until our fp8 kernels measure faster
    (issue 18). No H100 comparison is recorded; the default covers it as it does for :func:`vendor_aligned`."""
    on = _switch(vendor_aligned_raw())
    return _default_on(t) if on is settings.DEFAULT else bool(on)


# --- the fronts ----------------------------------------------------------------------------------------------
def linear_handed(x, w, bias=None) -> bool:
    """Whether the vendor rule (:func:`vendor_aligned`) gives ``F.linear(x, w, bias)`` to torch's op: the routing
    wrapper's first look at an eager, positional call in a block with the default profile, before the rest of the
    wrapper and :func:`linear_hot` (which then no longer asks). The sizes are read the cheapest way the op allows
    (``w.shape`` once; ``x.numel()`` only when autograd records the call, the one case the rule reads M). Tensor
    subclasses are read as the route reads them (it asks the same rule before it refuses them); an argument that
    is no tensor raises AttributeError or TypeError, which the wrapper reads as "not handed", as it reads a
    RuntimeError from sizes it cannot read (a nested tensor of the strided layout); its route then gives torch's
    result or error.

    Why a front of its own: every Python operation on the hand-over costs ~0.2 us inside a model (4-6x what it
    costs in a loop), and the hand-over is what most calls take on NVIDIA GPUs. Evidence: on the CPU proxy of an
    eager decode (``python benchmarks/host_linear.py --vendor-toll --rounds 60``, every GEMM handed over) x1.031-1.048
    torch's time through the fronts against x1.056-1.071 through the wrapper's checks and the hot path (six runs
    each); Llama-3.2-1B eager decode at the default 0.970x torch on an H100, nothing routed
    (``benchmarks/results/models_h100_1a7087f_first.csv``)."""
    ws = w.shape
    if len(ws) != 2:
        return False
    n, k = ws
    grad = _grad_enabled() and (x.requires_grad or w.requires_grad or (bias is not None and bias.requires_grad))
    # (torch raises where x's K differs from k; the rule reads M only under autograd)
    return vendor_aligned(vendor_aligned_raw(), x, (x.numel() // k if k else 0) if grad else 0, n, k, grad)


def matmul_handed(a, b) -> bool:
    """:func:`linear_handed` for ``torch.matmul(a, b)`` / ``a @ b`` / ``a.matmul(b)``: the rule asked with M, N and
    K of one matrix product (``a``'s last two sizes, ``b``'s last), operands of 2 dimensions or more."""
    sa, sb = a.shape, b.shape
    if len(sa) < 2 or len(sb) < 2:
        return False
    grad = _grad_enabled() and (a.requires_grad or b.requires_grad)
    return vendor_aligned(vendor_aligned_raw(), a, sa[-2], sb[-1], sa[-1], grad)


def addmm_handed(c, a, b) -> bool:
    """:func:`linear_handed` for ``torch.addmm(c, a, b)`` (GPT-2's Conv1D) and ``c.addmm(a, b)``, positional (beta =
    alpha = 1): the rule asked with the 2-D product's M, N and K."""
    sa, sb = a.shape, b.shape
    if len(sa) != 2 or len(sb) != 2:
        return False
    grad = _grad_enabled() and (c.requires_grad or a.requires_grad or b.requires_grad)
    return vendor_aligned(vendor_aligned_raw(), a, sa[0], sb[1], sa[1], grad)


def bmm_handed(a, b) -> bool:
    """:func:`linear_handed` for ``torch.bmm(a, b)`` / ``a.bmm(b)``: the rule asked with one batch's M, N and K."""
    sa, sb = a.shape, b.shape
    if len(sa) != 3 or len(sb) != 3:
        return False
    grad = _grad_enabled() and (a.requires_grad or b.requires_grad)
    return vendor_aligned(vendor_aligned_raw(), a, sa[1], sb[2], sa[2], grad)


# --- nn.Linear's forward under enable(): the rule's verdict kept per weight ------------------------------------------
# id(weight) -> (a weak reference to it, the raw values of TRITONBLAS_VENDOR_ALIGNED and TRITONBLAS_TABLE, the tile
# table generation, its dtype, whether it is a CUDA tensor, the verdict: True / False, or None where the call decides;
# its N and K)
_VERDICTS: dict = {}
_READS_PARAMETERS: dict = {}  # an nn.Linear class -> whether its weight and bias are what its _parameters hold
# torch.jit.script of an nn.Linear inside a block compiles the source of torch's forward (linear_forward's __wrapped__,
# which inspect follows) but resolves its names in this module's globals (the installed function's): the names that
# source reads (tests/dropin/test_jit_trace.py::test_a_module_scripted_inside_a_block_is_torchs)
F = torch.nn.functional


def _forget(key: int, ref) -> None:
    if _VERDICTS.get(key, (None,))[0] is ref:  # (the entry of this weight, not of a later object with its id)
        del _VERDICTS[key]


def _weight_verdict(w) -> tuple:
    """The :data:`_VERDICTS` entry of ``w`` (stored): :func:`vendor_aligned`'s verdict for ``F.linear`` with that
    weight and an operand of its dtype and device, which holds for every call autograd does not record; None
    (ask per call) for a weight whose verdict also reads the call (neither 2-byte nor under one MMA step: autocast
    decides)."""
    raw, table_raw, gen = vendor_aligned_raw(), _table_raw(), _TABLE_GEN[0]
    ws = w.shape
    verdict, n, k = False, 0, 0
    if len(ws) == 2:
        n, k = ws
        verdict = vendor_aligned(raw, w, 0, n, k, False)
        if w.dtype not in _TWO_BYTE and not _thin(k, w):
            verdict = None
    key = id(w)
    entry = (weakref.ref(w, lambda ref, key=key: _forget(key, ref)), raw, table_raw, gen, w.dtype, w.is_cuda, verdict,
             n, k)
    _VERDICTS[key] = entry
    return entry


def _reads_parameters(cls) -> bool:
    """Whether ``self.weight`` / ``self.bias`` of an instance of ``cls`` are its ``_parameters`` entries whenever
    those exist: nn.Module's own attribute lookup, and no class attribute of either name (a parametrized module's
    class has a property)."""
    return (getattr(cls, "__getattr__", None) is torch.nn.Module.__getattr__
            and cls.__getattribute__ is object.__getattribute__
            and not any(name in vars(c) for c in cls.__mro__ for name in ("weight", "bias")))


def _remember_reads(cls) -> bool:
    reads = _READS_PARAMETERS[cls] = _reads_parameters(cls)
    return reads


def linear_forward(tls, routed, orig):
    """The ``torch.nn.Linear.forward`` that :func:`tritonblas.enable` installs while a block is open (routing's
    thread state ``tls``: its ``stack`` of open blocks' profiles and ``busy``): in a thread whose innermost block
    has the default profile, outside a routed call, a call the vendor rule (:func:`vendor_aligned`) hands to torch
    runs ``orig`` (torch's ``F.linear`` as the block found it) at once, counted as intercepted; every other call
    (another profile, no block in this thread, ``torch.compile``, ``torch.jit.trace``, a call the rule keeps) is
    ``routed(input, weight, bias)``: ``F.linear``'s routing wrapper behind its front. The result is torch's
    ``F.linear(input, self.weight, self.bias)`` or ours, as ``F.linear`` under ``enable()`` gives it.

    Cost: the rule's verdict is kept per weight (:data:`_VERDICTS`, dropped with the weight) and checked per call
    against what it read: the weight's identity, dtype and device, the two variables' raw values and the tile
    table's generation; a call autograd records asks the rule again with its M, and a weight neither 2-byte nor
    under one MMA step asks the whole rule every call (autocast decides). ``self.weight`` and ``self.bias`` are
    read from ``_parameters`` where that is what the attributes are (:func:`_reads_parameters`; nn.Module's
    ``__getattr__`` costs two Python frames a call).
    Why: nn.Linear is what models call, and each Python operation on the hand-over costs ~0.2 us inside a model.
    CPU proxy, a tiny 24-layer ``transformers`` BERT prefill with every GEMM handed over (145 a forward): x1.053
    torch's time through ``F.linear``'s front, x1.024 through this forward, in one run (300 rotated rounds,
    ``python benchmarks/host_linear.py --module-toll``). H100, BERT-large prefill with nothing routed
    (``benchmarks/models.py --front``, both in one alternation): 0.948x torch against 0.940x and 0.923x in two
    runs (``benchmarks/results/models_h100_3b64bb6_front*.csv``)."""
    params_of, linear_cls = _READS_PARAMETERS, torch.nn.Linear

    def forward(self, input):
        if _dynamo_compiling() or _tracing():  # F.linear's route (a non-dynamo compile runs this on fake tensors)
            return routed(input, self.weight, self.bias)
        cls = type(self)
        if cls is linear_cls or params_of.get(cls) or (cls not in params_of and _remember_reads(cls)):
            p = self._parameters
            try:
                w, b = p["weight"], p["bias"]
            except KeyError:  # pruned (a plain attribute) or not registered: nn.Module's lookup
                w, b = self.weight, self.bias
        else:
            w, b = self.weight, self.bias
        stack = tls.stack
        if stack and stack[-1] is None and not tls.busy:
            e = _VERDICTS.get(id(w))
            try:
                if (e is None or e[0]() is not w or e[1] != vendor_aligned_raw() or e[2] != _table_raw()
                        or e[3] != _TABLE_GEN[0] or e[4] is not w.dtype or e[5] is not w.is_cuda):
                    e = _weight_verdict(w)
                handed = e[6]
                if handed is None:
                    handed = linear_handed(input, w, b)
                elif handed and _grad_enabled() and (
                        w.requires_grad or input.requires_grad or (b is not None and b.requires_grad)):
                    k = e[8]  # recorded by autograd: the rule reads M too (F.linear's: the rows of every batch)
                    handed = vendor_aligned(e[1], input, input.numel() // k if k else 0, e[7], k, True)
            except (TypeError, AttributeError, RuntimeError):  # not a tensor, sizes it cannot read: not handed
                handed = False
            if handed:
                _COUNTS["intercepted"] += 1
                return orig(input, w, b)
        return routed(input, w, b)

    forward.__name__ = "forward"
    forward.__qualname__ = "Linear.forward"
    return forward


def clear() -> None:
    """Forget every weight's kept verdict (:func:`linear_forward`)."""
    _VERDICTS.clear()

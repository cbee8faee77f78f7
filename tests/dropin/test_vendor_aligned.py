"""``TRITONBLAS_VENDOR_ALIGNED`` (tritonblas.handover.vendor_aligned; ``1`` on, ``0`` off, unset the default: on for
an NVIDIA GPU's tensors, off for the CPU and ROCm): under enable(), an eager bf16/fp16 GEMM whose N and K (and M
under autograd) are multiples of 8 runs torch's op, forward and backward, decode-sized ones (M or N up to 16)
included; unaligned, fp32 calls and the variable at ``0`` keep ours; a bad value is an error naming the variable. CPU
(interpreter) and GPU, counted, never timed (tests/conftest.py sets ``0`` for the rest of the suite)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

import tritonblas
from tritonblas import dispatch, settings

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/_check.py, tests/_rule_calls.py
from _check import assert_gemm_close, outcome, reference  # noqa: E402  (the one comparator, RELIABILITY §4.2)
from _rule_calls import CALLS, IDS, counted, fresh, operands  # noqa: E402

pytestmark = pytest.mark.usefixtures("cpu_profile")  # tests/dropin/conftest.py

BF = torch.bfloat16
ALIGNED = operands(24, 24, 16, BF, batch=2)  # M and N over 16, all multiples of 8
# decode-sized and aligned: torch's op too (session 38; handover.vendor_aligned says why)
DECODE = [("decode-sized M", operands(1, 24, 16, BF, batch=1)), ("M of 16", operands(16, 24, 16, BF, batch=1)),
          ("decode-sized N", operands(24, 16, 16, BF, batch=1))]
# each keeps ours under the rule: (label, operands, grad)
# (batch 1: F.linear's M counts the rows of every batch; bmm's is per batch)
KEEP = [
    ("unaligned K", operands(24, 24, 20, BF, batch=1), False),
    ("unaligned N", operands(24, 20, 16, BF, batch=1), False),
    ("unaligned M under autograd", operands(20, 24, 16, BF, batch=1), True),
    ("fp32", operands(24, 24, 16, batch=1), False),
]


def _grads(out, leaves):
    weight = torch.linspace(-1, 1, out.numel(), dtype=out.dtype, device=out.device).reshape(out.shape)
    (out * weight).sum().backward()
    return [leaf.grad for leaf in leaves]


@pytest.mark.parametrize("grad", [False, True], ids=["no_grad", "autograd"])
@pytest.mark.parametrize("name,call,batches,ref", CALLS, ids=IDS)
def test_on_an_aligned_2_byte_gemm_runs_torch_forward_and_backward(device, monkeypatch, name, call, batches, ref,
                                                                   grad):
    monkeypatch.setenv(settings.ENV_VENDOR_ALIGNED, "1")
    want = call(ALIGNED, device, grad)  # torch alone
    with tritonblas.enable():
        for _ in range(2):  # the first call and the one a warm entry would serve
            out, st = counted(call, ALIGNED, device, grad)
            assert st["routed"] == st["launches"] == 0 and st["intercepted"] == 1, st
    assert torch.equal(out, want)
    assert (out.grad_fn is not None) == grad
    if grad:
        # the same graph: torch's own backward nodes (ours would be tritonblas' autograd Function)
        assert type(out.grad_fn).__name__ == type(want.grad_fn).__name__


@pytest.mark.parametrize("label,ops", DECODE, ids=[d[0] for d in DECODE])
@pytest.mark.parametrize("name,call,batches,ref", CALLS, ids=IDS)
def test_a_decode_sized_aligned_gemm_runs_torch(device, monkeypatch, name, call, batches, ref, label, ops):
    """M or N up to 16 (a decode step's GEMMs): torch's op, its result bit for bit."""
    monkeypatch.setenv(settings.ENV_VENDOR_ALIGNED, "1")
    want = call(ops, device, False)
    with tritonblas.enable():
        for _ in range(2):
            out, st = counted(call, ops, device, False)
            assert st["routed"] == st["launches"] == 0 and st["intercepted"] == 1, (label, st)
    assert torch.equal(out, want)


def test_under_autograd_the_gradients_are_torchs(device, monkeypatch):
    monkeypatch.setenv(settings.ENV_VENDOR_ALIGNED, "1")
    x, w, b = (fresh(ALIGNED, n, device, True) for n in ("x3", "w", "b"))
    want = _grads(F.linear(x, w, b), (x, w, b))
    x2, w2, b2 = (fresh(ALIGNED, n, device, True) for n in ("x3", "w", "b"))
    with tritonblas.enable():
        dispatch.reset_stats()
        got = _grads(F.linear(x2, w2, b2), (x2, w2, b2))
        assert dispatch.stats()["launches"] == 0
    assert all(torch.equal(g, h) for g, h in zip(got, want))


@pytest.mark.parametrize("label,ops,grad", KEEP, ids=[k[0] for k in KEEP])
@pytest.mark.parametrize("name,call,batches,ref", CALLS, ids=IDS)
def test_unaligned_and_fp32_keep_ours(device, monkeypatch, name, call, batches, ref, label, ops, grad):
    monkeypatch.setenv(settings.ENV_VENDOR_ALIGNED, "1")
    with tritonblas.enable():
        out, st = counted(call, ops, device, grad)
    assert st["routed"] == 1 and st["launches"] >= 1, (label, st)
    ref64, mag, _ = ref(ops)
    assert_gemm_close(out, ref64, mag, k=ops["x"].shape[1], what=f"{name} {label}")


@pytest.mark.parametrize("value", [None, "", "0"])
def test_zero_keeps_ours_and_unset_is_on_for_nvidia_gpus_only(device, monkeypatch, value):
    """``0`` keeps ours on any device; unset or empty is the default, torch's op for an NVIDIA GPU's tensors and
    ours for the CPU's (the interpreter) and a ROCm build's: the rule's evidence is cuBLAS's."""
    if value is None:
        monkeypatch.delenv(settings.ENV_VENDOR_ALIGNED, raising=False)
    else:
        monkeypatch.setenv(settings.ENV_VENDOR_ALIGNED, value)
    to_torch = value != "0" and device == "cuda" and torch.version.hip is None
    with tritonblas.enable():
        for name, call, _, ref in CALLS:
            out, st = counted(call, ALIGNED, device, False)
            assert st["routed"] == (0 if to_torch else 1), (name, value, st)
            ref64, mag, _ = ref(ALIGNED)
            assert_gemm_close(out, ref64, mag, k=16, what=f"{name} {value!r}")


def test_under_autocast_the_rule_reads_the_2_byte_type(device, monkeypatch):
    """fp32 operands under autocast run a bf16 GEMM: aligned sizes go to torch (as torch's autocast casts them)."""
    monkeypatch.setenv(settings.ENV_VENDOR_ALIGNED, "1")
    ops = operands(24, 24, 16)
    with torch.autocast(device_type=device, dtype=BF):
        want = F.linear(fresh(ops, "x", device, True), fresh(ops, "w", device, True))
        with tritonblas.enable():
            out, st = counted(lambda o, d, g: F.linear(fresh(o, "x", d, g), fresh(o, "w", d, g)), ops, device, True)
    assert st["routed"] == 0 and st["intercepted"] == 1, st
    assert out.dtype == BF and torch.equal(out, want)


@pytest.mark.parametrize("value", ["yes", "2", "on", "-1"])
def test_a_bad_value_is_an_error_naming_the_variable(device, monkeypatch, value):
    monkeypatch.setenv(settings.ENV_VENDOR_ALIGNED, value)
    with tritonblas.enable(), pytest.raises(ValueError, match=settings.ENV_VENDOR_ALIGNED):
        F.linear(fresh(ALIGNED, "x", device), fresh(ALIGNED, "w", device))


def test_the_reader(monkeypatch):
    assert settings.ENV_VENDOR_ALIGNED in settings.ALL
    for text, want in ((None, settings.DEFAULT), ("", settings.DEFAULT), ("0", False), (" 1 ", True)):
        if text is None:
            monkeypatch.delenv(settings.ENV_VENDOR_ALIGNED, raising=False)
        else:
            monkeypatch.setenv(settings.ENV_VENDOR_ALIGNED, text)
        assert settings.vendor_aligned_on() is want


def test_without_autograd_m_need_not_be_aligned(device, monkeypatch):
    """Row-major operands lead with N and K only: M = 20 goes to torch without autograd, stays ours with it."""
    monkeypatch.setenv(settings.ENV_VENDOR_ALIGNED, "1")
    ops = operands(20, 24, 16, BF, batch=1)
    call = CALLS[0][1]
    with tritonblas.enable():
        for grad, routed in ((False, 0), (True, 1)):
            out, st = counted(call, ops, device, grad)
            assert st["routed"] == routed and st["intercepted"] == 1, (grad, st)


def test_under_transforms_and_modes_the_call_is_torchs(device, monkeypatch):
    """The rule hands a call to torch's op before the hot path's check for modes and transforms (torch's op is
    right under any of them): under vmap, forward-mode AD and a TorchFunctionMode the results are torch's and
    nothing of ours runs."""
    import torch.autograd.forward_ad as fwAD
    from torch.overrides import TorchFunctionMode

    monkeypatch.setenv(settings.ENV_VENDOR_ALIGNED, "1")
    x3, w = fresh(ALIGNED, "x3", device), fresh(ALIGNED, "w", device)
    tangent = torch.ones_like(x3)

    def forward_ad():
        with fwAD.dual_level():
            y = F.linear(fwAD.make_dual(x3, tangent), w)
            return fwAD.unpack_dual(y).tangent

    class Seen(TorchFunctionMode):
        def __init__(self):
            super().__init__()
            self.funcs = []

        def __torch_function__(self, func, types, args=(), kwargs=None):
            self.funcs.append(getattr(func, "__name__", str(func)))
            return func(*args, **(kwargs or {}))

    def in_mode():
        with Seen() as mode:
            y = F.linear(x3, w)
        assert "linear" in mode.funcs, mode.funcs
        return y

    for name, run in (("vmap", lambda: torch.func.vmap(lambda r: F.linear(r, w))(x3)),
                      ("forward AD", forward_ad), ("TorchFunctionMode", in_mode)):
        want = run()
        with tritonblas.enable():
            dispatch.reset_stats()
            got = run()
            assert dispatch.stats()["launches"] == 0, name
        assert torch.equal(got, want), name



# operands the rule's size reads must not trip over, (label, op's name, operand shapes, K): each call's outcome under the
# rule is torch's
ODD = [
    ("1-D weight", "linear", [(24, 16), (16,)], 16),
    ("0-d weight", "linear", [(24, 16), ()], None),
    ("0-d input", "linear", [(), (24, 16)], None),
    ("K differs", "linear", [(24, 16), (24, 32)], None),
    ("K = 0", "linear", [(24, 0), (24, 0), (24,)], 0),
    ("matmul 1-D a", "matmul", [(16,), (16, 24)], 16),
    ("matmul 1-D b", "matmul", [(24, 16), (16,)], 16),
    ("addmm K differs", "addmm", [(24,), (24, 16), (8, 24)], None),
    ("bmm batch differs", "bmm", [(2, 24, 16), (3, 16, 24)], None),
]


def _call(name: str):
    """torch's ``name`` (F.linear, torch.matmul, ...) as it is when called: enable()'s wrapper inside a block."""
    return lambda *ts: getattr(F if name == "linear" else torch, name)(*ts)


@pytest.mark.parametrize("label,name,shapes,k", ODD, ids=[o[0] for o in ODD])
def test_odd_operands_get_torchs_result_or_torchs_error(device, monkeypatch, label, name, shapes, k):
    op = _call(name)
    """The rule reads each op's sizes (a weight's ``shape``, an input's ``numel()``) before anything checks them:
    on operands torch rejects the error is torch's, type and message; where torch computes a result, ours (from
    torch's op or our kernels) meets RELIABILITY §4.2 against the float64 result."""
    monkeypatch.setenv(settings.ENV_VENDOR_ALIGNED, "1")
    g = torch.Generator().manual_seed(7)
    ops = [torch.randn(shape, generator=g).to(BF) for shape in shapes]
    want = outcome(op, *ops)
    with tritonblas.enable():
        got = outcome(op, *(t.to(device) for t in ops))
    assert got[0] == want[0], (label, got, want)
    if want[0] == "error":
        assert got[1] == want[1], label
        return
    ref64 = op(*(t.double() for t in ops))
    mag = op(*(t.double().abs() for t in ops))
    assert got[1].dtype == BF, label
    assert_gemm_close(got[1], ref64, mag, k=k, what=label)


def test_the_default_reads_the_device(monkeypatch):
    """Unset, the rule is on for an NVIDIA GPU's tensors only: off for CPU tensors and for a ROCm build's GPU tensors
    (no evidence there), and off while a tile table is in force (its entries were measured per shape); ``1`` is on
    for all of them. The decision alone, on stand-ins for the operand (no GPU here)."""
    from types import SimpleNamespace

    from tritonblas import handover

    def decide(value, t, m=24):  # the variable as the caller reads it: raw is the environment's value
        if value is None:
            monkeypatch.delenv(settings.ENV_VENDOR_ALIGNED, raising=False)
        else:
            monkeypatch.setenv(settings.ENV_VENDOR_ALIGNED, value)
        return handover.vendor_aligned(handover.vendor_aligned_raw(), t, m, 24, 16, False)

    two = lambda: 2  # noqa: E731  (element_size)
    gpu, cpu = SimpleNamespace(is_cuda=True, dtype=BF, element_size=two), \
        SimpleNamespace(is_cuda=False, dtype=BF, element_size=two)
    monkeypatch.setattr(handover, "_NVIDIA_BUILD", True)
    assert decide(None, gpu) and decide("", gpu)
    assert decide(None, gpu, m=1) and decide(None, gpu, m=16)  # decode-sized too (since session 38)
    assert not decide(None, cpu)
    assert decide("1", cpu)
    assert not decide("0", gpu)
    monkeypatch.setenv(settings.ENV_TABLE, "/a/table.json")  # a tile table in force decides its shapes itself
    assert not decide(None, gpu)
    assert decide("1", gpu)
    monkeypatch.setenv(settings.ENV_TABLE, "")  # empty: no table
    assert decide(None, gpu)
    monkeypatch.delenv(settings.ENV_TABLE)
    generation = handover.tables.GENERATION  # (a one-item list: tables.table_token()'s set_table number)
    before, generation[0] = generation[0], 3  # one set_table installed
    try:
        assert not decide(None, gpu)
    finally:
        generation[0] = before
    monkeypatch.setattr(handover, "_NVIDIA_BUILD", False)  # a ROCm build: torch's "cuda" tensors are AMD's
    assert not decide(None, gpu)
    assert decide("1", gpu)


def test_a_gemm_whose_k_is_under_one_mma_step_runs_torch(monkeypatch):
    """K under one tensor-core MMA step (``K * element_size < 32`` bytes: 16 bf16, 8 fp32, 32 fp8 elements) is an
    outer product of a few ranks: handed to torch's op whatever its dtype and alignment, as the aligned rule's default
    says (NVIDIA GPUs' tensors; ``0`` off). The case in every ``transformers`` rotary embedding up to 5.17: an fp32
    ``(1, 32, 1) @ (1, 1, S)`` matmul once a forward (H100, 5a1b5be: the 32 routed calls of an eager decode). One
    element more than the step falls back to the dtype and alignment rules."""
    from types import SimpleNamespace

    from tritonblas import handover

    monkeypatch.setattr(handover, "_NVIDIA_BUILD", True)

    def decide(value, dtype, size, m, n, k, cuda=True, grad=False):
        if value is None:
            monkeypatch.delenv(settings.ENV_VENDOR_ALIGNED, raising=False)
        else:
            monkeypatch.setenv(settings.ENV_VENDOR_ALIGNED, value)
        t = SimpleNamespace(is_cuda=cuda, dtype=dtype, element_size=lambda: size)
        return handover.vendor_aligned(handover.vendor_aligned_raw(), t, m, n, k, grad)

    f32, f8 = torch.float32, torch.float8_e4m3fn
    assert decide(None, f32, 4, 32, 1, 1)  # the rotary embedding's matmul at decode
    assert decide(None, f32, 4, 32, 4095, 1, grad=True) and decide(None, f32, 4, 7, 9, 7)
    assert decide(None, BF, 2, 24, 9, 15) and decide(None, f8, 1, 24, 9, 31)
    assert not decide(None, f32, 4, 32, 24, 8)  # one MMA step: fp32 stays ours
    assert not decide(None, BF, 2, 24, 9, 16) and not decide(None, f8, 1, 24, 9, 32)  # unaligned N: ours
    assert not decide(None, f32, 4, 32, 1, 1, cuda=False)  # the CPU's default: off
    assert not decide("0", f32, 4, 32, 1, 1)
    assert decide("1", f32, 4, 32, 1, 1, cuda=False)


def _forms(device):
    """Calls the hot path does not take (keywords, ``torch.mm``, ``baddbmm``, ``addbmm``, ``out=``), each with its
    float64 reference and magnitude (tests/_check.reference): (label, call, (ref, mag)); aligned bf16 operands
    (M 24, N 24, K 16, batch 2)."""
    g = torch.Generator().manual_seed(7)
    r = lambda *s: torch.randn(*s, generator=g).to(BF).to(device)  # noqa: E731
    x, w, b, a3, b3, c = r(24, 16), r(24, 16), r(24), r(2, 24, 16), r(2, 16, 24), r(24, 24)
    batched, batched_mag, _ = reference(a3, b3)
    return [
        ("F.linear bias=", lambda: F.linear(x, w, bias=b), reference(x, w.t(), bias=b)[:2]),
        ("torch.mm", lambda: torch.mm(x, w.t()), reference(x, w.t())[:2]),
        ("torch.matmul out=", lambda: torch.matmul(x, w.t(), out=torch.empty(24, 24, dtype=BF, device=device)),
         reference(x, w.t())[:2]),
        ("torch.addmm beta=", lambda: torch.addmm(c, x, w.t(), beta=1.0), reference(x, w.t(), c=c, beta=1.0)[:2]),
        ("torch.baddbmm", lambda: torch.baddbmm(c, a3, b3), reference(a3, b3, c=c, beta=1.0)[:2]),
        ("torch.addbmm", lambda: torch.addbmm(c, a3, b3),
         (batched.sum(0) + c.double(), batched_mag.sum(0) + c.double().abs())),
    ]


@pytest.mark.parametrize("value", ["1", "0"])
def test_the_rule_holds_for_every_routed_form(device, monkeypatch, value):
    """The routes apply the rule too, so it does not depend on how the GEMM is spelled: ``1`` hands each form
    to torch's op (its result bit for bit), ``0`` routes it to ours (within RELIABILITY.md's bound)."""
    monkeypatch.setenv(settings.ENV_VENDOR_ALIGNED, value)
    for label, call, ref in _forms(device):
        want = call()  # torch alone
        with tritonblas.enable():
            dispatch.reset_stats()
            got = call()
            st = dispatch.stats()
        if value == "1":
            assert st["routed"] == st["launches"] == 0 and st["intercepted"] == 1, (label, st)
            assert torch.equal(got, want), label
        else:
            assert st["routed"] == 1 and st["launches"] >= 1, (label, st)
            assert_gemm_close(got, *ref, k=32, what=label)


def _compiled_beside_torch(f, *args) -> tuple:
    """``torch.compile(f, fullgraph=True, backend="aot_eager")(*args)`` without ``enable()`` (torch's compiled result)
    and under it: (want, got, how many of our kernels launched under it), dynamo's caches reset around each."""
    torch._dynamo.reset()
    want = torch.compile(f, fullgraph=True, backend="aot_eager")(*args)
    torch._dynamo.reset()
    try:
        with tritonblas.enable():
            dispatch.reset_stats()
            got = torch.compile(f, fullgraph=True, backend="aot_eager")(*args)
            launches = dispatch.stats()["launches"]
    finally:
        torch._dynamo.reset()
    return want, got, launches


@pytest.mark.parametrize("value", ["1", "0"])
def test_under_torch_compile_the_rule_is_decided_at_trace_time(device, monkeypatch, value):
    """``torch.compile(fullgraph=True)`` of F.linear and torch.mm under ``enable()``: at ``1`` the graph holds torch's
    ops (nothing of ours launches; the result is torch's compiled one), at ``0`` ours, with no graph break either way."""
    monkeypatch.setenv(settings.ENV_VENDOR_ALIGNED, value)
    ops = operands(24, 24, 16, BF, batch=2)
    x, w = fresh(ops, "x3", device), fresh(ops, "w", device)

    def f(x, w):
        return torch.mm(F.linear(x, w).reshape(-1, 24), w).relu()  # (48 x 24) @ (24 x 16): aligned

    want, got, launches = _compiled_beside_torch(f, x, w)
    if value == "1":
        assert launches == 0 and torch.equal(got, want)
    else:
        assert launches >= 2
        h = F.linear(x, w).reshape(-1, 24)  # the first GEMM's own rounding, then the second's bound on it
        ref, mag, _ = reference(h, w, activation="relu")
        assert_gemm_close(got, ref, mag, k=24, what="compiled")


def test_under_torch_compile_the_settings_are_read_outside_dynamo(device, monkeypatch):
    """The switch's and the table's raw values are read at trace time by a call dynamo does not trace
    (``handover.vendor_aligned_traced``): torch 2.11's dynamo cannot trace the environment lookup the hot path uses,
    and broke ``fullgraph=True`` on every routed form (GPU suite at 5a1b5be). Here the raw read is a function dynamo
    refuses under ``fullgraph`` on any torch version; the compiled graph must still hold torch's op."""
    monkeypatch.setenv(settings.ENV_VENDOR_ALIGNED, "1")
    monkeypatch.setattr(tritonblas.handover, "vendor_aligned_raw",
                        torch._dynamo.disable(lambda: os.environ.get(settings.ENV_VENDOR_ALIGNED)))
    ops = operands(24, 24, 16, BF)
    x, w = fresh(ops, "x", device), fresh(ops, "w", device)

    def f(x, w):
        return torch.mm(F.linear(x, w), w)  # (24 x 24) @ (24 x 16): aligned

    want, got, launches = _compiled_beside_torch(f, x, w)
    assert launches == 0 and torch.equal(got, want)


@pytest.mark.parametrize("value", ["1", "0"])
def test_the_rotary_embeddings_matmul_follows_the_rule(device, monkeypatch, value):
    """``transformers``' rotary form, eager and compiled: ``inv_freq[None, :, None].expand(1, -1, 1) @
    positions[:, None, :]`` in fp32 (K = 1, a stride-0 operand). At ``1`` torch's op runs it (its result bit for bit,
    nothing routed), at ``0`` ours (routed, within the bound)."""
    monkeypatch.setenv(settings.ENV_VENDOR_ALIGNED, value)
    g = torch.Generator().manual_seed(3)
    inv = torch.rand(32, generator=g).to(device)
    pos = torch.arange(7, dtype=torch.float32)[None, :].to(device)

    def rope(inv, pos):  # (torch.matmul: under torch.compile, dynamo lowers `@` without the Tensor method)
        return torch.matmul(inv[None, :, None].float().expand(1, -1, 1), pos[:, None, :].float())

    want = rope(inv, pos)
    for how, f in (("eager", rope), ("compiled", torch.compile(rope, fullgraph=True, backend="aot_eager"))):
        torch._dynamo.reset()
        with tritonblas.enable():
            dispatch.reset_stats()
            got = f(inv, pos)
            st = dispatch.stats()
        if value == "1":
            assert st["routed"] == st["launches"] == 0, (how, st)
            assert torch.equal(got, want), how
        else:
            assert st["launches"] >= 1, (how, st)
            ref, mag, _ = reference(inv[None, :, None].expand(1, -1, 1), pos[:, None, :])
            assert_gemm_close(got, ref, mag, k=1, what=how)
    torch._dynamo.reset()


@pytest.mark.parametrize("value", ["0", "1", None], ids=["off", "on", "unset"])
def test_the_front_gives_the_rules_verdict_with_f_linears_sizes(device, monkeypatch, value):
    """handover.linear_handed (the routing wrapper's front for F.linear) is the rule (handover.vendor_aligned) asked
    with F.linear's sizes: M the activation's rows over every batch, read only under autograd; N and K from the
    weight; a weight that is not 2-D is never handed over. Over 1-D to 3-D activations, aligned and not, with and
    without autograd, bf16 and fp32, each switch value. A size read wrong (N for K, M of one batch) fails here."""
    from tritonblas import handover

    if value is None:
        monkeypatch.delenv(settings.ENV_VENDOR_ALIGNED, raising=False)
    else:
        monkeypatch.setenv(settings.ENV_VENDOR_ALIGNED, value)
    raw = handover.vendor_aligned_raw()
    seen = set()
    for lead in ((), (3,), (5,), (2, 4), (2, 5), (1, 1)):
        for n, k in ((24, 16), (16, 24), (24, 20), (20, 16), (8, 2), (12, 1)):
            for dtype in (BF, torch.float32):
                for grad in (False, True):
                    x = torch.randn(*lead, k, dtype=dtype, device=device).requires_grad_(grad)
                    w = torch.randn(n, k, dtype=dtype, device=device)
                    m = x.numel() // k
                    want = handover.vendor_aligned(raw, x, m, n, k, grad)
                    got = handover.linear_handed(x, w, None)
                    assert got == want, (value, lead, n, k, dtype, grad)
                    seen.add(want)
                    with torch.no_grad():  # autograd off: M is not read
                        assert handover.linear_handed(x, w, None) == handover.vendor_aligned(raw, x, 3, n, k, False)
    on = value == "1" or (value is None and device == "cuda")  # unset: on for an NVIDIA GPU's tensors
    assert seen == ({False, True} if on else {False})
    assert not handover.linear_handed(torch.randn(16, dtype=BF), torch.randn(16, dtype=BF))  # a 1-D weight


def test_a_handed_over_linear_never_reaches_the_hot_path_or_the_route(device, monkeypatch):
    """With the rule on, an aligned bf16 ``F.linear`` under enable() goes to torch's op from the wrapper's front:
    neither the hot path nor the route runs (counted with spies), the call is counted as intercepted, not routed, and
    the result is torch's bit for bit. An unaligned one passes the front and reaches the hot path; a keyword call, a
    profile block and a call inside a routed one skip the front."""
    from tritonblas import handover, routing

    monkeypatch.setenv(settings.ENV_VENDOR_ALIGNED, "1")
    calls = []

    def spy(name, fn):
        def wrapped(*a, **k):
            calls.append(name)
            return fn(*a, **k)
        return wrapped

    monkeypatch.setattr(routing, "_WRAPPERS", {})  # wrappers built now bind the spies
    monkeypatch.setattr(routing, "_TARGETS", tuple(
        (o, n, p, spy("route", r), spy("hot", h[0]), *h[1:]) if n == "linear" else (o, n, p, r, *h)
        for o, n, p, r, *h in routing._TARGETS))
    lin = torch.nn.Linear(16, 24).to(device=device, dtype=BF)
    x = torch.randn(2, 3, 16, device=device, dtype=BF)
    odd = torch.nn.Linear(20, 24).to(device=device, dtype=BF)
    x_odd = torch.randn(2, 3, 20, device=device, dtype=BF)
    with torch.no_grad():
        ref = F.linear(x, lin.weight, lin.bias)
        with tritonblas.enable():
            dispatch.reset_stats()
            got = lin(x)
            assert calls == [] and dispatch.stats()["intercepted"] == 1 and dispatch.stats()["routed"] == 0
            assert torch.equal(got, ref)
            odd(x_odd)
            assert calls[:1] == ["hot"] and dispatch.stats()["routed"] == 1, (calls, dispatch.stats())
            calls.clear()
            F.linear(x, lin.weight, bias=lin.bias)  # keyword: the route (which asks the rule itself)
            assert calls == ["route"]
            calls.clear()
            with tritonblas.enable(profile="h200"):  # a profile block: the rule is the default profile's
                lin(x)
            assert calls == ["route"]
            calls.clear()
            before = dispatch.stats()["intercepted"]
            with routing.busy():  # inside a routed call: torch's own op, nothing of ours, nothing counted
                lin(x)
            assert calls == [] and dispatch.stats()["intercepted"] == before


@pytest.mark.parametrize("value", ["0", "1"], ids=["off", "on"])
def test_the_other_fronts_give_the_rules_verdict_with_their_ops_sizes(device, monkeypatch, value):
    """matmul_handed, addmm_handed and bmm_handed (the fronts of torch.matmul / ``@``, addmm and bmm) are the rule asked
    with the sizes their routes read: matmul M, N, K of one product (a's last two sizes, b's last), addmm the 2-D
    product's, bmm one batch's; operands of the wrong rank are never handed over. Aligned and not, each size in
    turn, with and without autograd."""
    from tritonblas import handover

    monkeypatch.setenv(settings.ENV_VENDOR_ALIGNED, value)
    raw = handover.vendor_aligned_raw()
    seen = set()
    for m, n, k in ((24, 24, 16), (20, 24, 16), (24, 20, 16), (24, 24, 20), (16, 8, 2)):
        for grad in (False, True):
            def t(*shape):
                return torch.randn(*shape, dtype=BF, device=device).requires_grad_(grad)
            want = handover.vendor_aligned(raw, t(1), m, n, k, grad)
            seen.add(want)
            assert handover.matmul_handed(t(m, k), t(k, n)) == want, (m, n, k, grad)
            assert handover.matmul_handed(t(3, m, k), t(k, n)) == want
            assert handover.matmul_handed(t(2, 3, m, k), t(3, k, n)) == want
            assert handover.addmm_handed(t(n), t(m, k), t(k, n)) == want
            assert handover.bmm_handed(t(3, m, k), t(3, k, n)) == want
    assert seen == ({False, True} if value == "1" else {False})
    v = torch.randn(16, dtype=BF, device=device)
    assert not handover.matmul_handed(torch.randn(8, 16, dtype=BF, device=device), v)  # matrix @ vector
    assert not handover.addmm_handed(v, torch.randn(2, 8, 16, dtype=BF, device=device), torch.randn(16, 8, dtype=BF))
    assert not handover.bmm_handed(torch.randn(8, 16, dtype=BF, device=device), torch.randn(16, 8, dtype=BF))


def test_every_fronted_form_hands_over_without_the_hot_path(device, monkeypatch):
    """With the rule on, the positional forms with a front (F.linear, torch.matmul, ``@``, ``.matmul``, torch.addmm,
    ``.addmm``, torch.bmm, ``.bmm``) on aligned bf16 operands go to torch's op from the front: no hot path runs, the
    call counts as intercepted and not routed, and the result is torch's bit for bit."""
    from tritonblas import handover, routing

    monkeypatch.setenv(settings.ENV_VENDOR_ALIGNED, "1")
    hot = []

    def spy(fn):
        def wrapped(*a):
            hot.append(fn.__name__)
            return fn(*a)
        return wrapped

    monkeypatch.setattr(routing, "_WRAPPERS", {})  # wrappers built now bind the spies
    monkeypatch.setattr(routing, "_TARGETS", tuple(
        (o, n, p, r, spy(h[0]), *h[1:]) if h and h[0] is not None else (o, n, p, r, *h)
        for o, n, p, r, *h in routing._TARGETS))
    assert any(len(t) == 7 for t in routing._TARGETS)  # (the fronts are the seventh field)
    g = torch.Generator().manual_seed(7)
    x, w, c = (torch.randn(*s, generator=g).to(device=device, dtype=BF) for s in ((24, 16), (16, 32), (32,)))
    x3, w3 = (torch.randn(*s, generator=g).to(device=device, dtype=BF) for s in ((2, 24, 16), (2, 16, 32)))
    forms = {"F.linear": lambda: F.linear(x, w.t()), "torch.matmul": lambda: torch.matmul(x, w),
             "@": lambda: x @ w, ".matmul": lambda: x.matmul(w), "torch.addmm": lambda: torch.addmm(c, x, w),
             ".addmm": lambda: c.addmm(x, w), "torch.bmm": lambda: torch.bmm(x3, w3), ".bmm": lambda: x3.bmm(w3)}
    with torch.no_grad():
        refs = {name: f() for name, f in forms.items()}
        with tritonblas.enable():
            for name, f in forms.items():
                dispatch.reset_stats()
                got = f()
                st = dispatch.stats()
                assert hot == [] and st["intercepted"] == 1 and st["routed"] == 0, (name, hot, st)
                assert torch.equal(got, refs[name]), name

"""The hot path's memory of calls the route refused (fastpath.record_unroutable_linear / _matmul) and the
routing wrappers' memory of refused classes (fastpath.record_refused_class, every routed op).

A signature the route could not take (fp64, a device without a profile, shapes it does not route)
goes to torch from the hot path on its next call, without the route's checks: counted, not timed
(each call reaches the route's ``_kernel_ok`` at most once). A refusal that came from a state rather
than the signature (forward AD, autocast, a profile named in the block) is never remembered, and a
changed environment (the fast context) makes the signature new again.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import tritonblas
from tritonblas import dispatch, fastpath


@pytest.fixture(autouse=True)
def _fresh(monkeypatch):
    monkeypatch.delenv("TRITONBLAS_PROFILE", raising=False)
    tritonblas.clear_caches()
    dispatch.reset_stats()
    yield
    tritonblas.clear_caches()


def _rand(*shape, dtype=torch.float64):
    return torch.randn(*shape, dtype=dtype)


@pytest.mark.parametrize("op", ["linear", "linear_bias", "matmul", "operator"])
def test_a_refused_signature_skips_the_route_next_time(op, route_checks):
    x, w, b = _rand(3, 5, 8), _rand(6, 8), _rand(6)  # fp64: no kernel dtype, torch runs it
    call = {"linear": lambda: F.linear(x, w), "linear_bias": lambda: F.linear(x, w, b),
            "matmul": lambda: torch.matmul(x, w.t()), "operator": lambda: x @ w.t()}[op]
    want = call()
    with tritonblas.enable():
        first = call()
        assert len(route_checks) == 1
        second = call()
        third = call()
    assert len(route_checks) == 1, "the second and third calls went through the route's checks again"
    for got in (first, second, third):
        torch.testing.assert_close(got, want, rtol=0, atol=0)
    st = dispatch.stats()
    assert (st["intercepted"], st["routed"], st["fallbacks"]) == (3, 0, 0)


def _routable(device, monkeypatch):
    """fp32 operands the route takes: on the GPU, or on CPU with the interpreter and a profile."""
    if device == "cpu":
        monkeypatch.setenv("TRITONBLAS_PROFILE", "h200")
        monkeypatch.setenv("TRITON_INTERPRET", "1")
    return _rand(4, 16, dtype=torch.float32).to(device), _rand(8, 16, dtype=torch.float32).to(device)


def test_a_routable_signature_is_not_remembered_as_refused(route_checks, monkeypatch, device):
    """Routed calls put nothing into the refused set."""
    x, w = _routable(device, monkeypatch)
    with tritonblas.enable():
        F.linear(x, w)
        F.linear(x, w)
    assert dispatch.stats()["routed"] == 2
    assert not any(v is False for v in fastpath._TORCH_SIGS.values())


def test_a_refusal_under_forward_ad_is_not_remembered(monkeypatch, device):
    """Forward AD makes the route refuse a routable call (the kernels drop tangents); after the dual
    level closes the same signature must route again."""
    import torch.autograd.forward_ad as fwad

    x, w = _routable(device, monkeypatch)
    with tritonblas.enable():
        with fwad.dual_level():
            F.linear(x, w)
        assert dispatch.stats()["routed"] == 0
        F.linear(x, w)
    assert dispatch.stats()["routed"] == 1


def test_a_named_profile_block_is_not_remembered(route_checks):
    """Inside enable(profile=...) the hot path is not tried, so nothing is recorded for it."""
    x, w = _rand(2, 8), _rand(3, 8)
    with tritonblas.enable(profile="h200"):
        F.linear(x, w)
        F.linear(x, w)
    assert len(route_checks) == 2 and not fastpath._TORCH_SIGS


@pytest.mark.skipif(torch.cuda.is_available(), reason="CPU-only: its refusal (CPU tensors, no profile) is lifted by "
                    "TRITON_INTERPRET, which only an interpreted build of the kernels honours")
def test_a_new_environment_makes_the_signature_new(route_checks, monkeypatch):
    """CPU fp32 without a profile is refused; with TRITONBLAS_PROFILE and the interpreter set (both in
    the fast context) the same signature is asked again, and routed."""
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    x, w = _rand(4, 16, dtype=torch.float32), _rand(8, 16, dtype=torch.float32)
    with tritonblas.enable():
        F.linear(x, w)
        F.linear(x, w)
        assert len(route_checks) == 1 and dispatch.stats()["routed"] == 0
        monkeypatch.setenv("TRITONBLAS_PROFILE", "h200")
        monkeypatch.setenv("TRITON_INTERPRET", "1")
        F.linear(x, w)
    assert len(route_checks) == 2 and dispatch.stats()["routed"] == 1


def test_clear_caches_forgets_refusals(route_checks):
    x, w = _rand(2, 8), _rand(3, 8)
    with tritonblas.enable():
        F.linear(x, w)
        tritonblas.clear_caches()
        F.linear(x, w)
    assert len(route_checks) == 2


def test_the_interpreter_switched_on_after_a_gpu_build_is_refused_clearly(monkeypatch):
    """TRITON_INTERPRET set after the kernels were compiled for a GPU (Triton reads it at decoration):
    CPU tensors fall through to torch with that reason, from the direct call and the drop-in, instead of
    GPU launches on CPU pointers."""
    from tritonblas import _interpreter

    monkeypatch.setattr(_interpreter, "_DECORATED", [False])  # as if decorated without the interpreter
    monkeypatch.setenv("TRITONBLAS_PROFILE", "h200")
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    x, w = _rand(4, 16, dtype=torch.float32), _rand(8, 16, dtype=torch.float32)
    from tritonblas import fallback

    assert "TRITON_INTERPRET=1 was set after tritonblas's kernels were compiled" in fallback.fallback_reason(x, w)
    torch.testing.assert_close(tritonblas.matmul(x, w.t()), x @ w.t(), rtol=0, atol=0)  # torch ran it
    with tritonblas.enable():
        got = F.linear(x, w)
    torch.testing.assert_close(got, F.linear(x, w), rtol=0, atol=0)
    assert dispatch.stats()["routed"] == 0


@pytest.mark.parametrize("op", ["linear", "matmul"])
def test_a_refused_class_skips_the_route_for_every_shape(op, route_checks):
    """fp64 (no kernel takes it): after one refusal, calls of other shapes of the same dtype and device go
    to torch from the hot path too (decode's attention grows a new shape every token)."""
    call = {"linear": lambda x, w: F.linear(x, w), "matmul": lambda x, w: torch.matmul(x, w.t())}[op]
    shapes = [((3, 5, 8), (6, 8)), ((2, 9), (4, 9)), ((1, 7, 16), (3, 16)), ((5, 4), (11, 4))]
    tensors = [(_rand(*xs), _rand(*ws)) for xs, ws in shapes]
    with tritonblas.enable():
        got = [call(x, w) for x, w in tensors]
    assert len(route_checks) == 1, "a new shape of a refused dtype went through the route's checks again"
    for (x, w), g in zip(tensors, got):
        torch.testing.assert_close(g, call(x, w), rtol=0, atol=0)
    assert dispatch.stats()["routed"] == 0


def test_a_refused_dtype_leaves_the_kernel_dtypes_routed(monkeypatch, device):
    """A class is a dtype on a device: fp64 refused there does not stop fp32 from routing."""
    x, w = _routable(device, monkeypatch)
    with tritonblas.enable():
        F.linear(x.double(), w.double())
        F.linear(x, w)
        F.linear(x[:2], w)
    assert dispatch.stats()["routed"] == 2


@pytest.mark.skipif(torch.cuda.is_available(), reason="CPU-only: a real-dtype negative-bit view on the interpreter")
def test_a_refusal_for_one_tensor_is_not_a_class(route_checks, monkeypatch):
    """A lazily negated view is refused for what that tensor is, not for its dtype or device: the next
    plain fp32 call of another shape still routes."""
    x, w = _routable("cpu", monkeypatch)
    neg = torch.randn(4, 16, dtype=torch.complex64).conj().imag
    assert neg.is_neg()
    with tritonblas.enable():
        F.linear(neg, w)
        F.linear(neg, w)
        assert dispatch.stats()["routed"] == 0
        F.linear(x[:3], w)
    assert dispatch.stats()["routed"] == 1 and not fastpath.REFUSED_CLASSES


@pytest.mark.skipif(torch.cuda.is_available(), reason="CPU-only: the class it refuses (CPU tensors, no profile) is "
                    "lifted by TRITON_INTERPRET, which only an interpreted build of the kernels honours")
def test_a_refused_class_lapses_when_the_environment_changes(route_checks, monkeypatch):
    """CPU fp32 without a profile is a refused class; naming a profile (and the interpreter, on CPU) makes
    the next call of another shape take the route again."""
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    x, w = _rand(4, 16, dtype=torch.float32), _rand(8, 16, dtype=torch.float32)
    with tritonblas.enable():
        F.linear(x, w)
        F.linear(x[:2], w)
        assert len(route_checks) == 1
        monkeypatch.setenv("TRITONBLAS_PROFILE", "h200")
        monkeypatch.setenv("TRITON_INTERPRET", "1")
        F.linear(x[:3], w)
    assert len(route_checks) == 2 and dispatch.stats()["routed"] == 1


def _op_calls():
    """Every routed op but torch._scaled_mm (its scales are another dtype than its operands: never one class),
    as (name, call(shape index) -> result on fp64 tensors of that index's shapes): two shape sets per op."""
    r = _rand
    mk = {  # index -> the op's tensors
        "mm": lambda i: (r(3 + i, 5), r(5, 4 + i)),
        "bmm": lambda i: (r(2, 3 + i, 5), r(2, 5, 4)),
        "addmm": lambda i: (r(4 + i), r(3, 5), r(5, 4 + i)),
        "baddbmm": lambda i: (r(2, 3, 4 + i), r(2, 3, 5), r(2, 5, 4 + i)),
        "addbmm": lambda i: (r(3, 4 + i), r(2, 3, 5), r(2, 5, 4 + i)),
        "mv": lambda i: (r(3 + i, 5), r(5)),
        "addmv": lambda i: (r(3 + i), r(3 + i, 5), r(5)),
    }
    calls = {
        "mm": lambda t: torch.mm(*t), "Tensor.mm": lambda t: t[0].mm(t[1]), "bmm": lambda t: torch.bmm(*t),
        "addmm": lambda t: torch.addmm(*t), "Tensor.addmm": lambda t: t[0].addmm(t[1], t[2]),
        "addmm kw": lambda t: torch.addmm(*t, beta=0.5, alpha=2.0),
        "baddbmm": lambda t: torch.baddbmm(*t), "baddbmm kw": lambda t: torch.baddbmm(*t, beta=0.5, alpha=2.0),
        "addbmm": lambda t: torch.addbmm(*t), "mv": lambda t: torch.mv(*t), "addmv": lambda t: torch.addmv(*t),
        "matmul 1-D": lambda t: torch.matmul(*t),
    }
    base = {"Tensor.mm": "mm", "Tensor.addmm": "addmm", "addmm kw": "addmm", "baddbmm kw": "baddbmm",
            "matmul 1-D": "mv"}
    return {name: (mk[base.get(name, name)], call) for name, call in calls.items()}


@pytest.mark.parametrize("op", list(_op_calls()))
def test_every_op_learns_a_refused_class(op, route_checks):
    """Every routed op, keyword forms included: after one fp64 refusal, a call of other shapes of the same
    dtype and device goes to torch from the wrapper, before the route's checks (each of them cost 9-17 us
    a call when only F.linear and matmul remembered refusals), and returns torch's result exactly."""
    make, call = _op_calls()[op]
    first, second = make(0), make(1)
    with tritonblas.enable():
        got = [call(first), call(second), call(second)]
    assert len(route_checks) == 1, f"{op}: a call of a refused class went through the route's checks again"
    for t, g in zip((first, second, second), got):
        torch.testing.assert_close(g, call(t), rtol=0, atol=0)
    st = dispatch.stats()
    assert (st["intercepted"], st["routed"]) == (3, 0)


def test_a_refused_class_still_gets_torchs_errors(route_checks):
    """The memory hands a call to torch, so a bad call of a refused class raises torch's own error."""
    a, b = _rand(3, 5), _rand(5, 4)
    with tritonblas.enable():
        torch.mm(a, b)
        with pytest.raises(RuntimeError) as ours:
            torch.mm(a, _rand(6, 4))
    with pytest.raises(RuntimeError) as theirs:
        torch.mm(a, _rand(6, 4))
    assert str(ours.value) == str(theirs.value)


def test_mixed_classes_are_not_answered_from_the_memory(route_checks):
    """fp64 refused: an fp64 operand beside an fp32 one is not of that class, so the route sees the call."""
    a, b = _rand(3, 5), _rand(5, 4)
    with tritonblas.enable():
        torch.mm(a, b)
        assert len(route_checks) == 1
        with pytest.raises(RuntimeError):
            torch.mm(a, b.float())  # torch: "expected m1 and m2 to have the same dtype"
    assert len(route_checks) == 2


def test_a_routable_class_is_probed_once(route_checks, monkeypatch, device):
    """A refusal of a call of a routable class (here: a lazily negated view, refused for that tensor alone)
    asks whether its class is refused once; the answer is remembered (no probe per refused call), and the
    class keeps routing."""
    probes = []
    original = fastpath._class_unroutable
    monkeypatch.setattr(fastpath, "_class_unroutable", lambda *a: probes.append(a) or original(*a))
    x, w = _routable(device, monkeypatch)
    neg = torch.randn(4, 16, dtype=torch.complex64, device=device).conj().imag
    assert neg.is_neg()
    with tritonblas.enable():
        for _ in range(3):
            torch.mm(neg, w.t())
        torch.mm(x, w.t())
    assert len(probes) == 1 and dispatch.stats()["routed"] == 1 and not fastpath.REFUSED_CLASSES


def test_a_refusal_under_a_dispatch_mode_teaches_no_class(monkeypatch, device):
    """The class probe (an empty tensor of the call's dtype and device) would run inside whatever mode is
    active: here a TorchDispatchMode that makes every new tensor a meta tensor, which the probe would read as
    "a device nothing runs on". A call of a routable class refused there for its own reason (a lazily
    negated operand) must teach no class: after the mode, the same class routes."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class MetaEmpty(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = dict(kwargs or {})
            if func is torch.ops.aten.empty.memory_format:
                kwargs["device"] = torch.device("meta")
            return func(*args, **kwargs)

    x, w = _routable(device, monkeypatch)
    neg = torch.randn(4, 16, dtype=torch.complex64, device=device).conj().imag
    with tritonblas.enable():
        with MetaEmpty():
            torch.mm(neg, w.t())
        assert dispatch.stats()["routed"] == 0
        torch.mm(x, w.t())
    assert dispatch.stats()["routed"] == 1
    assert not fastpath.REFUSED_CLASSES

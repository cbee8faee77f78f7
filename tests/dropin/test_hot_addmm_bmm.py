"""The hot path of ``torch.addmm(c, a, b)`` and ``torch.bmm(a, b)`` under ``enable()`` (fastpath.addmm_hot,
bmm_hot): a known signature is served from the dispatcher's fast entry without the route, bitwise as the
checked call; torch's errors and autograd are untouched (interpreter on CPU, or the GPU)."""

from __future__ import annotations

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tritonblas
from tritonblas import dispatch


@pytest.fixture(autouse=True)
def _fresh(cpu_profile):
    tritonblas.clear_caches()
    dispatch.reset_stats()
    yield
    tritonblas.clear_caches()


def _rand(*shape, device, seed, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g, dtype=torch.float64).to(dtype).to(device)


@pytest.mark.parametrize("c_shape", [(40,), (1, 40), (33, 40)])
@pytest.mark.parametrize("method", [False, True])
def test_addmm_second_call_is_warm_and_bitwise_the_checked_one(device, route_checks, c_shape, method):
    a, b, c = _rand(33, 24, device=device, seed=1), _rand(24, 40, device=device, seed=2), \
        _rand(*c_shape, device=device, seed=3)
    call = (lambda: c.addmm(a, b)) if method else (lambda: torch.addmm(c, a, b))
    with torch.no_grad(), tritonblas.enable():
        first = call()
        checks = len(route_checks)
        hits = dispatch.stats()["fast_hits"]
        second = call()
        assert len(route_checks) == checks, "the second call took the route"
        assert dispatch.stats()["fast_hits"] == hits + 1
    assert torch.equal(first, second)
    ref = torch.addmm(c.double(), a.double(), b.double())
    torch.testing.assert_close(second.double(), ref, rtol=1e-4, atol=1e-4)
    assert dispatch.stats()["routed"] == 2


@pytest.mark.parametrize("method", [False, True])
def test_bmm_second_call_is_warm_and_bitwise_the_checked_one(device, route_checks, method):
    a, b = _rand(3, 17, 24, device=device, seed=4), _rand(3, 24, 9, device=device, seed=5)
    call = (lambda: a.bmm(b)) if method else (lambda: torch.bmm(a, b))
    with torch.no_grad(), tritonblas.enable():
        first = call()
        checks = len(route_checks)
        second = call()
        assert len(route_checks) == checks
    assert torch.equal(first, second)
    torch.testing.assert_close(second.double(), torch.bmm(a.double(), b.double()), rtol=1e-4, atol=1e-4)


def test_an_entry_of_another_op_does_not_answer_for_bmm_or_addmm(device):
    """torch.mm's 2-D entry, a broadcasting matmul's entry and baddbmm's entry share kernel operands
    with bmm / addmm calls that torch refuses: those still raise torch's errors."""
    a2, b2 = _rand(8, 16, device=device, seed=6), _rand(16, 8, device=device, seed=7)
    a1, b3 = _rand(1, 8, 16, device=device, seed=8), _rand(3, 16, 8, device=device, seed=9)
    c3 = _rand(3, 8, 8, device=device, seed=10)
    with torch.no_grad(), tritonblas.enable():
        torch.mm(a2, b2)
        torch.mm(a2, b2)
        with pytest.raises(RuntimeError):
            torch.bmm(a2, b2)
        torch.matmul(a1, b3)
        torch.matmul(a1, b3)
        with pytest.raises(RuntimeError):
            torch.bmm(a1, b3)
        a3 = a1.expand(3, 8, 16).contiguous()
        torch.baddbmm(c3, a3, b3)
        torch.baddbmm(c3, a3, b3)
        with pytest.raises(RuntimeError):
            torch.addmm(c3, a3, b3)


def test_keywords_take_the_route_and_autograd_runs_warm(device, route_checks):
    a = _rand(9, 12, device=device, seed=11).requires_grad_()
    b, c = _rand(12, 5, device=device, seed=12), _rand(5, device=device, seed=13)
    with tritonblas.enable():
        torch.addmm(c, a.detach(), b)
        checks = len(route_checks)
        y = torch.addmm(c, a, b)  # autograd on the entry the no-grad call recorded: _Addmm, no route
        assert len(route_checks) == checks
        y.sum().backward()
        z = torch.addmm(c, a.detach(), b, beta=0.5)  # keywords: the route
    assert len(route_checks) == checks + 1
    torch.testing.assert_close(a.grad.double(), torch.ones(9, 5, dtype=torch.float64, device=device) @ b.double().t(),
                               rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(z.double(), 0.5 * c.double() + a.detach().double() @ b.double(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("c_shape", [(40,), (1, 40), (33, 40), (33, 1), ()])
@pytest.mark.parametrize("b_transposed", [False, True])
def test_addmm_autograd_warm_gradients_in_their_layouts(device, route_checks, c_shape, b_transposed):
    """GPT-2's Conv1D under training: the second step runs warm (_Addmm), every gradient matches torch's
    float64 one, and each lands in its input's layout (no copy for AccumulateGrad)."""
    a = _rand(33, 24, device=device, seed=14).requires_grad_()
    if b_transposed:  # a transposed view of an (N, K) parameter, as x @ w.t()
        w = torch.nn.Parameter(_rand(40, 24, device=device, seed=15))
        get_b, leaf = (lambda: w.t()), w
    else:
        w = torch.nn.Parameter(_rand(24, 40, device=device, seed=15))
        get_b, leaf = (lambda: w), w
    c = torch.nn.Parameter(_rand(*c_shape, device=device, seed=16))
    gy = _rand(33, 40, device=device, seed=17)
    with tritonblas.enable():
        for step in range(2):
            a.grad = leaf.grad = c.grad = None
            checks = len(route_checks)
            torch.addmm(c, a, get_b()).backward(gy)
            if step == 1:
                assert len(route_checks) == checks, "the second step took the route"
    ad, bd, cd = a.detach().double().requires_grad_(), get_b().detach().double().requires_grad_(), \
        c.detach().double().requires_grad_()
    torch.addmm(cd, ad, bd).backward(gy.double())
    torch.testing.assert_close(a.grad.double(), ad.grad, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(c.grad.double(), cd.grad, rtol=1e-4, atol=1e-4)
    gb = bd.grad.t() if b_transposed else bd.grad
    torch.testing.assert_close(leaf.grad.double(), gb, rtol=1e-4, atol=1e-4)
    assert leaf.grad.stride() == leaf.stride() and c.grad.shape == c.shape


def test_addmm_autograd_with_a_transposed_weight_adds_no_copies(device, count_copies):
    """addmm(c, x, w.t()) under training: w's gradient is produced in w's own layout, so AccumulateGrad
    copies nothing (a row-major gradient of the transposed view would be copied back into w's layout;
    torch's own step makes that one copy here, 2026-12-05, torch 2.13 CPU)."""
    x = _rand(33, 24, device=device, seed=21).requires_grad_()
    w = torch.nn.Parameter(_rand(40, 24, device=device, seed=22))
    c = torch.nn.Parameter(_rand(40, device=device, seed=23))
    gy = _rand(33, 40, device=device, seed=24)

    def step():
        x.grad = w.grad = c.grad = None
        torch.addmm(c, x, w.t()).backward(gy)

    with tritonblas.enable():
        step()
        step()
        mine = count_copies(step)
    assert mine == 0, mine


def test_addmm_double_backward_through_the_warm_path(device):
    a = _rand(7, 6, device=device, seed=18).requires_grad_()
    b = _rand(6, 5, device=device, seed=19).requires_grad_()
    c = _rand(5, device=device, seed=20).requires_grad_()

    def second(fn):
        y = fn(c, a, b)
        (ga,) = torch.autograd.grad(y.pow(2).sum(), a, create_graph=True)
        (gb2,) = torch.autograd.grad(ga.sum(), b)
        return gb2

    want = second(lambda c_, a_, b_: torch.addmm(c_.double(), a_.double(), b_.double()))
    with tritonblas.enable():
        torch.addmm(c.detach(), a.detach(), b.detach())  # records the entry
        got = second(torch.addmm)
    torch.testing.assert_close(got.double(), want.double(), rtol=1e-4, atol=1e-4)


# --- property: any operand layout, called twice (cold, then hot), against torch ------------------------


def _layout(t, transposed: bool, offset: int):
    """``t`` stored transposed (its last two dims swapped in memory) and/or at an element offset."""
    if transposed:
        t = t.transpose(-1, -2).contiguous().transpose(-1, -2)
    if offset:
        flat = torch.zeros(t.numel() + offset, dtype=t.dtype, device=t.device)
        flat[offset:] = t.reshape(-1) if t.is_contiguous() else t.contiguous().reshape(-1)
        base = flat[offset:].view(t.contiguous().shape)
        t = base if not transposed else base.transpose(-1, -2).contiguous().transpose(-1, -2)
    return t


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(m=st.integers(1, 20), n=st.integers(1, 20), k=st.integers(0, 20), batch=st.integers(1, 3),
       ta=st.booleans(), tb=st.booleans(), off=st.sampled_from([0, 1, 3]),
       c_kind=st.sampled_from(["row", "full", "col", "scalar"]),
       dtype=st.sampled_from([torch.float32, torch.bfloat16]))
def test_hot_calls_equal_the_cold_ones_and_torch(device, m, n, k, batch, ta, tb, off, c_kind, dtype):
    g = torch.Generator().manual_seed(m * 10007 + n * 101 + k)
    a = _layout(torch.randn(m, k, generator=g).to(dtype).to(device), ta, off)
    b = _layout(torch.randn(k, n, generator=g).to(dtype).to(device), tb, 0)
    c = torch.randn({"row": (n,), "full": (m, n), "col": (m, 1), "scalar": ()}[c_kind], generator=g).to(dtype).to(device)
    a3 = _layout(torch.randn(batch, m, k, generator=g).to(dtype).to(device), ta, off)
    b3 = _layout(torch.randn(batch, k, n, generator=g).to(dtype).to(device), tb, 0)
    tol = dict(rtol=2e-2, atol=2e-2 * max(k, 1)) if dtype is torch.bfloat16 else dict(rtol=1e-4, atol=1e-4 * max(k, 1))
    tritonblas.clear_caches()
    with torch.no_grad(), tritonblas.enable():
        cold = torch.addmm(c, a, b)
        h0 = dispatch.stats()["fast_hits"]
        hot = torch.addmm(c, a, b)
        cold3 = torch.bmm(a3, b3)
        h1 = dispatch.stats()["fast_hits"]
        hot3 = torch.bmm(a3, b3)
        h2 = dispatch.stats()["fast_hits"]
    assert torch.equal(cold, hot) and torch.equal(cold3, hot3)
    if k > 0:  # (K = 0 is the dispatcher's beta·c / zeros, with no kernel entry to be warm on)
        assert (h1 - h0, h2 - h1) == (1, 1), "the second call was not served warm"
    assert hot.shape == (m, n) and hot3.shape == (batch, m, n) and hot.dtype == dtype
    torch.testing.assert_close(hot.double(), torch.addmm(c.double(), a.double(), b.double()), **tol)
    torch.testing.assert_close(hot3.double(), torch.bmm(a3.double(), b3.double()), **tol)

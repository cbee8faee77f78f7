"""The hot path of ``torch.addmm(c, a, b)`` and ``torch.bmm(a, b)`` under ``enable()`` (fastpath.addmm_hot,
bmm_hot): a known signature is served from the dispatcher's fast entry without the route, bitwise as the
checked call; torch's errors and autograd are untouched (interpreter on CPU, or the GPU)."""

from __future__ import annotations

import pytest
import torch

import tritonblas
from tritonblas import dispatch, routing


@pytest.fixture(autouse=True)
def _fresh(cpu_profile):
    tritonblas.clear_caches()
    dispatch.reset_stats()
    yield
    tritonblas.clear_caches()


@pytest.fixture
def route_checks(monkeypatch):
    """Counts the route's kernel checks (routing._kernel_ok, read from the module at call time)."""
    calls = []
    original = routing._kernel_ok

    def counted(*args):
        calls.append(args)
        return original(*args)

    monkeypatch.setattr(routing, "_kernel_ok", counted)
    return calls


def _rand(*shape, device, seed, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g, dtype=torch.float64).to(dtype).to(device)


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


def test_keywords_and_autograd_take_the_route(device, route_checks):
    a = _rand(9, 12, device=device, seed=11).requires_grad_()
    b, c = _rand(12, 5, device=device, seed=12), _rand(5, device=device, seed=13)
    with tritonblas.enable():
        torch.addmm(c, a.detach(), b)
        checks = len(route_checks)
        y = torch.addmm(c, a, b)  # autograd: the route's custom op, with a graph
        y.sum().backward()
        z = torch.addmm(c, a.detach(), b, beta=0.5)  # keywords: the route
    assert len(route_checks) == checks + 2
    torch.testing.assert_close(a.grad.double(), torch.ones(9, 5, dtype=torch.float64, device=device) @ b.double().t(),
                               rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(z.double(), 0.5 * c.double() + a.detach().double() @ b.double(), rtol=1e-4, atol=1e-4)

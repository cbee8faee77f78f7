"""``with tritonblas.enable():`` routes torch's GEMM entry points to tritonblas (the stats counter
proves a call reached our kernels) and lets everything else through to torch unchanged."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import tritonblas
from tritonblas import dispatch


pytestmark = pytest.mark.usefixtures("cpu_profile")  # tests/dropin/conftest.py


def _rand(*shape, device, dtype=torch.float32):
    return torch.randn(shape, dtype=torch.float64).to(dtype).to(device)


def _entry_points(device):
    a, b, c = _rand(7, 5, device=device), _rand(5, 6, device=device), _rand(6, device=device)
    a3, b3 = _rand(2, 7, 5, device=device), _rand(2, 5, 6, device=device)
    w = _rand(6, 5, device=device)
    return {
        "torch.matmul": lambda: torch.matmul(a3, b),
        "torch.mm": lambda: torch.mm(a, b),
        "torch.addmm": lambda: torch.addmm(c, a, b, beta=0.5, alpha=2),
        "torch.bmm": lambda: torch.bmm(a3, b3),
        "F.linear": lambda: F.linear(a, w, c),
        "a @ b": lambda: a @ b,
        "Tensor.matmul": lambda: a.matmul(b),
        "Tensor.mm": lambda: a.mm(b),
        "Tensor.bmm": lambda: a3.bmm(b3),
        "Tensor.addmm": lambda: c.addmm(a, b),
        "__rmatmul__": lambda: b.__rmatmul__(a),
        "nn.Linear": lambda: _linear(w, c)(a),
    }


def _linear(w, c):
    m = torch.nn.Linear(w.shape[1], w.shape[0], device=w.device)
    with torch.no_grad():
        m.weight.copy_(w)
        m.bias.copy_(c)
    return m


@pytest.mark.parametrize("name", list(_entry_points("cpu")))
def test_routes_to_tritonblas(name, device):
    fn = _entry_points(device)[name]
    ref = fn()
    assert dispatch.stats()["launches"] == 0
    with tritonblas.enable():
        ours = fn()
    s = dispatch.stats()
    assert s["routed"] == 1 and s["launches"] == 1, s
    assert ours.shape == ref.shape and ours.dtype == ref.dtype
    torch.testing.assert_close(ours.detach(), ref.detach(), rtol=1e-5, atol=1e-5)


def test_out_keyword_is_routed(device):
    a, b = _rand(7, 5, device=device), _rand(5, 6, device=device)
    out = torch.full((7, 6), float("nan"), device=device)
    with tritonblas.enable():
        torch.mm(a, b, out=out)
    torch.testing.assert_close(out, a @ b)
    assert dispatch.stats()["routed"] == 1


def test_unsupported_falls_through_unchanged(device):
    a64, b64 = _rand(4, 3, device=device, dtype=torch.float64), _rand(3, 2, device=device, dtype=torch.float64)
    ai = torch.arange(12).reshape(3, 4)
    with tritonblas.enable():
        r64 = a64 @ b64
        ri = ai @ ai.t() if device == "cpu" else None
        with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied"):
            torch.mm(a64.float(), a64.float())  # torch's own message: the call went to torch
        with pytest.raises(RuntimeError, match="same dtype"):
            torch.mm(a64.float(), b64.half())
    assert torch.equal(r64, torch.matmul(a64, b64))
    if ri is not None:
        assert torch.equal(ri, ai @ ai.t())
    s = dispatch.stats()
    assert s["routed"] == 0 and s["launches"] == 0


@pytest.mark.skipif(torch.cuda.is_available(), reason="CPU-only: checks the interpreter's profile rule")
def test_cpu_without_a_profile_falls_through(monkeypatch):
    monkeypatch.delenv("TRITONBLAS_PROFILE", raising=False)
    a, b = torch.randn(4, 3), torch.randn(3, 2)
    with tritonblas.enable():
        r = a @ b
    assert torch.equal(r, torch.matmul(a, b)) and dispatch.stats()["routed"] == 0
    # under autograd too (the warm path's autograd entry raised DeviceError here for a new signature)
    x, w = torch.randn(2, 4, 3, requires_grad=True), torch.randn(5, 3, requires_grad=True)
    with tritonblas.enable():
        y = torch.nn.functional.linear(x, w)
        z = x @ w.t()
    assert torch.equal(y, torch.nn.functional.linear(x, w)) and torch.equal(z, x @ w.t())
    (y.sum() + z.sum()).backward()
    assert x.grad is not None and dispatch.stats()["routed"] == 0
    with tritonblas.enable(profile="h200"):
        a @ b
    assert dispatch.stats()["routed"] == 1


def test_scope_ends_with_the_block(device):
    a, b = _rand(4, 3, device=device), _rand(3, 2, device=device)
    with tritonblas.enable():
        with tritonblas.enable():
            a @ b
        a @ b
    a @ b
    assert dispatch.stats()["routed"] == 2


def test_backward_inside_enable(device):
    a = _rand(6, 5, device=device).requires_grad_()
    b = _rand(5, 4, device=device).requires_grad_()
    with tritonblas.enable():
        (a @ b).sum().backward()
    ga, gb = a.grad.clone(), b.grad.clone()
    a.grad = b.grad = None
    (a @ b).sum().backward()
    torch.testing.assert_close(ga, a.grad)
    torch.testing.assert_close(gb, b.grad)
    assert dispatch.stats()["launches"] == 3  # forward + two backward GEMMs


def test_autocast(device):
    x, w, bias = _rand(9, 16, device=device), _rand(8, 16, device=device), _rand(8, device=device)
    with torch.autocast(device, dtype=torch.bfloat16):
        ref = F.linear(x, w, bias)
        with tritonblas.enable():
            ours = F.linear(x, w, bias)
    assert ours.dtype == ref.dtype == torch.bfloat16
    assert dispatch.stats()["routed"] == 1
    torch.testing.assert_close(ours.float(), ref.float(), rtol=2e-2, atol=2e-2)


def _autocast_cases(device):
    a, b = _rand(5, 7, device=device), _rand(7, 3, device=device)
    v, c1, c2 = _rand(7, device=device), _rand(5, device=device), _rand(5, 3, device=device)
    a3, b3 = _rand(2, 5, 7, device=device), _rand(2, 7, 3, device=device)
    d, e = a.double(), b.double()
    return {
        # fp64 operands are not autocast-eligible: torch keeps them in fp64
        "mm fp64": lambda: torch.mm(d, e),
        "matmul fp64": lambda: d @ e,
        "addmm fp64": lambda: torch.addmm(c2.double(), d, e),
        "F.linear fp64": lambda: F.linear(d, e.t(), None),
        "bmm fp64": lambda: torch.bmm(a3.double(), b3.double()),
        # one fp64 operand: torch casts only the other one, and raises on the mismatch
        "mm fp64 @ fp32": lambda: torch.mm(d, b),
        # mv / addmv have no CPU autocast kernel: torch runs them in fp32 on CPU (CUDA casts them)
        "mv": lambda: torch.mv(a, v),
        "Tensor.mv": lambda: a.mv(v),
        "addmv": lambda: torch.addmv(c1, a, v),
        # matmul with a vector does autocast (aten::matmul has the kernel)
        "a @ v": lambda: a @ v,
        "mm": lambda: torch.mm(a, b),
    }


@pytest.mark.parametrize("case", list(_autocast_cases("cpu")))
def test_autocast_casts_what_torch_casts(device, case):
    """Under ``torch.autocast`` a routed call casts exactly the operands torch's autocast would: not
    fp64 ones (not autocast-eligible), and none for an op without an autocast kernel on the device
    (mv / addmv on CPU). Before, every floating operand was cast: ``torch.mm(fp64, fp64)`` came back
    in bf16, ``torch.mm(fp64, fp32)`` returned a result where torch raises, ``torch.mv`` on CPU in bf16."""
    fn = _autocast_cases(device)[case]
    with torch.autocast(device, dtype=torch.bfloat16):
        try:
            ref, err = fn(), None
        except RuntimeError as e:
            ref, err = None, e
        with tritonblas.enable():
            if err is not None:
                for _ in range(2):  # the cold call, then the hot path's
                    with pytest.raises(RuntimeError):
                        fn()
                return
            ours, again = fn(), fn()  # the cold call, then the hot path's (cast as the route casts)
    tol = 2e-2 if ref.dtype == torch.bfloat16 else 1e-5
    for got in (ours, again):
        assert got.dtype == ref.dtype, f"{case}: {got.dtype} != torch's {ref.dtype}"
        torch.testing.assert_close(got, ref, rtol=tol, atol=tol)


@pytest.mark.parametrize("op", ["F.linear", "matmul", "addmm"])
def test_autocast_training_runs_warm_on_the_cast_tensors(device, op, route_checks):
    """Mixed-precision training (fp32 parameters, torch.autocast bf16): from the second step on the hot
    path casts as the route does and serves the call warm (the route's checks are not run), and the
    gradients reaching the fp32 parameters match torch's own autocast step."""
    x = _rand(6, 5, 16, device=device).requires_grad_()
    w = torch.nn.Parameter(_rand(8, 16, device=device))
    bias = torch.nn.Parameter(_rand(8, device=device))
    call = {"F.linear": lambda: F.linear(x, w, bias), "matmul": lambda: torch.matmul(x, w.t()),
            "addmm": lambda: torch.addmm(bias, x.view(30, 16), w.t())}[op]

    def step():
        x.grad = w.grad = bias.grad = None
        with torch.autocast(device, dtype=torch.bfloat16):
            y = call()
        y.float().pow(2).sum().backward()
        return y, x.grad, w.grad, bias.grad

    want = step()
    with tritonblas.enable():
        step()
        n = len(route_checks)
        got = step()
    assert len(route_checks) == n, "the second step took the route"
    for g, r in zip(got, want):
        if r is None:
            assert g is None
            continue
        assert g.dtype == r.dtype
        torch.testing.assert_close(g.float(), r.float(), rtol=5e-2, atol=5e-2 * max(1.0, r.abs().max().item()))


def _dual_cases(device):
    x, w, t = _rand(6, 7, device=device), _rand(5, 7, device=device), _rand(6, 7, device=device)
    b, c = _rand(5, device=device), _rand(6, 5, device=device)
    return x, t, {
        "F.linear": lambda d: F.linear(d, w, b),
        "torch.matmul": lambda d: torch.matmul(d.view(2, 3, 7), w.t()),
        "torch.addmm": lambda d: torch.addmm(c, d, w.t(), beta=0.5, alpha=2),
        "tritonblas.linear": lambda d: tritonblas.linear(d, w, b),
        "tritonblas.matmul": lambda d: tritonblas.matmul(d, w.t()),
        "tritonblas.addmm": lambda d: tritonblas.addmm(c, d, w.t()),
    }


@pytest.mark.parametrize("name", list(_dual_cases("cpu")[2]))
def test_forward_mode_ad_keeps_the_tangent(name, device):
    """A dual tensor (torch.autograd.forward_ad) is a plain Tensor with requires_grad False: the warm
    path, the direct dispatcher and the custom ops all ran the primal and returned no tangent, silently.
    Under a dual level torch runs the call (routed: torch's own op), warm signature or not."""
    import torch.autograd.forward_ad as fwAD

    x, t, cases = _dual_cases(device)
    fn = cases[name]
    with fwAD.dual_level():
        want = fwAD.unpack_dual(fn(fwAD.make_dual(x, t)))
    with tritonblas.enable():
        fn(x), fn(x)  # the signature is warm
        for _ in range(2):
            with fwAD.dual_level():
                got = fwAD.unpack_dual(fn(fwAD.make_dual(x, t)))
            assert got.tangent is not None, name
            torch.testing.assert_close(got.primal, want.primal, rtol=1e-5, atol=1e-5)
            torch.testing.assert_close(got.tangent, want.tangent, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(fn(x), want.primal, rtol=1e-5, atol=1e-5)  # routed again after


def test_functorch_transforms_run_torch(device):
    """torch.func.grad / jacrev over a routed call: torch's op (the custom ops raised "must override
    the setup_context staticmethod"); vmap stays correct."""
    x, w = _rand(4, 7, device=device), _rand(5, 7, device=device)

    def f(v):
        return F.linear(v, w).pow(2).sum()

    want_g, want_j = torch.func.grad(f)(x), torch.func.jacrev(lambda v: F.linear(v, w))(x)
    with tritonblas.enable():
        F.linear(x, w)
        torch.testing.assert_close(torch.func.grad(f)(x), want_g)
        torch.testing.assert_close(torch.func.jacrev(lambda v: F.linear(v, w))(x), want_j)
        torch.testing.assert_close(torch.func.vmap(lambda v: F.linear(v, w))(x.view(2, 2, 7)),
                                   (x @ w.t()).view(2, 2, 5), rtol=1e-5, atol=1e-5)

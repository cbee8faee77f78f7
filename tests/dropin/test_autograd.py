"""Autograd through the custom ops (RELIABILITY.md §6 item 25), the ops' hygiene (item 26) on CPU.

- gradcheck in float64: fp64 is not a kernel dtype, so forward and both backward GEMMs take the
  torch fallback inside the same custom ops and registered backward — the dispatch path is exercised,
  the numbers are torch's.
- fp32 gradients through our kernels vs torch's autograd, partial requires_grad (only the needed
  backward GEMM runs), stride-0 expanded inputs (their gradient is summed by the expand).
- opcheck and torch.compile(fullgraph=True) run here too (the op is opaque to compile, so the
  interpreter runs inside the compiled graph); the GPU file repeats them with Inductor on the H200.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import tritonblas
from tritonblas import dispatch


pytestmark = pytest.mark.usefixtures("cpu_profile")  # tests/dropin/conftest.py


def _rand(*shape, device, dtype=torch.float32, grad=True):
    return torch.randn(shape, dtype=torch.float64).to(dtype).to(device).requires_grad_(grad)


def test_gradcheck_float64_through_the_fallback(device):
    a, b = _rand(4, 3, device=device, dtype=torch.float64), _rand(3, 5, device=device, dtype=torch.float64)
    c = _rand(5, device=device, dtype=torch.float64)
    x = _rand(2, 3, 3, device=device, dtype=torch.float64)
    assert torch.autograd.gradcheck(lambda a, b: tritonblas.matmul(a, b), (a, b))
    assert torch.autograd.gradcheck(lambda x, b: tritonblas.matmul(x, b), (x, b))        # folded N-D @ 2-D
    assert torch.autograd.gradcheck(lambda a, x: tritonblas.matmul(a, x), (a, x))        # 2-D @ 3-D broadcast
    assert torch.autograd.gradcheck(lambda c, a, b: tritonblas.addmm(c, a, b, alpha=0.5, beta=2), (c, a, b))
    assert torch.autograd.gradcheck(lambda x, w, c: tritonblas.linear(x, w, c), (a, b.t(), c))
    assert torch.autograd.gradgradcheck(lambda a, b: tritonblas.matmul(a, b), (a, b))
    s = dispatch.stats()
    assert s["launches"] == 0 and s["fallbacks"] > 0


def _grads(fn, *inputs):
    out = fn(*inputs)
    g = torch.randn_like(out)
    out.backward(g)
    return out.detach(), [None if t.grad is None else t.grad.clone() for t in inputs]


def _compare(ours_fn, torch_fn, *inputs, what=""):
    ours_in = [t.detach().clone().requires_grad_(t.requires_grad) for t in inputs]
    ref_in = [t.detach().clone().requires_grad_(t.requires_grad) for t in inputs]
    torch.manual_seed(0)
    o, go = _grads(ours_fn, *ours_in)
    torch.manual_seed(0)
    r, gr = _grads(torch_fn, *ref_in)
    torch.testing.assert_close(o, r, rtol=1e-5, atol=1e-5, msg=lambda m: f"{what} forward: {m}")
    for i, (x, y) in enumerate(zip(go, gr)):
        assert (x is None) == (y is None), f"{what}: grad {i} presence differs"
        if x is not None:
            assert x.shape == y.shape
            torch.testing.assert_close(x, y, rtol=1e-5, atol=1e-5, msg=lambda m: f"{what} grad {i}: {m}")


CASES = {
    "2d@2d": ((13, 7), (7, 9)),
    "3d@2d-folded": ((2, 5, 7), (7, 9)),
    "2d@3d-broadcast": ((5, 7), (3, 7, 9)),
    "1d@3d": ((7,), (3, 7, 9)),
    "3d@1d": ((3, 5, 7), (7,)),
    "batch-broadcast": ((2, 1, 5, 7), (3, 7, 4)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_fp32_gradients_match_torch(name, device):
    sa, sb = CASES[name]
    a, b = _rand(*sa, device=device), _rand(*sb, device=device)
    _compare(tritonblas.matmul, torch.matmul, a, b, what=name)
    assert dispatch.stats()["fallbacks"] == 0


@pytest.mark.parametrize("which", ["a", "b"])
def test_partial_requires_grad(which, device):
    a = _rand(9, 6, device=device, grad=which == "a")
    b = _rand(6, 5, device=device, grad=which == "b")
    _compare(tritonblas.matmul, torch.matmul, a, b, what=f"only {which}")
    assert dispatch.stats()["launches"] == 2  # forward + the one backward GEMM that is needed


def test_stride0_expanded_input_gradient_is_summed(device):
    base = _rand(1, 6, 8, device=device)
    b = _rand(3, 8, 4, device=device)
    _compare(lambda x, y: tritonblas.matmul(x.expand(3, 6, 8), y), lambda x, y: torch.matmul(x.expand(3, 6, 8), y),
             base, b, what="expand batch")
    col = _rand(6, 1, device=device)
    _compare(lambda x, y: tritonblas.matmul(x.expand(6, 8), y), lambda x, y: torch.matmul(x.expand(6, 8), y),
             col, _rand(8, 4, device=device), what="expand columns")


def test_addmm_and_linear_gradients(device):
    c, a, b = _rand(11, device=device), _rand(7, 5, device=device), _rand(5, 11, device=device)
    _compare(lambda c, a, b: tritonblas.addmm(c, a, b, alpha=0.5, beta=-2),
             lambda c, a, b: torch.addmm(c, a, b, alpha=0.5, beta=-2), c, a, b, what="addmm")
    x, w, bias = _rand(2, 4, 5, device=device), _rand(6, 5, device=device), _rand(1, 6, device=device)
    _compare(tritonblas.linear, F.linear, x, w, bias, what="linear")
    assert dispatch.stats()["fallbacks"] == 0


def test_bmm_gradients(device):
    a, b = _rand(2, 6, 5, device=device), _rand(2, 5, 3, device=device)
    _compare(tritonblas.bmm, torch.bmm, a, b, what="bmm")


@pytest.mark.timeout(600)
def test_opcheck_cpu(device):
    if device != "cpu":
        pytest.skip("the GPU file runs opcheck on CUDA tensors")
    import tritonblas.ops  # noqa: F401 - registers the torch.library ops

    a, b = _rand(5, 4, device=device), _rand(4, 3, device=device)
    torch.library.opcheck(torch.ops.tritonblas.mm.default, (a, b, None, None))
    torch.library.opcheck(torch.ops.tritonblas.addmm.default, (_rand(3, device=device), a, b, 0.5, 2.0, None, None))
    out = torch.empty(5, 3, device=device)
    torch.library.opcheck(torch.ops.tritonblas.gemm_out.default,
                          (a.detach(), b.detach(), out, None, 1.0, 0.0, None, None))


@pytest.mark.timeout(600)
@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_compile_fullgraph_cpu(backend, device):
    if device != "cpu":
        pytest.skip("the GPU file compiles with Inductor on CUDA tensors")

    def f(x, w, bias, y):
        return tritonblas.matmul(tritonblas.linear(x, w, bias).relu(), y)

    x, w, bias, y = (_rand(2, 5, 6, device=device, grad=False), _rand(4, 6, device=device, grad=False),
                     _rand(4, device=device, grad=False), _rand(4, 3, device=device, grad=False))
    torch._dynamo.reset()
    compiled = torch.compile(f, fullgraph=True, backend=backend)
    torch.testing.assert_close(compiled(x, w, bias, y), f(x, w, bias, y), rtol=0, atol=0)
    assert dispatch.stats()["launches"] >= 4


def test_compile_dynamic_no_recompiles_cpu(device):
    if device != "cpu":
        pytest.skip("the GPU file runs this with Inductor on CUDA tensors")
    torch._dynamo.reset()
    f = torch.compile(lambda a, b: tritonblas.matmul(a, b), dynamic=True, fullgraph=True, backend="aot_eager")
    b = _rand(8, 5, device=device, grad=False)
    f(_rand(3, 8, device=device, grad=False), b)
    with torch._dynamo.config.patch(error_on_recompile=True):
        for m in (4, 7, 9, 16, 21):
            a = _rand(m, 8, device=device, grad=False)
            torch.testing.assert_close(f(a, b), a @ b, rtol=1.3e-6, atol=1e-5)


@pytest.mark.parametrize("x_shape,w_shape", [((5, 0), (6, 0)), ((5, 7), (0, 7)), ((2, 5, 7), (0, 7)),
                                             ((2, 5, 0), (6, 0))])
def test_linear_autograd_with_an_empty_k_or_n(x_shape, w_shape, device):
    """K = 0 or N = 0 under autograd (the warm path's autograd Function): the result and the gradients
    are torch's (zeros, or empty), not "cannot reshape tensor of 0 elements into shape [-1, 0]"."""
    x, w = _rand(*x_shape, device=device), _rand(*w_shape, device=device)
    b = _rand(w_shape[0], device=device)
    _compare(tritonblas.linear, F.linear, x, w, b, what=f"linear {x_shape} {w_shape}")


@pytest.mark.parametrize("a_shape,b_shape", [((2, 5, 0), (0, 6)), ((2, 5, 7), (7, 0)), ((2, 5, 7), (2, 7, 0)),
                                             ((2, 5, 0), (2, 0, 3))])
def test_matmul_autograd_with_an_empty_k_or_n(a_shape, b_shape, device):
    a, b = _rand(*a_shape, device=device), _rand(*b_shape, device=device)
    _compare(tritonblas.matmul, torch.matmul, a, b, what=f"matmul {a_shape} {b_shape}")


@pytest.mark.parametrize("case", ["linear", "matmul", "matmul_batched"])
def test_double_backward_through_the_warm_path(case, device):
    """create_graph=True through the warm path's autograd Functions: the first-order gradients carry a
    graph, so a gradient penalty reaches the weight (the raw launches of the backward used to return
    constants: d/dw of |dL/dx|² was silently dropped, no error)."""
    def fn(x, w):
        if case == "linear":
            return F.linear(x, w)
        if case == "matmul":
            return torch.matmul(x, w.t())
        return torch.matmul(x.view(2, 3, 7), w.t().expand(2, 7, 5))

    def run(route):
        torch.manual_seed(0)
        x, w = _rand(6, 7, device=device), _rand(5, 7, device=device)
        grads = []
        for _ in range(2):  # cold, then warm
            with tritonblas.enable() if route else torch.enable_grad():
                y = fn(x, w)
                gx, = torch.autograd.grad(y.pow(2).sum(), x, create_graph=True)
                assert gx.requires_grad
                gw, = torch.autograd.grad(y.sum() + gx.pow(2).sum(), w)
            grads.append((gx.detach(), gw))
        return grads

    for (gx, gw), (rx, rw) in zip(run(True), run(False)):
        torch.testing.assert_close(gx, rx, rtol=1e-5, atol=1e-4)
        torch.testing.assert_close(gw, rw, rtol=1e-5, atol=1e-3)


# --- what the autograd Functions save and return (torch's rules for addmm / mm) ----------------------
def _warm(f, n: int = 3):
    for _ in range(n):
        r = f()
    return r


def test_first_autograd_outputs_take_inplace_ops(device):
    """The cold call under autograd returns a fresh tensor, not a view of the kernel's 2-D buffer made
    inside the Function (autograd refuses in-place ops on those: nn.Linear -> ReLU(inplace=True))."""
    tritonblas.clear_caches()
    x, w = torch.randn(2, 3, 8, device=device, requires_grad=True), torch.randn(5, 8, device=device, requires_grad=True)
    a, b = torch.randn(2, 3, 8, device=device, requires_grad=True), torch.randn(8, 5, device=device, requires_grad=True)
    with tritonblas.enable():
        y = F.linear(x, w)
        y.relu_()
        z = a @ b
        z.add_(1.0)
    (y.sum() + z.sum()).backward()
    rx, ra = x.detach().clone().requires_grad_(), a.detach().clone().requires_grad_()
    (F.linear(rx, w.detach()).relu_().sum() + (ra @ b.detach()).sum()).backward()
    torch.testing.assert_close(x.grad, rx.grad, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(a.grad, ra.grad, rtol=1e-4, atol=1e-4)


def test_a_no_grad_output_takes_an_inplace_op_in_grad_mode(device):
    """A cold no-grad N-D call's result is not a view made under no_grad (autograd refuses an in-place
    op with a tensor requiring grad on such a view; torch's result is a plain tensor)."""
    tritonblas.clear_caches()
    x, w = torch.randn(2, 3, 8, device=device), torch.randn(5, 8, device=device)
    p = torch.randn(5, device=device, requires_grad=True)
    with tritonblas.enable():
        with torch.no_grad():
            y = F.linear(x, w)
        y.mul_(p)
    y.sum().backward()
    torch.testing.assert_close(p.grad, F.linear(x, w).sum((0, 1)), rtol=1e-4, atol=1e-4)


def test_only_what_backward_reads_is_saved(device):
    """As torch's addmm / mm: x is saved only for w's gradient and w only for x's. A bias-only step
    (BitFit) tolerates an in-place update of x and an inference-mode x; a frozen weight tolerates an
    in-place op on x before backward."""
    w = torch.randn(5, 8, device=device)
    b = torch.randn(5, device=device, requires_grad=True)
    x = torch.randn(3, 8, device=device)
    with torch.inference_mode():
        xi = torch.randn(3, 8, device=device)
    with tritonblas.enable():
        y = _warm(lambda: F.linear(x, w, b))
        yi = _warm(lambda: F.linear(xi, w, b))
    x.add_(1.0)
    (g,) = torch.autograd.grad(y.sum() + yi.sum(), b)
    torch.testing.assert_close(g, torch.full((5,), 6.0, device=device))
    x0 = torch.randn(3, 8, device=device, requires_grad=True)
    with tritonblas.enable():
        h = x0 * 1.0
        y = _warm(lambda: F.linear(h, w))
        z = _warm(lambda: h @ w.t())
    h.add_(1.0)
    (g,) = torch.autograd.grad(y.sum() + z.sum(), x0)
    torch.testing.assert_close(g, 2 * w.sum(0).expand(3, 8), rtol=1e-4, atol=1e-4)

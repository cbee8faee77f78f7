"""tritonblas.addmm and tritonblas.linear vs torch: alpha/beta, broadcast C and bias shapes, beta = 0
with NaN in C, K = 0 (beta·C, no launch), out=, and linear's weight read through w.t()."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import tritonblas
from tritonblas import dispatch


pytestmark = pytest.mark.usefixtures("cpu_profile")  # tests/dropin/conftest.py


def _rand(*shape, device, dtype=torch.float32):
    return torch.randn(shape, dtype=torch.float64).to(dtype).to(device)


def _close(ours, ref, what=""):
    assert ours.shape == ref.shape and ours.dtype == ref.dtype, what
    torch.testing.assert_close(ours, ref, rtol=1e-5, atol=1e-5, msg=lambda m: f"{what}: {m}")


@pytest.mark.parametrize("c_shape", [(13, 11), (11,), (1, 11), (13, 1), ()])
@pytest.mark.parametrize("alpha,beta", [(1, 1), (0.5, -2.0), (2, 0)])
def test_addmm(c_shape, alpha, beta, device):
    a, b, c = _rand(13, 9, device=device), _rand(9, 11, device=device), _rand(*c_shape, device=device)
    ours = tritonblas.addmm(c, a, b, alpha=alpha, beta=beta)
    _close(ours, torch.addmm(c, a, b, alpha=alpha, beta=beta), f"c {c_shape} alpha {alpha} beta {beta}")
    assert dispatch.stats()["launches"] == 1


def test_addmm_beta_zero_ignores_nan_in_c(device):
    a, b = _rand(13, 9, device=device), _rand(9, 11, device=device)
    c = torch.full((13, 11), float("nan"), device=device)
    c[0, 0] = float("inf")
    ours = tritonblas.addmm(c, a, b, beta=0)
    assert torch.isfinite(ours).all()
    _close(ours, a @ b, "beta=0")


def test_addmm_k_zero_is_beta_c(device):
    a, b, c = _rand(6, 0, device=device), _rand(0, 5, device=device), _rand(5, device=device)
    _close(tritonblas.addmm(c, a, b, beta=0.5), torch.addmm(c, a, b, beta=0.5), "K=0 beta=0.5")
    z = tritonblas.addmm(torch.full((6, 5), float("nan"), device=device), a, b, beta=0)
    assert (z == 0).all()
    assert dispatch.stats()["launches"] == 0


def test_addmm_out(device):
    a, b, c = _rand(7, 5, device=device), _rand(5, 6, device=device), _rand(7, 6, device=device)
    ref = torch.addmm(c, a, b, alpha=2, beta=3)
    out = torch.full((7, 6), float("nan"), device=device)
    tritonblas.addmm(c, a, b, alpha=2, beta=3, out=out)
    _close(out, ref, "out=")
    tritonblas.addmm(c, a, b, alpha=2, beta=3, out=c)  # out aliases C, as torch allows
    _close(c, ref, "out=c")


@pytest.mark.parametrize("x_shape", [(9, 12), (12,), (2, 5, 12)])
@pytest.mark.parametrize("bias_shape", [None, (7,), (1, 7), ()])
def test_linear(x_shape, bias_shape, device):
    x, w = _rand(*x_shape, device=device), _rand(7, 12, device=device)
    bias = None if bias_shape is None else _rand(*bias_shape, device=device)
    _close(tritonblas.linear(x, w, bias), F.linear(x, w, bias), f"x {x_shape} bias {bias_shape}")
    assert dispatch.stats()["launches"] == 1  # the bias is fused into the epilogue


def test_linear_reads_weight_transposed(device):
    x, w = _rand(9, 12, device=device), _rand(7, 12, device=device)
    lp = dispatch.plan_for(x, w.t())
    assert lp.problem.b_layout.value == "T"
    _close(tritonblas.linear(x, w), F.linear(x, w), "layout T")


def test_linear_odd_inputs(device):
    x = _rand(4, 3, 12, device=device).transpose(0, 1)  # batch dims not mergeable
    w, bias = _rand(7, 12, device=device), _rand(3, 1, 7, device=device)  # bias broadcast over batch
    _close(tritonblas.linear(x, w, bias), F.linear(x, w, bias), "non-contiguous x, 3-D bias")
    v = _rand(12, device=device)
    _close(tritonblas.linear(x, v), F.linear(x, v), "1-D weight")


def test_linear_fp16(device):
    x, w, bias = (_rand(9, 16, device=device, dtype=torch.float16), _rand(8, 16, device=device, dtype=torch.float16),
                  _rand(8, device=device, dtype=torch.float16))
    ours = tritonblas.linear(x, w, bias)
    ref = (x.double() @ w.double().t() + bias.double()).half()
    torch.testing.assert_close(ours, ref, rtol=2e-3, atol=2e-3)

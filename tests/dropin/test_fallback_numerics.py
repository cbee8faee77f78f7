"""Calls that torch runs for us (``dispatch.torch_gemm``: dtypes without a kernel, CPU tensors
without the interpreter, plans with no kernel) must give torch's own result, bit for bit: alpha
goes into torch's addmm/baddbmm (beta = 0 when there is no C), never a second rounding after it."""

from __future__ import annotations

import pytest
import torch

import tritonblas
from tritonblas import dispatch


@pytest.fixture
def forced_fallback(monkeypatch):
    """Every call takes the fallback, as CPU tensors do without TRITON_INTERPRET."""
    monkeypatch.setattr(dispatch, "fallback_reason", lambda *t: "forced by the test")
    dispatch.clear_caches()
    yield
    dispatch.clear_caches()


def test_fp16_alpha_scales_before_rounding(forced_fallback):
    a = torch.full((4, 64), 200.0, dtype=torch.float16)
    b = torch.full((64, 4), 100.0, dtype=torch.float16)  # a @ b = 1.28e6 > 65504
    c = torch.randn(4, 4).half()
    want = torch.addmm(c, a, b, beta=0, alpha=1e-3)
    assert torch.isfinite(want).all()
    assert torch.equal(tritonblas.addmm(c, a, b, beta=0, alpha=1e-3), want)
    a3, b3, c3 = a.expand(2, 4, 64), b.expand(2, 64, 4), c.expand(2, 4, 4)
    assert torch.equal(tritonblas.baddbmm(c3, a3, b3, beta=0, alpha=1e-3), torch.baddbmm(c3, a3, b3, beta=0, alpha=1e-3))


def test_float64_matches_torch_bitwise():
    """float64 has no kernel: the fallback runs it through the public ops, no monkeypatch."""
    g = torch.Generator().manual_seed(5)
    a = torch.randn(8, 16, generator=g, dtype=torch.float64)
    b = torch.randn(16, 8, generator=g, dtype=torch.float64)
    c = torch.randn(8, 8, generator=g, dtype=torch.float64)
    for alpha in (0.1, -3.7, 1 / 3):
        assert torch.equal(tritonblas.addmm(c, a, b, beta=0, alpha=alpha), torch.addmm(c, a, b, beta=0, alpha=alpha))
    a3, b3, c3 = a.expand(3, 8, 16), b.expand(3, 16, 8), c.expand(3, 8, 8)
    assert torch.equal(tritonblas.baddbmm(c3, a3, b3, beta=0, alpha=0.1), torch.baddbmm(c3, a3, b3, beta=0, alpha=0.1))



@pytest.mark.usefixtures("cpu_profile")
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("op", ["matmul", "addmm", "bmm", "baddbmm"])
def test_out_bumps_the_version_counter_once_as_torch_does(op, dtype, device):
    # out= written by our kernel (fp32: on the GPU, or under the interpreter) or by torch for us (fp64, a
    # fallback): one in-place write each, as torch's own op counts it
    g = torch.Generator().manual_seed(7)
    lead = (2,) if op in ("bmm", "baddbmm") else ()
    a, b, c = (torch.randn(*lead, 8, 8, generator=g, dtype=dtype).to(device) for _ in range(3))
    args = (a, b) if op in ("matmul", "bmm") else (c, a, b)
    bumps = []
    for fn in (getattr(torch, op), getattr(tritonblas, op)):
        out = torch.empty_like(c)
        v = out._version
        fn(*args, out=out)
        bumps.append(out._version - v)
    assert bumps == [1, 1], bumps

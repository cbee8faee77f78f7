"""torch.compile meets tritonblas on CPU (the interpreter runs the kernels inside the compiled
graph): routed calls under ``enable()`` with ``fullgraph=True``, compared with float64 torch."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import tritonblas
from tritonblas import dispatch

pytestmark = pytest.mark.usefixtures("cpu_profile")  # tests/dropin/conftest.py


@pytest.fixture(autouse=True)
def _reset():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


@pytest.mark.timeout(300)
@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_routed_calls_compile_with_fullgraph(backend, device):
    """``with tritonblas.enable(): torch.compile(f, fullgraph=True)(x)`` on an ``nn.Linear`` and a
    ``torch.matmul``: the routes' checks used to call ``Tensor.is_neg()`` / ``_is_zerotensor()``
    while dynamo traced them, which it cannot ("torch.* op returned non-Tensor": an error under
    fullgraph=True, a graph break per GEMM otherwise)."""
    lin = torch.nn.Linear(6, 8).to(device)
    y = torch.randn(8, 3, device=device)

    def f(x):
        return torch.matmul(lin(x).relu(), y)

    x = torch.randn(2, 5, 6, device=device)
    with torch.no_grad():
        want = torch.matmul(F.linear(x.double(), lin.weight.double(), lin.bias.double()).relu(), y.double())
    dispatch.reset_stats()
    with torch.no_grad(), tritonblas.enable():
        got = torch.compile(f, fullgraph=True, backend=backend)(x)
    assert dispatch.stats()["launches"] == 2
    torch.testing.assert_close(got.double(), want, rtol=1e-5, atol=1e-5)

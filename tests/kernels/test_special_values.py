"""Special values through the epilogue and the kernels (RELIABILITY.md §4.2 "Special values"):
activations at magnitudes where their fp32 evaluation can overflow, against the float64 reference
(torch's tanh-GELU), NaN/Inf pattern and sign exactly. (§4.2's bound scales with |pre-activation|,
so it cannot see −5414 for GELU(−3e38) = −0: this test uses an absolute tolerance.)"""

from __future__ import annotations

import pytest
import torch

from _check import config, run_gemm

INF = float("inf")
# pre-activation values: x³ overflows fp32 for |x| > 7e12; -inf must give NaN (torch: -inf·0)
LARGE = [-3e38, -1e38, -1e30, -1e13, -1e4, -10.0, -5.0, -1.0, 0.0, 1.0, 10.0, 1e4, 1e30, 3e38, -INF, INF,
         float("nan")]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", ["dp", "splitk"])
def test_gelu_large_magnitudes_match_torch(kind, device, h200):
    """The pre-activation comes from the bias (A·B = 0): torch's tanh-GELU of fp32 −3e38 is −0 and
    of −inf NaN; the old clamped sigmoid returned −5414 and −inf."""
    n = len(LARGE)
    a = torch.zeros(4, 32, device=device)
    b = torch.zeros(32, n, device=device)
    bias = torch.tensor(LARGE, device=device)
    kw = dict(split_k=2) if kind == "splitk" else {}
    out, _ = run_gemm(config(kind, 16, 16, 16, **kw), a, b, h200, bias=bias, activation="gelu")
    want = torch.nn.functional.gelu(bias.cpu().double(), approximate="tanh").expand(4, n)
    got = out.cpu().double()
    assert torch.equal(torch.isnan(got), torch.isnan(want)), (got[0].tolist(), want[0].tolist())
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-30, equal_nan=True)
    finite = torch.isfinite(want)
    assert torch.equal(torch.signbit(got[finite]), torch.signbit(want[finite]))

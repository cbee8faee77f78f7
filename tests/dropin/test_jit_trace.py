"""``torch.jit.trace`` inside an ``enable()`` block records torch's graph: every routed form (``nn.Linear``,
``F.linear``, ``@``, ``mm``, ``addmm``, ``bmm``) gives torch's traced result, or torch's error where torch refuses
the trace (a captured tensor that requires grad). Before session 41 that refusal crashed the process (a segmentation
fault: the routing wrapper's front read sizes under the tracer and swallowed its error), and a routed ``nn.Linear``
failed the tracer's check (the first and second invocation took different paths). CPU (interpreter) and GPU."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import tritonblas
from tritonblas import settings

pytestmark = pytest.mark.usefixtures("cpu_profile")  # tests/dropin/conftest.py

BF = torch.bfloat16


def _forms(device, grad: bool):
    torch.manual_seed(0)
    lin = torch.nn.Linear(16, 24, dtype=BF, device=device).requires_grad_(grad)
    w = torch.randn(16, 24, dtype=BF, device=device, requires_grad=grad)
    return {"nn.Linear": lin,
            "F.linear": lambda a: F.linear(a, lin.weight, lin.bias),
            "@": lambda a: a @ w,
            "mm": lambda a: torch.mm(a, w),
            "addmm": lambda a: torch.addmm(lin.bias, a, w),
            "bmm": lambda a: torch.bmm(a[None], w[None])}


def _traced(fn, x):
    try:
        t = torch.jit.trace(fn, x)
        return "ok", t(x)
    except Exception as e:  # noqa: BLE001 - torch's error, whatever it is
        return "error", type(e)


@pytest.mark.parametrize("grad", [False, True], ids=["plain", "captured_requires_grad"])
@pytest.mark.parametrize("value", ["1", "0"], ids=["handed", "ours"])
@pytest.mark.parametrize("form", ["nn.Linear", "F.linear", "@", "mm", "addmm", "bmm"])
def test_a_trace_inside_a_block_is_torchs(device, monkeypatch, form, value, grad):
    monkeypatch.setenv(settings.ENV_VENDOR_ALIGNED, value)
    x = torch.randn(24, 16, dtype=BF, device=device)
    want = _traced(_forms(device, grad)[form], x)
    with tritonblas.enable():
        got = _traced(_forms(device, grad)[form], x)
    assert got[0] == want[0], (got, want)
    if want[0] == "ok":
        assert torch.equal(got[1], want[1])
    else:
        assert got[1] is want[1]

"""``torch.jit.trace`` inside an ``enable()`` block records torch's graph: every routed form (``nn.Linear``,
``F.linear``, ``@``, ``mm``, ``addmm``, ``bmm``) gives torch's traced result, or torch's error where torch refuses
the trace (a captured tensor that requires grad). Before session 41 that refusal crashed the process (a segmentation
fault: the routing wrapper's front read sizes under the tracer and swallowed its error), and a routed ``nn.Linear``
failed the tracer's check (the first and second invocation took different paths). CPU (interpreter) and GPU."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

import tritonblas
from tritonblas import settings

pytestmark = pytest.mark.usefixtures("cpu_profile")  # tests/dropin/conftest.py

BF = torch.bfloat16


def _forms(device, grad: bool) -> dict:
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


FORMS = ["nn.Linear", "F.linear", "@", "mm", "addmm", "bmm"]


@pytest.mark.parametrize("value", ["1", "0"], ids=["handed", "ours"])
@pytest.mark.parametrize("form", FORMS)
def test_a_trace_inside_a_block_is_torchs(device, monkeypatch, form, value):
    monkeypatch.setenv(settings.ENV_VENDOR_ALIGNED, value)
    x = torch.randn(24, 16, dtype=BF, device=device)
    want = _traced(_forms(device, False)[form], x)
    with tritonblas.enable():
        got = _traced(_forms(device, False)[form], x)
    assert got[0] == want[0] == "ok", (got, want)
    assert torch.equal(got[1], want[1])


_REFUSED = """
import json, sys
import torch
sys.path.insert(0, {here!r})
import tritonblas
from tritonblas import settings
import os
from test_jit_trace import BF, FORMS, _forms, _traced
out = {{}}
for value in ("1", "0"):
    os.environ[settings.ENV_VENDOR_ALIGNED] = value
    for form in FORMS:
        x = torch.randn(24, 16, dtype=BF, device={device!r})
        want = _traced(_forms({device!r}, True)[form], x)
        with tritonblas.enable():
            got = _traced(_forms({device!r}, True)[form], x)
        out[value + " " + form] = [want[0], got[0], str(want[1]) if want[0] == "error" else "",
                                   str(got[1]) if got[0] == "error" else "",
                                   want[0] == got[0] == "ok" and torch.equal(want[1], got[1])]
print("OUT " + json.dumps(out))
"""


def test_a_trace_torch_refuses_is_torchs_error_not_a_crash(device):
    """A captured tensor that requires grad: torch refuses the trace. In a child process, since the defect was a
    crash (signal 11), which would take the test runner with it."""
    script = _REFUSED.format(here=str(Path(__file__).parent), device=device)
    p = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, f"the child exited {p.returncode} (negative: killed by that signal)\n{p.stderr[-2000:]}"
    out = json.loads(next(line for line in p.stdout.splitlines() if line.startswith("OUT "))[4:])
    assert len(out) == 2 * len(FORMS)
    for case, (want, got, want_err, got_err, equal) in out.items():
        assert want == got, (case, want, got, want_err, got_err)
        assert (want_err == got_err) if want == "error" else equal, (case, want_err, got_err)
    assert any(w == "error" for w, *_ in out.values())  # (torch does refuse some: the case this test is for)

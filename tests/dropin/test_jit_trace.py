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


# --- torch.jit.script inside a block: the routed functions compile as torch's ops (the script is torch's) ------------
def _s_linear(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return F.linear(x, w, b)


def _s_matmul(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.matmul(x, w.t())


def _s_mm(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.mm(x, w.t())


def _s_addmm(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.addmm(b, x, w.t(), beta=0.5, alpha=2.0)


def _s_bmm(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.bmm(x[None], w.t()[None])


def _s_baddbmm(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.baddbmm(b, x[None], w.t()[None])


def _s_addbmm(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.addbmm(b, x[None], w.t()[None])


def _s_mv(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.mv(w, x[0])


def _s_addmv(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.addmv(b, w, x[0])


_SCRIPTED = [_s_linear, _s_matmul, _s_mm, _s_addmm, _s_bmm, _s_baddbmm, _s_addbmm, _s_mv, _s_addmv]


@pytest.mark.parametrize("fn", _SCRIPTED, ids=lambda f: f.__name__[3:])
def test_a_function_scripted_inside_a_block_is_torchs(device, fn):
    """``torch.jit.script`` inside a block compiles a routed function (``torch.matmul``, ``F.linear``, ...) as
    torch's aten op, as it does outside. It raised before (the compiler found the routing wrapper, no builtin, and
    tried to compile it: "module, class, method, function ... expected, got builtin_function_or_method")."""
    torch.manual_seed(0)
    x, w, b = (torch.randn(2, 16, device=device), torch.randn(24, 16, device=device),
               torch.randn(24, device=device))
    with tritonblas.enable():
        scripted = torch.jit.script(fn)  # (first scripted here: torch caches a function's script)
        got = scripted(x, w, b)
    assert torch.equal(got, fn(x, w, b))
    assert torch.equal(scripted(x, w, b), got)  # and it runs after the block


_SCRIPT_MODULE = """
import json, sys
import torch
import tritonblas
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(16, 24), torch.nn.ReLU(), torch.nn.Linear(24, 8)).to({device!r})
x = torch.randn(4, 16, device={device!r})
want = model(x).detach()  # torch's
out = {{}}
try:
    with tritonblas.enable():
        scripted = torch.jit.script(model)  # the first script of nn.Linear in this process
        out["inside"] = torch.equal(scripted(x), want) or "differs"
except Exception as e:
    out["inside"] = type(e).__name__ + ": " + str(e)[:300]
try:
    out["after"] = torch.equal(torch.jit.script(model)(x), want) or "differs"  # the block left
except Exception as e:
    out["after"] = type(e).__name__ + ": " + str(e)[:300]
print("OUT " + json.dumps(out))
"""


def test_a_module_scripted_inside_a_block_is_torchs(device):
    """``torch.jit.script`` of a model with ``nn.Linear`` inside a block compiles torch's forward (the one the
    block's forward wraps), as outside. It raised before ("undefined value F": the compiler read torch's source but
    resolved its names in :mod:`tritonblas.handover`), and the failed compile left nn.Linear's script type half
    defined, so every later ``torch.jit.script`` of an nn.Linear in the process raised too ("Can't redefine method:
    forward"). In a child process: the first script of nn.Linear in a process is the one under test."""
    script = _SCRIPT_MODULE.format(device=device)
    p = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    out = json.loads(next(line for line in p.stdout.splitlines() if line.startswith("OUT "))[4:])
    assert out == {"inside": True, "after": True}, out

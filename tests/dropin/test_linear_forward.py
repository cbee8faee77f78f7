"""``nn.Linear.forward`` under ``enable()`` (tritonblas.handover.linear_forward, installed by tritonblas.routing):
installed while a block is open and restored after; the vendor rule's verdict it keeps per weight follows the
variable, the weight's dtype and the default within one block; the weight and bias it reads are what torch's
forward reads (parametrized, pruned, ``functional_call``, a subclass with its own ``__getattr__``); a thread without
a block gets torch's forward. CPU (interpreter) and GPU; counted, never timed (the cost is ``benchmarks/host_linear.py
--module-toll``'s)."""

from __future__ import annotations

import gc
import sys
import threading
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

import tritonblas
from tritonblas import dispatch, fastpath, handover, settings

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/_check.py
from _check import assert_gemm_close, reference  # noqa: E402  (the one comparator, RELIABILITY §4.2)

pytestmark = pytest.mark.usefixtures("cpu_profile")  # tests/dropin/conftest.py

BF = torch.bfloat16


def _linear(device, n=24, k=16, dtype=BF, bias=True, seed=0):
    torch.manual_seed(seed)
    return torch.nn.Linear(k, n, bias=bias, device=device, dtype=dtype)


def _x(device, m=24, k=16, dtype=BF, seed=1):
    return torch.randn(m, k, generator=torch.Generator().manual_seed(seed)).to(device=device, dtype=dtype)


def _counted(fn):
    dispatch.reset_stats()
    out = fn()
    return out, dispatch.stats()


def _close(out, x, lin):
    ref, mag, _ = reference(x, lin.weight.detach().t(), bias=None if lin.bias is None else lin.bias.detach())
    assert_gemm_close(out, ref, mag, k=x.shape[-1], what="nn.Linear")


def test_the_forward_is_installed_in_a_block_and_restored_after(device):
    torch_forward, torch_linear = torch.nn.Linear.forward, F.linear
    with tritonblas.enable():
        ours = torch.nn.Linear.forward
        assert ours is not torch_forward and ours.__wrapped__ is torch_forward
        with tritonblas.enable():  # nested: the same forward
            assert torch.nn.Linear.forward is ours
    assert torch.nn.Linear.forward is torch_forward and F.linear is torch_linear
    with tritonblas.enable():  # the same object every time (dynamo guards on it)
        assert torch.nn.Linear.forward is ours
    assert torch.nn.Linear.forward is torch_forward


def test_a_forward_someone_else_installed_is_left_alone(device, monkeypatch):
    """A library that patched ``nn.Linear.forward`` before the block: its forward runs inside the block too."""
    monkeypatch.setenv(settings.ENV_VENDOR_ALIGNED, "1")

    def theirs(self, input):
        return F.linear(input, self.weight, self.bias) + 1

    monkeypatch.setattr(torch.nn.Linear, "forward", theirs)
    lin, x = _linear(device), _x(device)
    with torch.no_grad():
        want = lin(x)
        with tritonblas.enable():
            assert torch.nn.Linear.forward is theirs
            out, st = _counted(lambda: lin(x))
        assert st["intercepted"] == 1 and st["routed"] == 0, st  # its F.linear call, handed over by the wrapper
    assert torch.equal(out, want)


def test_the_switch_leaves_the_forward_alone_and_a_bad_value_is_its_error(device, monkeypatch):
    torch_forward, torch_linear, torch_mm = torch.nn.Linear.forward, F.linear, torch.mm
    monkeypatch.setenv(settings.ENV_LINEAR_FORWARD, "0")
    lin, x = _linear(device), _x(device)
    monkeypatch.setenv(settings.ENV_VENDOR_ALIGNED, "1")
    with torch.no_grad(), tritonblas.enable():
        assert torch.nn.Linear.forward is torch_forward
        out, st = _counted(lambda: lin(x))  # F.linear's wrapper hands it over
        assert st["intercepted"] == 1 and st["routed"] == 0, st
    assert torch.equal(out, F.linear(x, lin.weight, lin.bias))
    monkeypatch.setenv(settings.ENV_LINEAR_FORWARD, "yes")
    with pytest.raises(ValueError, match=settings.ENV_LINEAR_FORWARD):
        with tritonblas.enable():
            pass
    assert torch.nn.Linear.forward is torch_forward and F.linear is torch_linear and torch.mm is torch_mm
    assert not tritonblas.routing.active()


def test_the_kept_verdict_follows_the_variable_the_dtype_and_the_default(device, monkeypatch):
    lin, x = _linear(device), _x(device)
    with torch.no_grad(), tritonblas.enable():
        monkeypatch.setenv(settings.ENV_VENDOR_ALIGNED, "1")
        out, st = _counted(lambda: lin(x))
        assert st["intercepted"] == 1 and st["routed"] == 0, st  # handed over: torch's result, bit for bit
        assert torch.equal(out, F.linear(x, lin.weight, lin.bias))
        monkeypatch.setenv(settings.ENV_VENDOR_ALIGNED, "0")  # the same weight, the variable changed in the block
        out, st = _counted(lambda: lin(x))
        assert st["routed"] == 1, st
        _close(out, x, lin)
        monkeypatch.setenv(settings.ENV_VENDOR_ALIGNED, "1")
        _, st = _counted(lambda: lin(x))
        assert st["routed"] == 0 and st["intercepted"] == 1, st
        lin.weight.data = lin.weight.data.float()  # the same Parameter, now fp32: the rule keeps it ours
        lin.bias.data = lin.bias.data.float()
        xf = x.float()
        out, st = _counted(lambda: lin(xf))
        assert st["routed"] == 1, st
        _close(out, xf, lin)
        lin.weight.data, lin.bias.data = lin.weight.data.to(BF), lin.bias.data.to(BF)
        _, st = _counted(lambda: lin(x))
        assert st["routed"] == 0 and st["intercepted"] == 1, st
        monkeypatch.delenv(settings.ENV_VENDOR_ALIGNED)
        _, st = _counted(lambda: lin(x))
        assert st["routed"] == int(device == "cpu"), st  # unset: on for an NVIDIA GPU's tensors only


def test_under_autograd_the_call_reads_m(device, monkeypatch):
    """The kept verdict holds for calls autograd does not record; a recorded one asks the rule with its M."""
    monkeypatch.setenv(settings.ENV_VENDOR_ALIGNED, "1")
    lin = _linear(device)
    with tritonblas.enable():
        with torch.no_grad():
            _, st = _counted(lambda: lin(_x(device, m=20)))
        assert st["routed"] == 0 and st["intercepted"] == 1, st
        x = _x(device, m=20).requires_grad_(True)
        out, st = _counted(lambda: lin(x))
        assert st["routed"] == 1, st  # M = 20 under autograd: ours
        _close(out, x.detach(), lin)
        x = _x(device, m=24).requires_grad_(True)
        out, st = _counted(lambda: lin(x))
        assert st["routed"] == 0 and st["intercepted"] == 1, st
    want = F.linear(x, lin.weight, lin.bias)
    assert torch.equal(out, want) and type(out.grad_fn).__name__ == type(want.grad_fn).__name__


class _Twice(torch.nn.Module):
    def forward(self, w):
        return w * 2


class _Redirected(torch.nn.Linear):
    """A subclass whose ``weight`` is another parameter once it has one (its own ``__getattr__``; parametrized
    modules cover a class property)."""

    def __getattr__(self, name):
        if name == "weight" and "other" in self._parameters:
            name = "other"
        return super().__getattr__(name)


def _variant(label: str, device):
    """(call, its weight, its bias) of a module whose weight is not simply ``_parameters['weight']``, or is
    swapped for the call: what torch's forward multiplies by."""
    from torch.nn.utils import parametrize, prune

    if label == "functional_call":
        mod = _linear(device, seed=4)
        params = {"weight": torch.randn(24, 16, dtype=BF, device=device),
                  "bias": torch.randn(24, dtype=BF, device=device)}
        return (lambda x: torch.func.functional_call(mod, params, (x,))), params["weight"], params["bias"]
    if label == "parametrized":
        mod = _linear(device, seed=2)
        parametrize.register_parametrization(mod, "weight", _Twice())
    elif label == "pruned":
        mod = _linear(device, seed=3)
        prune.l1_unstructured(mod, "weight", amount=0.5)
    elif label == "__getattr__":
        mod = _Redirected(16, 24, device=device, dtype=BF)
        mod.other = torch.nn.Parameter(torch.randn(24, 16, dtype=BF, device=device))
    else:  # no bias
        mod = _linear(device, seed=5, bias=False)
    return mod, mod.weight.detach(), None if mod.bias is None else mod.bias.detach()


@pytest.mark.parametrize("value", ["1", "0"], ids=["handed", "ours"])
@pytest.mark.parametrize("label", ["parametrized", "pruned", "functional_call", "__getattr__", "no bias"])
def test_the_weight_is_what_torchs_forward_reads(device, monkeypatch, label, value):
    monkeypatch.setenv(settings.ENV_VENDOR_ALIGNED, value)
    call, w, b = _variant(label, device)
    x = _x(device)
    with torch.no_grad():
        want = call(x)  # torch's forward
        with tritonblas.enable():
            for _ in range(2):  # the first call keeps the verdict, the second reads it
                out, st = _counted(lambda: call(x))
                assert st["intercepted"] == 1 and st["routed"] == int(value == "0"), st
    if value == "1":
        assert torch.equal(out, want)
    else:
        ref, mag, _ = reference(x, w.t(), bias=b)
        assert_gemm_close(out, ref, mag, k=x.shape[-1], what=label)


def test_a_thread_without_a_block_gets_torchs_forward(device, monkeypatch):
    monkeypatch.setenv(settings.ENV_VENDOR_ALIGNED, "0")  # a block in this thread would route the call
    lin, x = _linear(device), _x(device)
    with torch.no_grad():
        want = F.linear(x, lin.weight, lin.bias)
        got = {}
        with tritonblas.enable():
            assert torch.nn.Linear.forward is not torch.nn.Linear.forward.__wrapped__
            dispatch.reset_stats()
            t = threading.Thread(target=lambda: got.update(out=lin(x)))
            t.start()
            t.join()
            st = dispatch.stats()
    assert st["routed"] == st["intercepted"] == 0, st
    assert torch.equal(got["out"], want)


def test_a_kept_verdict_goes_with_its_weight(device, monkeypatch):
    monkeypatch.setenv(settings.ENV_VENDOR_ALIGNED, "1")
    fastpath.clear()
    lin = _linear(device)
    key = id(lin.weight)
    with torch.no_grad(), tritonblas.enable():
        lin(_x(device))
    assert key in handover._VERDICTS
    del lin
    gc.collect()
    assert key not in handover._VERDICTS


def test_a_bad_value_of_the_variable_is_its_error(device, monkeypatch):
    lin, x = _linear(device), _x(device)
    with torch.no_grad(), tritonblas.enable():
        monkeypatch.setenv(settings.ENV_VENDOR_ALIGNED, "1")
        lin(x)
        monkeypatch.setenv(settings.ENV_VENDOR_ALIGNED, "sometimes")
        with pytest.raises(ValueError, match=settings.ENV_VENDOR_ALIGNED):
            lin(x)


@pytest.mark.parametrize("value", ["1", "0"], ids=["handed", "ours"])
def test_odd_weights_get_torchs_result_or_torchs_error(device, monkeypatch, value):
    """A weight that is no tensor, or of the wrong width: the call's outcome is torch's forward's (and
    ``F.linear(x, None)``'s is torch's TypeError: it was an AttributeError from the memory of unroutable
    signatures)."""
    monkeypatch.setenv(settings.ENV_VENDOR_ALIGNED, value)
    x = _x(device)
    cases = []
    lin = _linear(device)
    lin.weight = torch.nn.Parameter(torch.randn(24, 12, dtype=BF, device=device))  # K differs from x's
    cases.append(lin)
    lin = _linear(device)
    del lin.weight
    lin.weight = None  # (a plain attribute now)
    cases.append(lin)
    cases += [lambda x: F.linear(x, None), lambda x: F.linear(x, None, torch.zeros(24, dtype=BF, device=device))]
    for mod in cases:
        with torch.no_grad():
            try:
                want = (torch.nn.Linear.forward(mod, x) if isinstance(mod, torch.nn.Module) else mod(x))
            except Exception as e:  # noqa: BLE001 - torch's error, whatever it is
                want = e
            with tritonblas.enable():
                try:
                    got = mod(x)
                except Exception as e:  # noqa: BLE001
                    got = e
        if isinstance(want, Exception):
            assert type(got) is type(want), (got, want)
        else:
            assert torch.equal(got, want)

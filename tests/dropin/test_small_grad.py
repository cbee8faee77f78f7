"""``TRITONBLAS_GRAD_MIN_GFLOP`` (tritonblas.fastpath.small_grad, default 20): under enable(), an eager GEMM that
autograd records, of fewer FLOP than the threshold and with M, N, K all multiples of 16 bytes' elements, runs
torch's op, forward and backward; no_grad calls, unaligned sizes, larger GEMMs and ``0`` keep ours; a bad value
is an error naming the variable. CPU (interpreter), counted, never timed. (tests/conftest.py sets the variable
to 0 for every other test; here each test sets or unsets it.)"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

import tritonblas
from tritonblas import dispatch, settings

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/_check.py, tests/_rule_calls.py
from _check import assert_gemm_close  # noqa: E402  (the one comparator, RELIABILITY §4.2)
from _rule_calls import CALLS, IDS, counted, flop, fresh, operands  # noqa: E402

pytestmark = pytest.mark.usefixtures("cpu_profile")  # tests/dropin/conftest.py


ALIGNED = operands(24, 8, 16)  # fp32: 16 bytes are 4 elements; 24, 8 and 16 are multiples
UNALIGNED = operands(24, 8, 15)  # K = 15


def _grads(out):
    """Backward of a fixed projection of ``out``: the leaves' gradients, in call order."""
    leaves = []

    def walk(fn):
        for nxt, _ in (fn.next_functions if fn is not None else ()):
            if nxt is None:
                continue
            if hasattr(nxt, "variable"):
                leaves.append(nxt.variable)
            else:
                walk(nxt)

    walk(out.grad_fn)
    weight = torch.linspace(-1, 1, out.numel(), dtype=out.dtype, device=out.device).reshape(out.shape)
    (out * weight).sum().backward()
    return [leaf.grad for leaf in leaves]


@pytest.mark.parametrize("name,call,batch,ref", CALLS, ids=IDS)
def test_by_default_a_small_aligned_gemm_under_autograd_runs_torch(device, monkeypatch, name, call, batch, ref):
    monkeypatch.delenv(settings.ENV_GRAD_MIN_GFLOP, raising=False)
    assert flop(ALIGNED, batch) < settings.GRAD_MIN_GFLOP * 1e9
    want = call(ALIGNED, device, True)  # torch alone
    want_grads = _grads(want)
    with tritonblas.enable():
        out, st = counted(call, ALIGNED, device, True)
        assert st["routed"] == st["launches"] == 0 and st["intercepted"] == 1, st
        got_grads = _grads(out)
        assert dispatch.stats()["launches"] == 0  # the backward is torch's too
    assert torch.equal(out, want) and out.grad_fn is not None
    assert len(got_grads) == len(want_grads) > 0
    assert all(torch.equal(g, w) for g, w in zip(got_grads, want_grads))


@pytest.mark.parametrize("name,call,batch,ref", CALLS, ids=IDS)
def test_no_grad_unaligned_and_zero_keep_ours(device, monkeypatch, name, call, batch, ref):
    monkeypatch.delenv(settings.ENV_GRAD_MIN_GFLOP, raising=False)
    with tritonblas.enable():
        for ops, grad, value in ((ALIGNED, False, None), (UNALIGNED, True, None), (ALIGNED, True, "0")):
            if value is not None:
                monkeypatch.setenv(settings.ENV_GRAD_MIN_GFLOP, value)
            out, st = counted(call, ops, device, grad)
            assert st["routed"] == 1 and st["launches"] >= 1, (grad, value, st)
            ref64, mag, _ = ref(ops)
            assert_gemm_close(out, ref64, mag, k=ops["x"].shape[1], what=f"{name} grad={grad} {value} (ours)")
            assert (out.grad_fn is not None) == grad


@pytest.mark.parametrize("name,call,batch,ref", CALLS, ids=IDS)
def test_the_threshold_is_strict(device, monkeypatch, name, call, batch, ref):
    """Just over the call's FLOP: torch; at it: ours (warm, after a cold call)."""
    f = flop(ALIGNED, batch)
    with tritonblas.enable():
        monkeypatch.setenv(settings.ENV_GRAD_MIN_GFLOP, repr(f / 1e9))
        call(ALIGNED, device, True), call(ALIGNED, device, True)
        out, st = counted(call, ALIGNED, device, True)
        assert st["routed"] == 1 and st["launches"] >= 1, st
        monkeypatch.setenv(settings.ENV_GRAD_MIN_GFLOP, repr((f + 1) / 1e9))
        out, st = counted(call, ALIGNED, device, True)
        assert st["routed"] == st["launches"] == 0 and st["intercepted"] == 1, st


@pytest.mark.parametrize("value", ["abc", "-1", "nan", "inf", "1e400"])
def test_a_bad_value_is_an_error_naming_the_variable(device, monkeypatch, value):
    monkeypatch.setenv(settings.ENV_GRAD_MIN_GFLOP, value)
    with tritonblas.enable(), pytest.raises(ValueError, match=settings.ENV_GRAD_MIN_GFLOP):
        F.linear(fresh(ALIGNED, "x", device, True), fresh(ALIGNED, "w", device))


def test_the_default_and_the_reader(monkeypatch):
    assert settings.ENV_GRAD_MIN_GFLOP in settings.ALL
    monkeypatch.delenv(settings.ENV_GRAD_MIN_GFLOP, raising=False)
    assert settings.grad_min_gflop() == settings.GRAD_MIN_GFLOP == 20.0
    for text, want in (("", 20.0), (" 5 ", 5.0), ("0", 0.0)):
        monkeypatch.setenv(settings.ENV_GRAD_MIN_GFLOP, text)
        assert settings.grad_min_gflop() == want


def test_under_autocast_alignment_is_that_of_the_2_byte_type(device, monkeypatch):
    """fp32 operands under autocast run a 2-byte GEMM: 16 bytes are 8 elements there, so K = 12 (4 fp32 elements
    would do) is unaligned and stays ours, K = 16 goes to torch."""
    monkeypatch.delenv(settings.ENV_GRAD_MIN_GFLOP, raising=False)
    with tritonblas.enable(), torch.autocast(device_type=device, dtype=torch.bfloat16):
        for k, routed in ((12, 1), (16, 0)):
            ops = operands(24, 8, k)
            x, w = fresh(ops, "x", device, True), fresh(ops, "w", device, True)
            dispatch.reset_stats()
            out = F.linear(x, w)
            st = dispatch.stats()
            assert st["routed"] == routed and st["intercepted"] == 1, (k, st)
            assert out.dtype == torch.bfloat16 and out.grad_fn is not None

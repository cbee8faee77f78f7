"""``TRITONBLAS_EAGER_MIN_GFLOP`` (an experiment, tritonblas.fastpath.small_eager): under enable(), a warm-path
GEMM under the threshold runs torch's op, in no_grad and under autograd; one over it runs ours; unset, nothing
changes; a bad value is an error naming the variable. CPU (interpreter), counted, never timed; on a GPU also
a CUDA graph capture, which keeps our kernel."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

import tritonblas
from tritonblas import dispatch, settings

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/_check.py, tests/_rule_calls.py
from _check import assert_gemm_close, reference  # noqa: E402  (the one comparator, RELIABILITY §4.2)
from _rule_calls import CALLS, flop, fresh, operands  # noqa: E402

pytestmark = pytest.mark.usefixtures("cpu_profile")  # tests/dropin/conftest.py

BASE = operands(24, 8, 16)  # K = 16 for every call


# every op under no_grad and under autograd, but bmm under autograd: it has no warm path (the route serves it)
CASES = [pytest.param(name, call, flop(BASE, batches), ref, grad, id=f"{name}-{'grad' if grad else 'no_grad'}")
         for name, call, batches, ref in CALLS for grad in (False, True) if not (grad and name == "bmm")]


@pytest.mark.parametrize("name,call,call_flop,ref,grad", CASES)
def test_the_threshold_sends_smaller_gemms_to_torch_and_keeps_larger_ones(device, monkeypatch, name, call,
                                                                          call_flop, ref, grad):
    want = call(BASE, device, grad)  # torch alone
    with tritonblas.enable():
        call(BASE, device, grad), call(BASE, device, grad)  # cold, then warm: the hot path's entries exist
        # just over the call's FLOP: torch's op, exactly torch's result
        monkeypatch.setenv(settings.ENV_EAGER_MIN_GFLOP, repr((call_flop + 1) / 1e9))
        dispatch.reset_stats()
        out = call(BASE, device, grad)
        st = dispatch.stats()
        assert st["routed"] == st["launches"] == 0 and st["intercepted"] == 1, st
        assert torch.equal(out, want) and (out.grad_fn is not None) == grad
        # at the call's FLOP: ours
        monkeypatch.setenv(settings.ENV_EAGER_MIN_GFLOP, repr(call_flop / 1e9))
        dispatch.reset_stats()
        out = call(BASE, device, grad)
        st = dispatch.stats()
        assert st["routed"] == 1 and st["launches"] >= 1, st
        ref64, mag, _ = ref(BASE)
        assert_gemm_close(out, ref64, mag, k=16, what=f"{name} at the threshold (ours)")
        assert (out.grad_fn is not None) == grad


def test_unset_or_empty_changes_nothing(device, monkeypatch):
    for value in (None, "", "0"):
        if value is None:
            monkeypatch.delenv(settings.ENV_EAGER_MIN_GFLOP, raising=False)
        else:
            monkeypatch.setenv(settings.ENV_EAGER_MIN_GFLOP, value)
        with tritonblas.enable():
            F.linear(fresh(BASE, "x", device), fresh(BASE, "w", device))
            dispatch.reset_stats()
            F.linear(fresh(BASE, "x", device), fresh(BASE, "w", device))
        assert dispatch.stats()["fast_hits"] == 1, value


@pytest.mark.parametrize("value", ["abc", "-1", "nan", "inf", "1e400"])
def test_a_bad_value_is_an_error_naming_the_variable(device, monkeypatch, value):
    monkeypatch.setenv(settings.ENV_EAGER_MIN_GFLOP, value)  # (a bad value is never cached: it raises each call)
    with tritonblas.enable(), pytest.raises(ValueError, match=settings.ENV_EAGER_MIN_GFLOP):
        F.linear(fresh(BASE, "x", device), fresh(BASE, "w", device))


def test_the_variable_is_documented():
    assert settings.ENV_EAGER_MIN_GFLOP in settings.ALL


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (run with `-m gpu` on the H200)")
def test_a_cuda_graph_capture_keeps_our_kernel(monkeypatch):
    """Under capture the host's cost is paid once: the threshold does not apply, the captured call is ours and
    its replay follows new inputs."""
    x = torch.randn(64, 256, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(128, 256, device="cuda", dtype=torch.bfloat16)
    monkeypatch.setenv(settings.ENV_EAGER_MIN_GFLOP, "1000")
    with tritonblas.enable():
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):  # warm-up outside capture: eager, so torch's op (nothing planned)
            dispatch.reset_stats()
            F.linear(x, w)
            assert dispatch.stats()["routed"] == 0
        torch.cuda.current_stream().wait_stream(s)
        monkeypatch.delenv(settings.ENV_EAGER_MIN_GFLOP)
        F.linear(x, w), F.linear(x, w)  # our plan and warm entry (capture cannot plan)
        monkeypatch.setenv(settings.ENV_EAGER_MIN_GFLOP, "1000")
        g = torch.cuda.CUDAGraph()
        dispatch.reset_stats()
        with torch.cuda.graph(g):
            out = F.linear(x, w)
        assert dispatch.stats()["routed"] == 1, dispatch.stats()
    x.copy_(torch.randn_like(x))
    g.replay()
    torch.cuda.synchronize()
    ref, mag, _ = reference(x, w.t())
    assert_gemm_close(out, ref, mag, k=x.shape[1], what="replayed capture under the threshold")

"""A config the compiler refuses (Triton's OutOfResources: origami's resource predicates and this
Triton disagree, e.g. another version's shared-memory allocation) is never a crash: the dispatcher
replans the key with the model's next pick, says so once (FallbackWarning), and runs torch when no
config is left; a forced ``config=`` that does not fit is a RuntimeError naming it."""

from __future__ import annotations

import warnings

import pytest
import torch
from triton.runtime.errors import OutOfResources

import tritonblas
from tritonblas import dispatch
from tritonblas import plan as _plan
from tritonblas.log import FallbackWarning

pytestmark = pytest.mark.usefixtures("cpu_profile")  # tests/dropin/conftest.py


def _sig(cfg) -> tuple:
    return (cfg.block_m, cfg.block_n, cfg.block_k, cfg.num_warps, cfg.num_stages)


def _launch_sig(prepared) -> tuple:
    kw = prepared.kwargs
    return (kw.get("BLOCK_M"), kw.get("BLOCK_N"), kw.get("BLOCK_K"), kw.get("num_warps"), kw.get("num_stages"))


def _refusing(monkeypatch, refuse):
    """PreparedLaunch.run_kernel raising OutOfResources for launches ``refuse(signature)`` picks."""
    refused = []
    original = _plan.PreparedLaunch.run_kernel

    def run_kernel(self):
        sig = _launch_sig(self)
        if refuse(sig):
            refused.append(sig)
            raise OutOfResources(300_000, 232_448, "shared memory")
        return original(self)

    monkeypatch.setattr(_plan.PreparedLaunch, "run_kernel", run_kernel)
    return refused


def _operands(device, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(70, 96, generator=g, dtype=torch.float64).float().to(device),
            torch.randn(96, 40, generator=g, dtype=torch.float64).float().to(device))


def test_a_refused_pick_is_replanned_once_and_the_result_is_right(device, monkeypatch):
    tritonblas.clear_caches()
    a, b = _operands(device)
    first = dispatch.plan_for(a, b).config
    refused = _refusing(monkeypatch, lambda sig: sig == _sig(first))
    with pytest.warns(FallbackWarning, match=r"Triton refused .*shared memory.*next pick"):
        out = tritonblas.matmul(a, b)
    assert refused == [_sig(first)]
    torch.testing.assert_close(out, (a.double() @ b.double()).float(), rtol=1e-4, atol=1e-4)
    now = dispatch.plan_for(a, b).config
    assert _sig(now) != _sig(first)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FallbackWarning)   # the replanned key stays replanned: no second warning
        again = tritonblas.matmul(a, b)
    assert torch.equal(again, out) and refused == [_sig(first)]


def test_nothing_fits_runs_torch(device, monkeypatch):
    tritonblas.clear_caches()
    a, b = _operands(device, seed=1)
    refused = _refusing(monkeypatch, lambda sig: True)
    dispatch.reset_stats()
    with pytest.warns(FallbackWarning, match="torch runs it"):
        out = tritonblas.matmul(a, b)
    assert len(refused) == dispatch.REPLANS + 1
    assert dispatch.stats()["fallbacks"] == 1
    torch.testing.assert_close(out, a @ b)
    assert dispatch.plan_for(a, b) is None  # the key is marked: torch runs it from now on


def test_a_forced_config_that_does_not_fit_names_it(device, monkeypatch):
    tritonblas.clear_caches()
    a, b = _operands(device, seed=2)
    cfg = dispatch.plan_for(a, b).config
    tritonblas.clear_caches()
    _refusing(monkeypatch, lambda sig: True)
    with pytest.raises(RuntimeError, match=r"config=.*does not fit this device \(shared memory"):
        tritonblas.matmul(a, b, config=cfg)

"""benchmarks/host_linear.py's timeline analysis (gpu_gaps) on synthetic chrome-trace events: busy and
idle time, and which gaps count as *queued* (the next kernel was launched before the previous ended)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import host_linear  # noqa: E402


def _k(name, ts, dur, corr):
    return {"ph": "X", "cat": "kernel", "name": name, "ts": ts, "dur": dur, "args": {"correlation": corr}}


def _launch(ts, dur, corr):
    return {"ph": "X", "cat": "cuda_driver" if corr % 2 else "cuda_runtime", "name": "launch", "ts": ts, "dur": dur,
            "args": {"correlation": corr}}


def test_queued_gaps_are_only_those_no_host_delay_explains():
    events = [
        _launch(0, 5, 1), _k("gemm_splitk_kernel", 10, 20, 1),      # ours: 10..30
        _launch(12, 5, 2), _k("elementwise_kernel", 34, 6, 2),       # launched at 17 < 30: a queued gap of 4
        _launch(50, 5, 3), _k("nvjet_gemm", 60, 10, 3),              # launched at 55 > 40: a host gap of 20
        _launch(58, 4, 4), _k("triton_poi_fused", 71, 4, 4),         # launched at 62 < 70: a queued gap of 1
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 0, "dur": 100},  # ignored
    ]
    g = host_linear.gpu_gaps(events, tokens=2)
    assert g["kernels_per_token"] == 2.0
    assert g["busy_us_per_token"] == (20 + 6 + 10 + 4) / 2
    assert g["idle_us_per_token"] == (4 + 20 + 1) / 2
    assert g["span_us_per_token"] == (75 - 10) / 2
    assert g["queued_gaps"] == {
        "other->triton": {"count_per_token": 0.5, "us_per_token": 0.5, "median_us": 1},
        "triton->other": {"count_per_token": 0.5, "us_per_token": 2.0, "median_us": 4},
    }


def test_no_kernels_gives_zeros():
    g = host_linear.gpu_gaps([], tokens=3)
    assert g["kernels_per_token"] == 0 and g["busy_us_per_token"] == 0 and g["queued_gaps"] == {}


@pytest.mark.skipif(torch.cuda.is_available(), reason="CPU-only: the stubbed launches run the interpreter's "
                    "kernels, and a GPU process built them for the GPU (CPU tensors are refused there)")
def test_cpu_stub_times_warm_routed_calls_and_restores_everything(monkeypatch):
    """``--cpu-stub``: every selected case is served warm under enable() with the raw launch emulated (the
    small-training-GEMM rule's default included: the stub times our path),
    each row has a time and call counts beside torch's, and the kernels, the dispatcher's device
    stand-ins and the caches are restored afterwards."""
    import tritonblas.kernels as kernels
    from tritonblas import fastpath, launchcache

    import os

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setenv("TRITONBLAS_PROFILE", "h200")
    monkeypatch.delenv("TRITONBLAS_GRAD_MIN_GFLOP")  # the default, which would send the autograd cases to torch
    saved = {name: getattr(kernels, name) for name in kernels.__all__}
    saved_dev = launchcache.get_device, launchcache.raw_stream
    rows = host_linear.cpu_stub(50, only=("linear no_grad", "linear autograd fwd+bwd", "matmul no_grad 4x"))
    assert [(r["case"].split()[0], r["side"]) for r in rows] == [
        ("linear", "ours"), ("linear", "torch tiny")] * 2 + [("matmul", "ours"), ("matmul", "torch tiny")]
    for r in rows:
        assert r["us"] > 0 and r["calls"] >= r["py_calls"] >= 1
        if r["side"] == "ours":
            assert r["warm"], r
    assert len(host_linear.cpu_stub_report(rows)) == 1 + len(rows)
    assert {name: getattr(kernels, name) for name in kernels.__all__} == saved
    assert (launchcache.get_device, launchcache.raw_stream) == saved_dev
    assert not launchcache.FAST and not fastpath._LINEAR and not fastpath._MATMUL
    assert "TRITONBLAS_GRAD_MIN_GFLOP" not in os.environ


def test_fallthrough_reports_three_sides_and_routes_nothing():
    """--fallthrough (CPU, no profile): torch, enable() and enable() without the memory of refusals, each
    with its paired ratio; nothing routed, every GEMM intercepted. Structure only: not a timed test."""
    import pytest

    pytest.importorskip("transformers")
    import tritonblas

    lines = host_linear.fallthrough(rounds=1, tokens=2)
    assert "GEMM calls a run" in lines[0] and int(lines[0].split(",")[1].split()[0]) > 0
    assert [line.split()[0] for line in lines[1:]] == ["torch", "enable()", "enable(),"]
    st = tritonblas.dispatch.stats()
    assert st["routed"] == 0 and st["intercepted"] > 0


def test_fallthrough_leaves_the_environment_as_it_was(monkeypatch):
    import os

    import pytest

    pytest.importorskip("transformers")
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setenv("TRITONBLAS_PROFILE", "h200")
    host_linear.fallthrough(rounds=1, tokens=1)
    assert os.environ["TRITON_INTERPRET"] == "1" and os.environ["TRITONBLAS_PROFILE"] == "h200"


@pytest.mark.skipif(torch.cuda.is_available(), reason="CPU-only: the stubbed launches run the interpreter's "
                    "kernels, and a GPU process built them for the GPU (CPU tensors are refused there)")
def test_inmodel_grad_reports_three_sides_and_restores_the_environment(monkeypatch):
    """--inmodel-grad (CPU): torch, enable() and enable() with TRITONBLAS_AUTOGRAD=aten, each with grad and
    no_grad times and a backward time; the variable is set only on its side and nothing stays armed.
    Structure only: not a timed test."""
    import os

    pytest.importorskip("transformers")
    from tritonblas import below_autograd, settings

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setenv("TRITONBLAS_PROFILE", "h200")
    monkeypatch.delenv(settings.ENV_AUTOGRAD, raising=False)
    lines = host_linear.inmodel_grad("gpt2-medium", rounds=1)
    assert "gpt2-medium" in lines[0]
    assert [line.split()[0] for line in lines[1:]] == ["torch", "ours", "ours"] and "aten" in lines[3]
    for line in lines[1:]:
        assert "grad" in line and "no_grad" in line and "backward" in line
    assert settings.ENV_AUTOGRAD not in os.environ and not below_autograd.armed()


@pytest.mark.skipif(torch.cuda.is_available(), reason="CPU-only: CPU tensors under the interpreter's kernels")
def test_grad_toll_falls_through_every_call_and_restores_the_environment(monkeypatch):
    """--grad-toll: one row per op, each enable() call intercepted and none routed (grad_toll raises otherwise);
    the variables it sets are put back. Structure only: not a timed test."""
    import os

    monkeypatch.setenv("TRITONBLAS_GRAD_MIN_GFLOP", "0")
    lines = host_linear.grad_toll(rounds=1, n=10)
    assert [line.split()[0] for line in lines[2:]] == ["F.linear", "addmm", "matmul"]
    assert os.environ["TRITONBLAS_GRAD_MIN_GFLOP"] == "0"


@pytest.mark.skipif(torch.cuda.is_available(), reason="CPU-only: CPU tensors under the interpreter's kernels")
def test_vendor_toll_hands_over_every_gemm_at_1_serves_each_warm_at_0_and_restores_the_environment(monkeypatch):
    """--vendor-toll: three sides (torch; the variable 1, every GEMM of the decode handed to torch's op; 0, every one
    served warm by ours), or the toll measured would be something else; the variables it sets are put back.
    Structure only: not a timed test."""
    import os

    pytest.importorskip("transformers")
    from tritonblas import settings

    monkeypatch.delenv(settings.ENV_VENDOR_ALIGNED, raising=False)
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    lines = host_linear.vendor_toll(rounds=1, tokens=2)
    calls, handed, warm = (int(x) for x in re.findall(r"(\d+) (?:GEMM calls|handed|served warm)", lines[0]))
    assert calls > 0 and handed == warm == calls, lines[0]
    assert [line[2:30].strip() for line in lines[1:]] == [  # each side's name, as vendor_toll pads it
        "torch", "enable(), VENDOR_ALIGNED=1", "enable(), VENDOR_ALIGNED=0"], lines
    assert "x1.0000 of torch" in lines[1] and "+0.00 us" in lines[1]  # the base side against itself
    assert settings.ENV_VENDOR_ALIGNED not in os.environ and "TRITON_INTERPRET" not in os.environ

@pytest.mark.skipif(torch.cuda.is_available(), reason="CPU-only: CPU tensors under the interpreter's kernels")
def test_rope_toll_routes_the_rotary_matmul_at_0_hands_it_over_at_1_and_restores_the_environment(monkeypatch):
    """--rope-toll: three sides (torch; the variable 1, the K = 1 matmul handed to torch's op by the rule; 0 with the
    warm path off, our route each call), or the cost measured would be something else; the variables it sets are put
    back. Structure only: not a timed test."""
    import os

    from tritonblas import fastpath, settings

    for name in (settings.ENV_VENDOR_ALIGNED, fastpath.ENV_FAST, "TRITON_INTERPRET"):
        monkeypatch.delenv(name, raising=False)
    lines = host_linear.rope_toll(rounds=1, n=2)
    assert [line[2:30].strip() for line in lines[1:]] == [
        "torch", "enable(), VENDOR_ALIGNED=1", "enable(), VENDOR_ALIGNED=0"], lines
    assert all(float(line.split()[-4]) > 0 for line in lines[1:]), lines
    assert not any(n in os.environ for n in (settings.ENV_VENDOR_ALIGNED, fastpath.ENV_FAST, "TRITON_INTERPRET"))

"""benchmarks/scaled_mm_configs.py's CPU side: which configs it times, and its argument errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import scaled_mm_configs as smc  # noqa: E402
from origami import TileConfig  # noqa: E402


def _cfg(kind, bm, bn, bk, w, s, g=8, grid=0):
    return TileConfig(kind=kind, block_m=bm, block_n=bn, block_k=bk, num_warps=w, num_stages=s, group_m=g,
                      grid=grid, split_k=4 if kind == "splitk" else 1)


def test_fastest_keeps_one_config_per_resources_in_time_order():
    cfgs = [_cfg("dp", 128, 256, 128, 8, 3), _cfg("dp", 128, 256, 128, 8, 3, g=1), _cfg("dp", 256, 128, 128, 8, 3),
            _cfg("persistent", 256, 128, 128, 8, 3, grid=132), _cfg("dp", 128, 128, 128, 4, 3)]
    ms = [1.05, 1.00, 0.98, 0.99, 0.97]
    got = smc.fastest(cfgs, ms, 3)
    assert [c for c, _ in got] == [cfgs[4], cfgs[2], cfgs[3]]
    assert [t for _, t in got] == [0.97, 0.98, 0.99]
    assert [c for c, _ in smc.fastest(cfgs, ms, 10)] == [cfgs[4], cfgs[2], cfgs[3], cfgs[1]]  # g1 beat g8


def _run(*args):
    return subprocess.run([sys.executable, str(ROOT / "benchmarks" / "scaled_mm_configs.py"), *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)


def test_refuses_a_sweep_without_scaled_mm_layout_rows(tmp_path):
    nn = ROOT / "benchmarks" / "results" / "fp8_ceiling_nn_h100_43a21a4.csv"  # fp8, but b row-major
    r = _run("--from", str(nn), "--out", str(tmp_path / "x.csv"))
    assert r.returncode == 2 and "no fp8 shape in scaled_mm's layout" in r.stderr
    assert not (tmp_path / "x.csv").exists()


@pytest.mark.parametrize("top", ["0", "-2"])
def test_refuses_a_non_positive_top(tmp_path, top):
    r = _run("--from", str(ROOT / "benchmarks" / "results" / "fp8_ceiling_nn_h100_43a21a4.csv"), "--top", top)
    assert r.returncode == 2 and "--top" in r.stderr


def _interp(monkeypatch):
    """The kernels on the CPU through Triton's interpreter, with a profile (tests/dropin/conftest.py's way)."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setenv("TRITONBLAS_PROFILE", "h200")


def test_checked_runs_force_each_config_and_check_it_against_float64(monkeypatch):
    _interp(monkeypatch)
    import origami

    p = origami.GemmProblem(33, 48, 128, "fp8_e4m3", "fp8_e4m3", "bf16", "N", "T", 1, 16)
    swept = [(_cfg("dp", 16, 32, 32, 4, 2, g=1), 0.010), (_cfg("splitk", 16, 16, 32, 4, 2, g=1), 0.012)]
    rows, fns = smc.checked_runs(p, swept, "cpu", "the pick")
    assert [r["source"] for r in rows] == ["torch", "pick", "sweep1", "sweep2"]
    assert [r["config"] for r in rows[1:]] == ["the pick", swept[0][0].short(), swept[1][0].short()]
    assert [r["sweep_us"] for r in rows[2:]] == [10.0, 12.0]
    for r in rows:
        assert r["error"] == "" and r["err"] < 1e-2, r
    assert all(f is not None for f in fns)


def test_a_forced_config_our_kernels_cannot_run_is_an_error_row_not_the_last_product(monkeypatch):
    _interp(monkeypatch)
    import origami
    from tritonblas import dispatch

    p = origami.GemmProblem(17, 32, 64, "fp8_e4m3", "fp8_e4m3", "bf16", "N", "T", 1, 16)
    swept = [(_cfg("dp", 16, 32, 32, 4, 2, g=1), 0.010), (_cfg("dp", 16, 16, 32, 4, 2, g=1), 0.011)]
    real = dispatch.scaled_gemm
    monkeypatch.setattr(dispatch, "scaled_gemm",
                        lambda *a, config=None, **kw: None if config == swept[1][0] else real(*a, config=config, **kw))
    rows, fns = smc.checked_runs(p, swept, "cpu")
    assert rows[2]["error"] == "" and fns[2] is not None
    assert "cannot run this config" in rows[3]["error"] and "err" not in rows[3] and fns[3] is None

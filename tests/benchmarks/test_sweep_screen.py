"""benchmarks/sweep.py --screen (CPU, and on the GPU where there is one): a slow config is recorded at its quick time only against a
best that was timed in full and checked; everything within the factor is timed in full; configs go
in predicted order. The GPU timers are replaced by scripted ones that still run the launch (on the GPU, or under the
interpreter), so the loop's result check and bookkeeping are the real ones."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))  # sweep.py imports _harness as a script does

from benchmarks import sweep  # noqa: E402
from origami import GemmProblem  # noqa: E402


@pytest.mark.parametrize("quick, best, factor, want", [
    (1.0, None, 1.5, False),   # nothing timed in full yet: no reference
    (1.0, 0.5, 0, False),      # screen off
    (1.0, 0.5, 1.5, True),     # 2x the best, long enough
    (0.7, 0.5, 1.5, False),    # within the factor: timed in full
    (0.75, 0.5, 1.5, False),   # exactly at the factor: timed in full
    (0.19, 0.01, 1.5, False),  # short: the quick time's launch latency could matter
    (0.2, 0.01, 1.5, True),
])
def test_screened(quick, best, factor, want):
    assert sweep.screened(quick, best, factor) is want


def _args(**kw):
    base = dict(timer="graph", screen=1.5, rep_ms=3.0, warmup_ms=5.0, budget_s=1e9, workers=0, tma=False,
                profile="h200", heldout=False)
    return argparse.Namespace(**{**base, **kw})


def _script(monkeypatch, quick, full):
    """Scripted timers (per call, in order) that still launch; returns the list of calls made."""
    calls = []

    def warm(fn):
        fn()
        calls.append("warm")

    def queued(fn, runs):
        fn()
        calls.append("quick")
        return quick.pop(0)

    def graph(fn, rep_ms):
        fn()
        calls.append("graph")
        return full.pop(0)

    monkeypatch.setattr(sweep, "warm_launch", warm)
    monkeypatch.setattr(sweep, "queued_ms", queued)
    monkeypatch.setattr(sweep, "graph_ms", graph)
    return calls


def test_time_config_screens_only_slow_configs_against_a_best(monkeypatch):
    calls = _script(monkeypatch, [1.0, 0.7, 1.0], [0.5, 0.6, 0.55])
    fn = lambda: None  # noqa: E731
    assert sweep.time_config(fn, _args(), None) == (0.5, True)    # no best: full
    assert sweep.time_config(fn, _args(), 0.5) == (0.6, True)     # quick 0.7 within 1.5x: full
    assert sweep.time_config(fn, _args(), 0.5) == (1.0, False)    # quick 1.0 over 1.5x: screened
    assert sweep.time_config(fn, _args(screen=0), 0.5) == (0.55, True)  # off: no quick timing at all
    assert calls == ["warm", "quick", "graph", "warm", "quick", "graph", "warm", "quick", "warm", "graph"]


def _sweep(tmp_path, monkeypatch, device, check_fails_first=False):
    """Four configs of one small shape, offered in reverse predicted order, launched on ``device`` (the
    GPU where there is one, else the interpreter); returns the rows written."""
    import origami

    hw = origami.load_profile("h200")
    p = GemmProblem(48, 40, 32, a_dtype="fp32", b_dtype="fp32", c_dtype="fp32")
    cands = [c for c in origami.candidates(p, hw) if c.kind.value == "dp"][:4]
    assert len(cands) == 4
    offered = [(c, float(4 - i)) for i, c in enumerate(cands)]  # cands[3] predicted fastest
    if check_fails_first:
        real, seen = sweep.check_result, []

        def check(out, ref, prob):
            seen.append(1)
            if len(seen) == 1:
                raise RuntimeError("wrong result: scripted")
            real(out, ref, prob)

        monkeypatch.setattr(sweep, "check_result", check)
    out = tmp_path / "s.csv"
    sweep.run_shard(_args(), [([p], out, lambda prob, hw_, *extra: offered)], device)
    return cands, sweep.read_rows(out)


def _cfg_of(row):
    return (int(row["block_m"]), int(row["block_n"]), int(row["block_k"]), int(row["num_warps"]),
            int(row["num_stages"]), int(row["group_m"]))


def _key(c):
    return (c.block_m, c.block_n, c.block_k, c.num_warps, c.num_stages, c.group_m)


def test_sweep_times_in_predicted_order_and_screens_against_the_full_best(tmp_path, monkeypatch, device):
    # predicted order: cands[3], [2], [1], [0]. Quick times 0.5, 1.0, 0.6, 0.7; full times 0.5, 0.4:
    # [3] has no reference (full 0.5); [2] 1.0 > 0.75 (screened); [1] 0.6 <= 0.75 (full 0.4, the new
    # best); [0] 0.7 > 0.6 (screened)
    calls = _script(monkeypatch, [0.5, 1.0, 0.6, 0.7], [0.5, 0.4])
    cands, rows = _sweep(tmp_path, monkeypatch, device)
    assert [_cfg_of(r) for r in rows] == [_key(c) for c in reversed(cands)]
    assert [float(r["median_ms"]) for r in rows] == [0.5, 1.0, 0.4, 0.7]
    assert calls.count("graph") == 2 and not any(r["error"] for r in rows)


def test_a_config_whose_result_is_wrong_is_never_the_screens_reference(tmp_path, monkeypatch, device):
    # the first config (full 0.1) fails its check: the second (quick 1.0) has no reference yet and
    # is timed in full (0.9); had the failed 0.1 counted, it would have been screened at 1.0
    calls = _script(monkeypatch, [0.1, 1.0, 1.4, 1.4], [0.1, 0.9])
    cands, rows = _sweep(tmp_path, monkeypatch, device, check_fails_first=True)
    assert rows[0]["median_ms"] == "" and "wrong result" in rows[0]["error"]
    assert float(rows[1]["median_ms"]) == 0.9
    assert [float(r["median_ms"]) for r in rows[2:]] == [1.4, 1.4]  # over 1.5 x 0.9: screened
    assert calls.count("graph") == 2


def test_the_profiles_pick_is_always_timed_in_full(tmp_path, monkeypatch, device):
    # as the first test, but origami.select() picks cands[2], whose quick time (1.0) would screen it: it is
    # timed in full (0.45) instead, and becomes the reference; the guard scores that row (issue 19)
    import origami

    real_select = origami.select
    picked = {}

    def select(p, hw, *a, **kw):
        est = real_select(p, hw, *a, **kw)
        return dataclasses.replace(est, config=picked["cfg"]) if "cfg" in picked else est

    hw = origami.load_profile("h200")
    p = GemmProblem(48, 40, 32, a_dtype="fp32", b_dtype="fp32", c_dtype="fp32")
    picked["cfg"] = [c for c in origami.candidates(p, hw) if c.kind.value == "dp"][:4][2]
    monkeypatch.setattr(sweep.origami, "select", select)
    calls = _script(monkeypatch, [0.5, 1.0, 0.6, 0.7], [0.5, 0.45, 0.4])
    cands, rows = _sweep(tmp_path, monkeypatch, device)
    assert cands[2] == picked["cfg"]
    assert [float(r["median_ms"]) for r in rows] == [0.5, 0.45, 0.4, 0.7]
    assert calls.count("graph") == 3 and not any(r["error"] for r in rows)


def test_screen_factor_must_be_over_one(capsys):
    with pytest.raises(SystemExit):
        sweep.main(["--set", "square", "--screen", "0.9", "--estimate"])
    assert "--screen 0.9" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        sweep.main(["--set", "square", "--screen", "1.5", "--timer", "cold", "--estimate"])
    assert "graph timer only" in capsys.readouterr().err


@pytest.mark.parametrize("dtype, out, want", [
    ("tf32", "fp32", dict(allow_tf32=True, scales=None)),
    ("fp8_e4m3", "bf16", dict(allow_tf32=False, scales="tensor")),
    ("bf16", "bf16", dict(allow_tf32=False, scales=None)),
])
def test_sweep_precompiles_the_variant_it_times(tmp_path, monkeypatch, dtype, out, want):
    # with a compile pool the sweep precompiles each shape's plans for the variant its timing launches
    # (TF32 inputs; fp8 with per-tensor scales): anything else compiles every config again in the
    # timing process (the tf32 held-out shapes' ~0.3 s a config on the H200, session 18)
    import origami
    from tritonblas import plan as planmod

    seen = []

    def fake_precompile(plans, device, *, pool=None, scales=None, **kw):
        seen.append(dict(kw, scales=scales))
        return [None] * len(plans)

    monkeypatch.setattr(planmod, "precompile", fake_precompile)
    _script(monkeypatch, [1.0] * 4, [1.0] * 4)
    hw = origami.load_profile("h200")
    p = GemmProblem(48, 40, 32, a_dtype=dtype, b_dtype=dtype, c_dtype=out)
    cands = [c for c in origami.candidates(p, hw) if c.kind.value == "dp"][:2]
    out_csv = tmp_path / "s.csv"
    sweep._sweep_shapes(_args(screen=0), [p], out_csv, "cpu", hw, set(), True, __import__("time").time(),
                        [object()], lambda prob, hw_, *extra: [(c, 1.0) for c in cands])
    assert seen == [want]


def test_retime_replaces_exactly_the_job_files_rows(tmp_path, monkeypatch, device):
    """``--rows JOBS --retime``: the listed (shape, config) rows already recorded are removed, atomically, and timed
    again; the file's other rows, its columns and ``#`` lines stay. Without it a recorded row is skipped as done.
    (The H100's held-out llm file holds a pick recorded at one screened quick time, 5x its model twin.)"""
    import csv

    import origami

    from benchmarks.missing_picks import JOB_COLS

    hw = origami.load_profile("h200")
    p = GemmProblem(48, 40, 32, a_dtype="fp32", b_dtype="fp32", c_dtype="fp32")
    a, b = [c for c in origami.candidates(p, hw) if c.kind.value == "dp"][:2]
    out = tmp_path / "h200_heldout" / "x.csv"
    out.parent.mkdir()

    def row(cfg, ms):
        r = {k: sweep.cell(getattr(p, k)) for k in sweep.PROBLEM_COLS}
        r.update({k: sweep.cell(getattr(cfg, k)) for k in sweep.CONFIG_COLS})
        return {**r, "median_ms": ms, "error": "", "predicted_ns": ""}

    sweep.write_rows(out, ["# gpu=test"], list(sweep.COLS), [row(a, "9.900000"), row(b, "8.800000")])
    job = tmp_path / "jobs.csv"
    with job.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=JOB_COLS, extrasaction="ignore")
        w.writeheader()
        w.writerow({**row(a, ""), "out": str(out)})
    _script(monkeypatch, [0.5], [0.5])
    sweep.run_shard(_args(screen=0), sweep.row_jobs(job), device)  # without --retime: done, not timed
    assert [r["median_ms"] for r in sweep.read_rows(out)] == ["9.900000", "8.800000"]

    assert sweep.drop_recorded(job).endswith("x.csv: 1 rows to retime")
    assert [r["median_ms"] for r in sweep.read_rows(out)] == ["8.800000"]
    assert out.read_text().startswith("# gpu=test\n")
    calls = _script(monkeypatch, [], [0.42])
    sweep.run_shard(_args(screen=0), sweep.row_jobs(job), device)
    got = {sweep.row_key(r): r["median_ms"] for r in sweep.read_rows(out)}
    assert got == {sweep.row_key(row(a, "")): "0.420000", sweep.row_key(row(b, "")): "8.800000"}
    assert calls.count("graph") == 1
    with pytest.raises(SystemExit):
        sweep.main(["--set", "calib", "--retime"])

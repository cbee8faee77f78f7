"""``calibrate`` and ``bench`` on CPU (CI): error paths through the CLI (one line, exit code 2,
nothing written), the guarded ``--fit`` on the recorded H200 sweep, the profile writer with fake
measurements, and the atomic write. The GPU side is tests/cli/test_calibrate_gpu.py."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import origami
from origami.hardware import check_profile_text, render_profile
from tritonblas import _measure, bench, heldout
from tritonblas import calibrate as cal

ROOT = Path(__file__).resolve().parents[2]
SWEEP = ROOT / "benchmarks" / "data" / "h200" / "calib.csv"
STAMP_RE = re.compile(r"^measured \d{4}-\d{2}-\d{2} by tritonblas calibrate \(.+\)")

try:
    import torch

    HAS_CUDA = torch.cuda.is_available()
except ImportError:  # pragma: no cover
    HAS_CUDA = False
no_gpu_only = pytest.mark.skipif(HAS_CUDA, reason="checks what happens without a GPU")


def cli_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRITONBLAS_", "PYTEST_"))}
    env["PYTHONPATH"] = str(ROOT)
    env.update(extra)
    return env


def run_cli(*args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tritonblas", *args], capture_output=True, text=True,
                          cwd=ROOT, env=cli_env(), timeout=timeout)


def assert_usage_error(r: subprocess.CompletedProcess, *needles: str) -> str:
    lines = r.stderr.splitlines()
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr
    assert r.stdout == "", r.stdout
    for n in needles:
        assert n in lines[0], (n, lines[0])
    return lines[0]


# --- CLI error paths ---------------------------------------------------------------------------
@no_gpu_only
@pytest.mark.parametrize("extra", [(), ("--quick",), ("--base", "h200", "--fit", str(SWEEP))])
def test_calibrate_without_gpu_exits_2_and_writes_nothing(tmp_path, extra):
    out = tmp_path / "p.yaml"
    line = assert_usage_error(run_cli("calibrate", "-o", str(out), *extra), "needs a CUDA GPU")
    assert "--no-measure" in line
    assert list(tmp_path.iterdir()) == []


@no_gpu_only
@pytest.mark.parametrize("args", [("bench", "1024", "1024", "1024"),
                                  ("bench", "64", "64", "64", "--dtype", "fp16", "--profile", "h200")])
def test_bench_without_gpu_exits_2(args):
    assert_usage_error(run_cli(*args), "needs a CUDA GPU")


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def _with_time(t: str) -> str:
    """calib.csv with the first data row's median_ms replaced by ``t``."""
    lines = SWEEP.read_text().splitlines()
    h = next(i for i, x in enumerate(lines) if not x.startswith("#"))
    col = lines[h].split(",").index("median_ms")
    row = lines[h + 1].split(",")
    row[col] = t
    return "\n".join([*lines[:h + 1], ",".join(row), *lines[h + 2:]]) + "\n"


@pytest.mark.parametrize("opt", ["--fit", "--heldout-sweeps"])
def test_output_naming_an_input_sweep_is_refused_and_the_sweep_kept(tmp_path, opt):
    mine = tmp_path / "mine.csv"
    mine.write_text(SWEEP.read_text())
    args = ["--fit", str(mine)] if opt == "--fit" else ["--fit", str(SWEEP), "--heldout-sweeps", str(mine)]
    assert_usage_error(run_cli("calibrate", "--no-measure", "--base", "h200", *args, "-o", str(mine), "--force"),
                       "mine.csv", opt)
    assert mine.read_text() == SWEEP.read_text()


def test_bad_held_out_sweep_is_one_error_naming_it(tmp_path):
    """--heldout-sweeps files are user input too: a malformed one is one line naming the file."""
    cases = {"cols.csv": b"a,b\n1,2\n", "bytes.csv": b"\xff\xfe,\x80\n",
             "dims.csv": ",".join(heldout.SWEEP_COLUMNS).encode() + b"\nx,1,1,1,bf16,bf16,bf16,N,N,dp,1,1,1,1,1,1\n"}
    for name, data in cases.items():
        p = tmp_path / name
        p.write_bytes(data)
        with pytest.raises(_measure.CalibrationError, match=rf"held-out sweep .*{name}"):
            heldout.read_heldout_sweeps([p])
    out = tmp_path / "out.yaml"
    assert_usage_error(run_cli("calibrate", "--no-measure", "--base", "h200", "--fit", str(SWEEP), "-o", str(out),
                               "--heldout-sweeps", str(tmp_path / "cols.csv")), "cols.csv", "not a sweep CSV")
    assert not out.exists()


@pytest.mark.parametrize("make, needles", [
    (lambda d: d / "missing.csv", ("missing.csv", "no such file")),
    (lambda d: d, ("is a directory",)),
    (lambda d: _write(d / "junk.csv", "a,b\n1,2\n"), ("junk.csv", "not a sweep CSV", "missing column")),
    (lambda d: _write(d / "empty.csv", ""), ("empty.csv",)),
    (lambda d: _write(d / "bad_kind.csv", SWEEP.read_text().replace(",dp,", ",warp,", 3)), ("bad_kind.csv",)),
    (lambda d: _write(d / "few.csv", "\n".join(SWEEP.read_text().splitlines()[:60]) + "\n"),
     ("few.csv", "at least 4")),
    *[(lambda d, t=t: _write(d / f"time_{t}.csv", _with_time(t)), (f"time_{t}.csv", "median_ms", "positive"))
      for t in ("nan", "-1.5", "0", "inf")],
])
def test_bad_fit_file_exits_2_naming_it(tmp_path, make, needles):
    src = tmp_path / "in"
    src.mkdir()
    sweep = make(src)
    out = tmp_path / "out.yaml"
    assert_usage_error(run_cli("calibrate", "--no-measure", "--base", "h200", "--fit", str(sweep), "-o", str(out)),
                       *needles)
    assert not out.exists()


def test_bad_base_exits_2(tmp_path):
    out = tmp_path / "out.yaml"
    assert_usage_error(run_cli("calibrate", "--no-measure", "--base", "nope", "--fit", str(SWEEP), "-o", str(out)),
                       "--base", "nope", "unknown profile")
    broken = _write(tmp_path / "broken.yaml",
                    (ROOT / "hwprofiles" / "h200.yaml").read_text().replace("compute_units: 132", "compute_unit: 132"))
    assert_usage_error(run_cli("calibrate", "--no-measure", "--base", str(broken), "--fit", str(SWEEP), "-o", str(out)),
                       "--base", "broken.yaml", "compute")
    assert not out.exists()


@pytest.mark.parametrize("args, needles", [
    (("calibrate", "--no-measure", "--base", "h200"), ("--no-measure", "--fit")),
    (("calibrate", "--no-measure", "--fit", str(SWEEP)), ("--base",)),
    (("calibrate", "--no-measure", "--base", "h200", "--fit", str(SWEEP), "--holdout", "1.5"), ("--holdout",)),
    (("calibrate", "--no-measure", "--base", "h200", "--fit", str(SWEEP), "--rounds", "0"), ("--rounds",)),
    (("calibrate", "--no-measure", "--base", "h200", "--fit", str(SWEEP), "-o", "/nonexistent-dir/p.yaml"),
     ("does not exist",)),
    (("calibrate", "--no-measure", "--base", "h200", "--fit", str(SWEEP), "--params", "mma_efficency"),
     ("--params", "mma_efficency", "streamk_split_efficiency")),
    (("calibrate", "--frobnicate"), ("frobnicate",)),
    (("bench", "4", "4"), ("M N K",)),
    (("bench", "4", "4", "4", "--shapes", "s.yaml"), ("not both",)),
    (("bench", "4", "x", "4"), ("N:",)),
    (("bench", "4", "4", "4", "--dtype", "fp16", "--out-dtype", "fp32"), ("--out-dtype", "fp8 only")),
    (("bench", "--shapes", "/nonexistent/s.yaml"), ("s.yaml",)),
])
def test_bad_arguments_one_line_exit_2(args, needles):
    assert_usage_error(run_cli(*args), *needles)


def test_refuses_to_replace_the_base_file_without_force(tmp_path):
    base = tmp_path / "mine.yaml"
    text = (ROOT / "hwprofiles" / "h200.yaml").read_text()
    base.write_text(text)
    assert_usage_error(run_cli("calibrate", "--no-measure", "--base", str(base), "--fit", str(SWEEP), "-o", str(base)),
                       "is the --base profile", "--force")
    assert base.read_text() == text


# --- the guarded fit on the recorded H200 sweep ------------------------------------------------
_HELD = re.compile(r"held-out selection efficiency: geomean ([\d.]+) -> ([\d.]+), p10 ([\d.]+) -> ([\d.]+)")
HELDOUT_DATA = sorted(heldout.heldout_sweep_dir("h200").glob("*.csv"))


@pytest.fixture(scope="module")
def cpu_fit(tmp_path_factory):
    out = tmp_path_factory.mktemp("fit") / "h200-fitted.yaml"
    r = run_cli("calibrate", "--no-measure", "--base", "h200", "--fit", str(SWEEP), "-o", str(out))
    return r, out


def test_cpu_fit_is_validated_on_the_committed_split_or_rejected(cpu_fit):
    """Every shape of calib.csv is training data; the guard reads benchmarks/data/h200_heldout/. While
    that holds no sweep the fit must say so and be rejected, never re-draw a split of its own."""
    r, out = cpu_fit
    assert r.returncode == 0, r.stderr
    assert "seed" not in r.stdout and "16 training shapes fitted" in r.stdout, r.stdout
    hw, base = origami.load_profile(out), origami.load_profile("h200")
    assert hw.name == "h200" and hw.compute == base.compute and hw.memory == base.memory
    accepted = "fit: accepted" in r.stdout
    assert accepted != ("fit: rejected" in r.stdout), r.stdout
    if not HELDOUT_DATA:
        assert "fit: no held-out sweep recorded (benchmarks/data/h200_heldout/ has no CSV)" in r.stdout, r.stdout
        assert "sweep.py --heldout" in r.stdout and not _HELD.search(r.stdout) and not accepted, r.stdout
    else:
        g0, g1, p0, p1 = map(float, _HELD.search(r.stdout).groups())
        if accepted:
            assert g1 >= g0 and p1 >= p0, r.stdout
    if accepted:
        assert dict(hw.model) != dict(base.model)
        src = hw.sources["model"]
        assert src.startswith("fitted ") and "by tritonblas calibrate --fit calib.csv" in src
    else:
        assert dict(hw.model) == dict(base.model) and hw.sources["model"] == base.sources["model"]


def test_fit_without_output_prints_a_loadable_profile(tmp_path):
    r = run_cli("calibrate", "--no-measure", "--base", "h200", "--fit", str(SWEEP), "--rounds", "1")
    assert r.returncode == 0, r.stderr
    assert "fit: " in r.stderr and "fit: " not in r.stdout.replace("# fit: ", "")
    p = tmp_path / "printed.yaml"
    p.write_text(r.stdout)
    assert origami.load_profile(p).name == "h200"


def test_fit_refuses_a_held_out_row_naming_file_row_and_split(tmp_path):
    held = heldout.heldout_split()["square"][0]
    lines = SWEEP.read_text().splitlines()
    data = [x for x in lines if not x.startswith("#")]
    row = data[1].split(",")
    row[:4] = [str(held.m), str(held.n), str(held.k), "1"]
    sweep = _write(tmp_path / "leak.csv", "\n".join(lines + [",".join(row)]) + "\n")
    out = tmp_path / "out.yaml"
    assert_usage_error(run_cli("calibrate", "--no-measure", "--base", "h200", "--fit", str(sweep), "-o", str(out)),
                       "leak.csv", f"data row {len(data) + 1}", f"{held.m}x{held.n}x{held.k}",
                       "benchmarks/shapes/heldout/square.yaml", "training data only")
    assert not out.exists()


def test_seed_and_holdout_options_are_refused():
    for opt in (("--seed", "3"), ("--holdout", "0.5")):
        assert_usage_error(run_cli("calibrate", "--no-measure", "--base", "h200", "--fit", str(SWEEP), *opt),
                           "--seed/--holdout", "benchmarks/shapes/heldout")


def test_held_out_reader_refuses_training_rows_and_the_split_is_disjoint_from_training(tmp_path):
    with pytest.raises(cal.CalibrationError, match="not in the held-out split"):
        heldout.read_heldout_sweeps([SWEEP])
    held = heldout.heldout_dims()
    assert len(held) >= 64 + 3 * 16
    assert not held.keys() & {(m.problem.m, m.problem.n, m.problem.k, m.problem.batch)
                              for m in heldout.read_sweep_file(SWEEP)}
    with pytest.raises(cal.CalibrationError, match="no shapes under"):
        heldout.heldout_split(tmp_path)


def test_fit_model_scores_select_picks_on_the_given_held_out_data():
    """fit_model's guard numbers are pick_efficiency of the base and the fitted profile on the
    held-out data it is given (here calib.csv's shapes stand in for held-out data)."""
    from origami.fit import pick_efficiency

    data = heldout.read_sweep_file(SWEEP)
    hw = origami.load_profile("h200")
    outcome, params = cal.fit_model(hw, data[:10], heldout=data[10:], heldout_source="stand-in", rounds=1,
                                    params=["fixup_ns"])
    s0, s1 = pick_efficiency(data[10:], hw), pick_efficiency(data[10:], hw.replace_model(**params))
    assert outcome.before == (s0.geomean, s0.p10, len(s0.missing))
    assert outcome.after == (s1.geomean, s1.p10, len(s1.missing))
    assert outcome.train == 10 and outcome.held_out == len(data) - 10


def test_fit_outcome_guard():
    base = dict(origami.load_profile("h200").model)
    kw = dict(sweep="s.csv", shapes=10, train=10, held_out=3, heldout_source="h.csv", params_before=base,
              params_after={**base, "mma_efficiency": 0.8}, train_before=(0.8, 0.7, 0.3), train_after=(0.9, 0.8, 0.2))
    ok = cal.FitOutcome(before=(0.9, 0.8, 0), after=(0.92, 0.8, 0), **kw)
    assert ok.accepted and ok.changed == {"mma_efficiency": (base["mma_efficiency"], 0.8)}
    assert any(line.startswith("fit: accepted") for line in ok.lines())
    for after in ((0.89, 0.85, 0), (0.95, 0.79, 0), (0.95, 0.85, 1)):
        bad = cal.FitOutcome(before=(0.9, 0.8, 0), after=after, **kw)
        assert not bad.accepted and any(line.startswith("fit: rejected") for line in bad.lines())
    assert "re-sweep" in " ".join(cal.FitOutcome(before=(0.9, 0.8, 0), after=(0.95, 0.85, 1), **kw).lines())
    none = cal.FitOutcome(before=None, after=None, **kw)
    assert not none.accepted and any("no held-out sweep recorded" in x for x in none.lines())


# --- the profile writer ------------------------------------------------------------------------
def _fake(date: str = "2026-01-02", **over) -> cal.Measurements:
    values = [
        cal.Measurement("compute.compute_units", 132, "torch.cuda.get_device_properties(0).multi_processor_count"),
        cal.Measurement("memory.hbm_bytes_per_s", 4.21e12, "device-to-device copy of 4096 MiB"),
        cal.Measurement("memory.l2_bytes_per_s", 1.05e13, "plateau of repeated .cg reads", "knee at 48 MiB"),
        cal.Measurement("launch_overhead_ns", 4200.0, "back-to-back empty Triton kernels"),
    ]
    rates = [cal.Measurement("matrix.peak_flops.bf16", 7.7e14, "max of torch.matmul and tritonblas.matmul"),
             cal.Measurement("matrix.peak_flops.fp16", 7.5e14, "max of torch.matmul and tritonblas.matmul"),
             cal.Measurement("matrix.peak_flops.fp8", 1.3e15, "torch._scaled_mm")]
    kw = dict(device="cuda:0 NVIDIA H200 (sm_90, 132 SMs, 140 GiB)", date=date, values=tuple(values),
              rates=tuple(rates), clock_detail="SM clock: clock64 spin kernel alone: 1980 MHz")
    kw.update(over)
    return cal.Measurements(**kw)


def test_profile_from_fake_measurements_is_valid_and_sourced(tmp_path):
    base = origami.load_profile("h200")
    raw, dropped = cal.build_profile(base, _fake())
    assert dropped == []
    hw = cal.write_profile(render_profile(raw, ["a header line"]), tmp_path / "cal.yaml")
    again = origami.load_profile(tmp_path / "cal.yaml")
    assert again == hw
    for path in ("compute.compute_units", "memory.hbm_bytes_per_s", "memory.l2_bytes_per_s", "launch_overhead_ns",
                 "compute.sustained_clock_mhz", "matrix.peak_flops.fp16", "matrix.peak_flops.fp8"):
        src = hw.sources[path]
        assert STAMP_RE.match(src) and "2026-01-02" in src, (path, src)
        assert "h200 had " in src, src  # the base (datasheet) value stays on record
    assert "4.8e+12" in hw.sources["memory.hbm_bytes_per_s"] and "datasheet" in hw.sources["memory.hbm_bytes_per_s"]
    assert hw.memory["hbm_bytes_per_s"] == 4.21e12 and hw.launch_overhead_ns == 4200.0
    # the model computes with what this GPU sustained, per dtype; bf16's datasheet peak stays
    for key, rate in (("bf16", 7.7e14), ("fp16", 7.5e14), ("fp8", 1.3e15)):
        assert abs(hw.sustained_peak_flops(key) / rate - 1) < 1e-3, key
    assert hw.matrix_peak_flops["bf16"] == base.matrix_peak_flops["bf16"]
    assert hw.sources["matrix.peak_flops"] == base.sources["matrix.peak_flops"]
    assert "1980 MHz" in hw.sources["compute.sustained_clock_mhz"]
    # unmeasured fields keep value and source
    for path in ("memory.llc_bytes", "compute.boost_clock_mhz", "model"):
        assert hw.sources[path] == base.sources[path]
    assert dict(hw.model) == dict(base.model) and hw.matrix_peak_flops["tf32"] == base.matrix_peak_flops["tf32"]
    assert (tmp_path / "cal.yaml").read_text().startswith("# a header line\n")


def test_implausible_measurement_is_dropped_and_bf16_above_datasheet_caps_the_clock():
    base = origami.load_profile("h200")
    m = _fake(values=(cal.Measurement("memory.l2_bytes_per_s", 6.0e14, "plateau"),),
              rates=(cal.Measurement("matrix.peak_flops.bf16", 1.05e15, "torch.matmul"),))
    raw, dropped = cal.build_profile(base, m)
    assert len(dropped) == 1 and dropped[0].startswith("memory.l2_bytes_per_s") and "plausible" in dropped[0]
    hw = check_profile_text(render_profile(raw))
    assert hw.memory["l2_bytes_per_s"] == base.memory["l2_bytes_per_s"]
    assert hw.compute["sustained_clock_mhz"] == hw.compute["boost_clock_mhz"]
    assert abs(hw.sustained_peak_flops("bf16") / 1.05e15 - 1) < 1e-3
    assert "capped" in hw.sources["compute.sustained_clock_mhz"]


def test_no_measurements_reproduces_the_base():
    base = origami.load_profile("h200")
    raw, _ = cal.build_profile(base, None)
    hw = check_profile_text(render_profile(raw))
    assert hw.to_yaml_dict() == base.to_yaml_dict()
    raw, _ = cal.build_profile(origami.load_profile("mi300x"), None, name="mygpu")
    assert check_profile_text(render_profile(raw)).name == "mygpu"


def test_atomic_write_failure_leaves_the_old_file(tmp_path, monkeypatch):
    from tritonblas import tables

    target = tmp_path / "p.yaml"
    target.write_text("old contents\n")
    raw, _ = cal.build_profile(origami.load_profile("h200"), _fake())
    text = render_profile(raw)
    real_write = tables.AtomicFile.write

    def half_then_fail(self, data):
        real_write(self, data[: len(data) // 2])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(tables.AtomicFile, "write", half_then_fail)
    with pytest.raises(OSError):
        cal.write_profile(text, target)
    assert target.read_text() == "old contents\n"
    assert [p.name for p in tmp_path.iterdir()] == ["p.yaml"]  # no temp file left behind
    monkeypatch.undo()
    with pytest.raises(origami.ProfileError):  # an invalid profile never reaches the file
        cal.write_profile(text.replace("compute_units: 132", "compute_units: -4"), target)
    assert target.read_text() == "old contents\n"
    cal.write_profile(text, target)
    assert origami.load_profile(target).memory["hbm_bytes_per_s"] == 4.21e12


def test_l2_knee():
    mib = 1 << 20
    curve = [(2 * mib, 9e12), (8 * mib, 1.1e13), (16 * mib, 1.05e13), (32 * mib, 1.0e13), (48 * mib, 8e12),
             (64 * mib, 4.5e12), (96 * mib, 3.8e12), (256 * mib, 3.6e12)]
    plateau, floor, knee = cal.l2_knee(curve)
    assert (plateau, floor, knee) == (1.1e13, 3.6e12, 48 * mib)
    assert cal.l2_knee([(2 * mib, 3.7e12), (256 * mib, 3.6e12)])[2] is None
    assert cal.l2_knee([(2 * mib, float("nan")), (8 * mib, 1e13), (256 * mib, 3e12)])[2] == 8 * mib
    with pytest.raises(ValueError):
        cal.l2_knee([(2 * mib, float("nan"))])


# --- the GPU code paths, run on CPU (Triton interpreter; do_bench and the device patched out) ----
def _wall_bench(fn, rep_ms):
    import time

    fn()
    t = time.perf_counter()
    fn()
    return (time.perf_counter() - t) * 1e3 + 1e-6


@no_gpu_only
def test_measurement_helpers_run_under_the_interpreter(monkeypatch):
    """_matrix_rates (torch and our kernels, every dtype incl. fp8), _l2_curve and _bench_one on CPU:
    catches API slips in the GPU code in CI (the timings themselves mean nothing here)."""
    from origami import GemmProblem

    monkeypatch.setattr(_measure, "do_bench", _wall_bench)
    monkeypatch.setattr(cal, "MATRIX_SIZE", 64)
    monkeypatch.setattr(cal, "_READ_PROGRAMS_PER_SM", 1)
    base, cpu, logs = origami.load_profile("h200"), torch.device("cpu"), []
    rates, fn, ms = cal._matrix_rates(torch, cpu, base, (9, 0), False, 10, logs.append)
    assert [r.path for r in rates] == [f"matrix.peak_flops.{k}" for k in ("bf16", "fp16", "tf32", "fp8")], logs
    assert all(r.value > 0 and "tritonblas" in r.method for r in rates) and callable(fn) and ms > 0
    curve = cal._l2_curve(torch, cpu, 2, (1, 2), 1 << 20, 10, logs.append)
    assert [s for s, _ in curve] == [1 << 20, 2 << 20]
    for p in (GemmProblem(64, 48, 32, "bf16", "bf16", "bf16", "T", "N"),
              GemmProblem(64, 64, 64, "tf32", "tf32", "fp32"),
              GemmProblem(32, 32, 64, "fp16", "fp16", "fp16", "N", "T", batch=2),
              GemmProblem(64, 64, 64, "fp8_e4m3", "fp8_e4m3", "bf16")):
        with _measure.with_tf32(torch, p.a_dtype.value == "tf32"):
            problem, cfg, t_ours, t_torch, pred_ns, rel = bench._bench_one(torch, p, base, "h200", cpu, 10)
        assert (problem.m, problem.n, problem.k, problem.batch) == (p.m, p.n, p.k, p.batch)
        assert problem.a_dtype == p.a_dtype and t_ours > 0 and t_torch > 0 and pred_ns > 0
        assert rel < 2e-2, (p.describe(), rel)


H200_PROPS = dict(name="NVIDIA H200", major=9, minor=0, multi_processor_count=132, total_memory=150754820096,
                  L2_cache_size=62914560, shared_memory_per_multiprocessor=233472,
                  shared_memory_per_block_optin=232448, regs_per_multiprocessor=65536,
                  max_threads_per_multi_processor=2048, warp_size=32, clock_rate=1980000, uuid="")


@no_gpu_only
def test_calibrate_command_with_a_faked_device(tmp_path, monkeypatch, capsys):
    """The whole `calibrate -o ... --fit ...` glue in-process: device checks, measure()'s steps (the
    device-bound ones replaced by fakes, one of them failing), profile, fit, summary."""
    import contextlib
    from types import SimpleNamespace

    from tritonblas import _device, cli

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "device", lambda i: contextlib.nullcontext())
    monkeypatch.setattr(_device, "_properties", lambda i: SimpleNamespace(**H200_PROPS))
    monkeypatch.setattr(cal, "_spin_clock_mhz", lambda torch, cycles: 1980.0)
    monkeypatch.setattr(cal, "_hbm_copy", lambda torch, device, n, rep: (4.3e12, n))
    mib = 1 << 20
    monkeypatch.setattr(cal, "_l2_curve", lambda *a: [(2 * mib, 1.1e13), (48 * mib, 9e12), (256 * mib, 3.7e12)])
    rates = [cal.Measurement("matrix.peak_flops.bf16", 7.8e14, "fake"),
             cal.Measurement("matrix.peak_flops.fp8", 1.3e15, "fake")]
    monkeypatch.setattr(cal, "_matrix_rates", lambda *a: (rates, lambda: None, 1.4))
    monkeypatch.setattr(cal, "_loaded_clock_mhz", lambda *a: 1750.0)

    def broken(*a):
        raise RuntimeError("launch failed")

    monkeypatch.setattr(cal, "_launch_overhead", broken)
    out = tmp_path / "h200-cal.yaml"
    rc = cli.main(["calibrate", "--quick", "-o", str(out), "--fit", str(SWEEP), "--rounds", "1", "--name", "h200-mine"])
    cap = capsys.readouterr()
    assert rc == 0, cap.err
    assert "launch failed" in cap.err and f"wrote {out}" in cap.out
    hw = origami.load_profile(out)
    base = origami.load_profile("h200")
    assert hw.name == "h200-mine" and hw.memory["hbm_bytes_per_s"] == 4.3e12 and hw.memory["l2_bytes_per_s"] == 1.1e13
    assert abs(hw.sustained_peak_flops("bf16") / 7.8e14 - 1) < 1e-3
    assert abs(hw.sustained_peak_flops("fp8") / 1.3e15 - 1) < 1e-3
    assert hw.launch_overhead_ns == base.launch_overhead_ns  # its step failed: the base value and source stay
    assert hw.sources["launch_overhead_ns"] == base.sources["launch_overhead_ns"]
    for path in ("memory.hbm_bytes_per_s", "memory.l2_bytes_per_s", "compute.compute_units",
                 "compute.smem_bytes_per_cu", "memory.l2_bytes_per_chiplet", "compute.sustained_clock_mhz",
                 "matrix.peak_flops.fp8"):
        assert STAMP_RE.match(hw.sources[path]), (path, hw.sources[path])
    assert "knee at 48 MiB" in hw.sources["memory.l2_bytes_per_chiplet"]
    clock_src = hw.sources["compute.sustained_clock_mhz"]
    assert "1980 MHz" in clock_src and "1750 MHz" in clock_src
    assert ("fit: accepted" in cap.out) != ("fit: rejected" in cap.out)
    text = out.read_text()
    assert text.startswith("# h200-mine: written ") and "# device: cuda:0 NVIDIA H200" in text

    # a base of another arch is refused before anything is measured
    monkeypatch.setattr(cal, "measure", broken)
    assert cli.main(["calibrate", "--base", "mi300x", "-o", str(tmp_path / "x.yaml")]) == 2
    assert "is for gfx942" in capsys.readouterr().err and not (tmp_path / "x.yaml").exists()


def test_fit_of_named_params_changes_only_those(tmp_path):
    """``--params`` fits only the named model parameters; the others are written as they were, and
    several sweep CSVs are pooled (a shape in two files keeps both files' configs)."""
    out = tmp_path / "fit.yaml"
    r = run_cli("calibrate", "--no-measure", "--base", "h200", "--fit", str(SWEEP), str(SWEEP), "--params",
                "streamk_efficiency", "fixup_ns", "-o", str(out), "--rounds", "1", timeout=600)
    assert r.returncode == 0, r.stderr
    assert "2 sweeps (calib.csv, calib.csv)" in r.stdout + r.stderr
    before = origami.load_profile("h200").model
    if out.exists():
        after = origami.load_profile(str(out)).model
        changed = {k for k in before if before[k] != after[k]}
        assert changed <= {"streamk_efficiency", "fixup_ns"}, changed
    else:  # a rejected fit writes the base back only with -o; here it must still say so
        assert "rejected" in r.stdout + r.stderr


def test_a_fit_on_a_profile_without_ws_efficiency_writes_none():
    """``model.ws_efficiency`` is optional (default 0) and a profile leaves it out at 0
    (``HardwareProfile.to_yaml_dict``); ``fit_model``'s params hold every model parameter, so
    ``apply_fit`` wrote ``ws_efficiency: 0.0`` into every fitted profile of a base without it.
    Reproduction: ``calibrate --no-measure --base h100 --fit calib.csv --heldout-sweeps ... --params
    mma_efficiency`` wrote ``ws_efficiency: 0.0`` under ``model:`` (h100 has had h200's terms, ws
    included, since 2026-12-05: b200 is the shipped profile without it)."""
    data = heldout.read_sweep_file(SWEEP)
    hw = origami.load_profile("b200")
    assert "ws_efficiency" not in hw.to_yaml_dict()["model"]
    outcome, params = cal.fit_model(hw, data[:4], heldout=data[4:8], heldout_source="stand-in", rounds=1,
                                    params=["fixup_ns"])
    raw = cal.apply_fit(hw.to_yaml_dict(), outcome, params, "2026-12-02", hw.path)
    assert "ws_efficiency" not in raw["model"]
    text = render_profile(raw)
    assert "ws_efficiency" not in text
    assert check_profile_text(text, "b200.yaml").model["ws_efficiency"] == 0.0
    # a fitted value is written
    ws = origami.load_profile("h200")
    outcome, params = cal.fit_model(ws, data[:4], heldout=data[4:8], heldout_source="stand-in", rounds=1,
                                    params=["fixup_ns"])
    assert cal.apply_fit(ws.to_yaml_dict(), outcome, params, "2026-12-02", ws.path)["model"]["ws_efficiency"] == 1.15

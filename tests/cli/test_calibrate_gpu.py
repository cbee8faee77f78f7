"""``calibrate`` and ``bench`` on a real GPU (run with ``-m gpu`` on the H200; skipped without CUDA).

``calibrate --quick`` must finish well inside 3 minutes and give a loadable profile whose measured
values are plausible for the device (ranges for an H200 where the device is one); ``bench`` must run
our pick and torch for a few dtypes and layouts. Each test has a timeout.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

import origami

ROOT = Path(__file__).resolve().parents[2]
STAMP_RE = re.compile(r"^measured \d{4}-\d{2}-\d{2} by tritonblas calibrate \(.+\)")
gpu = pytest.mark.gpu


def run_cli(*args: str, timeout: float) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRITONBLAS_", "PYTEST_"))}
    env["PYTHONPATH"] = str(ROOT)
    env.pop("TRITON_INTERPRET", None)
    return subprocess.run([sys.executable, "-m", "tritonblas", *args], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=timeout)


def _props():
    import torch

    return torch.cuda.get_device_properties(torch.cuda.current_device())


@gpu
@pytest.mark.timeout(300)
def test_calibrate_quick_writes_a_plausible_profile(tmp_path):
    out = tmp_path / "calibrated.yaml"
    t = time.perf_counter()
    r = run_cli("calibrate", "--quick", "-o", str(out), timeout=240)
    elapsed = time.perf_counter() - t
    print(r.stdout, r.stderr[-4000:], sep="\n")
    assert r.returncode == 0, r.stderr[-4000:]
    assert elapsed < 180, f"calibrate --quick took {elapsed:.0f} s"
    hw = origami.load_profile(out)
    props = _props()
    assert hw.compute_units == props.multi_processor_count
    for path in ("compute.compute_units", "memory.hbm_bytes_per_s", "memory.l2_bytes_per_s",
                 "compute.sustained_clock_mhz", "launch_overhead_ns"):
        assert STAMP_RE.match(hw.sources[path]), (path, hw.sources[path])
    hbm, l2 = hw.memory["hbm_bytes_per_s"], hw.memory["l2_bytes_per_s"]
    bf16 = hw.sustained_peak_flops("bf16")
    assert l2 > hbm, (l2, hbm)
    assert 100 <= hw.launch_overhead_ns <= 100_000
    text = out.read_text()
    clock = re.search(r"clock64 spin kernel alone: (\d+) MHz", text)
    assert clock and 800 <= int(clock.group(1)) <= 2500, text[:3000]
    if "H200" in props.name:
        assert 2e12 <= hbm <= 5.5e12, hbm
        assert 4e14 <= bf16 <= 1.1e15, bf16
    assert f"wrote {out}" in r.stdout


@gpu
@pytest.mark.timeout(300)
@pytest.mark.parametrize("args", [
    ("1024", "1024", "1024"),
    ("1000", "1000", "1000", "--dtype", "fp16", "--a-layout", "T"),
    ("2048", "2048", "2048", "--dtype", "tf32", "--b-layout", "T"),
    ("2048", "2048", "2048", "--dtype", "fp8_e4m3"),
    ("256", "512", "1024", "--batch", "3", "--profile", "h200"),
])
def test_bench_runs(args):
    r = run_cli("bench", *args, "--rep", "30", timeout=240)
    print(r.stdout, r.stderr[-2000:], sep="\n")
    assert r.returncode == 0, (r.stdout, r.stderr[-4000:])
    assert f"{args[0]}x{args[1]}x{args[2]}" in r.stdout
    assert "ours/torch" in r.stdout


@gpu
@pytest.mark.timeout(300)
def test_bench_shapes_file(tmp_path):
    shapes = tmp_path / "shapes.yaml"
    shapes.write_text("- {m: 512, n: 512, k: 512}\n- {m: 16, n: 4096, k: 4096}\n")
    r = run_cli("bench", "--shapes", str(shapes), "--rep", "30", timeout=240)
    assert r.returncode == 0, (r.stdout, r.stderr[-4000:])
    assert "512x512x512" in r.stdout and "16x4096x4096" in r.stdout

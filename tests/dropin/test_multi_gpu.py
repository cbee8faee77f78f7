"""Two GPUs (issue 8; run with `-m gpu` on the nvidia-h200-x2 machine; skipped with fewer GPUs).

1. Tensors on cuda:1 while the current device is cuda:0: correct results, launched on cuda:1's
   current stream (proved by ordering behind a sleeping kernel on a user stream), and no context
   and no allocation on cuda:0 (a fresh process, so nothing else touched cuda:0 first).
2. Operands on different devices raise RuntimeError naming both devices; nothing is launched or
   allocated.
3. Plan and workspace caches are per device: 1000 calls alternating between the GPUs (data-parallel
   and Stream-K, which uses the workspace) are all correct, and each device got its own plan and
   workspace on its own memory.
4. ``torchrun --nproc-per-node 2 benchmarks/sweep.py`` shards shapes over both GPUs (NCCL); the
   merged CSV has the same rows as a single-GPU run, and the timings agree within noise.
"""

from __future__ import annotations

import csv
import gc
import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

import tritonblas
from tritonblas import dispatch
from tritonblas import plan as _plan

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))  # tests/_check.py
from _check import assert_gemm_close, reference  # noqa: E402  (the one comparator, RELIABILITY §4.2)

TWO_GPUS = pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.device_count() < 2,
                              reason="needs 2 GPUs (the nvidia-h200-x2 machine)")
pytestmark = [pytest.mark.gpu, TWO_GPUS]

ALT_SHAPE = (256, 192, 2048)


def _streamk():
    from origami import TileConfig

    return TileConfig("streamk", 64, 64, 64, 4, 3, grid=10)


def _rand(*shape, dtype=torch.bfloat16, device="cuda"):
    return torch.randn(shape, device=device, dtype=torch.float32).to(dtype)


def _env() -> dict:
    return dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))


# --- 1. the second GPU alone ------------------------------------------------------------------
_CHILD = textwrap.dedent("""
    import torch, tritonblas
    a = torch.randn(300, 200).half().to("cuda:1")
    b = torch.randn(200, 170).half().to("cuda:1")
    bias = torch.randn(170).half().to("cuda:1")
    assert torch.cuda.current_device() == 0
    before = torch._C._cuda_hasPrimaryContext(0)
    out = tritonblas.matmul(a, b)
    out2 = tritonblas.addmm(bias, a, b)
    out3 = tritonblas.matmul(a, b, config=__import__("origami").TileConfig("streamk", 64, 64, 64, 4, 3, grid=10))
    torch.cuda.synchronize(1)
    ctx0 = torch._C._cuda_hasPrimaryContext(0)
    mem0 = torch.cuda.memory_allocated(0) + torch.cuda.memory_reserved(0)
    ref = (a.double() @ b.double())
    err = ((out.double() - ref).norm() / ref.norm()).item()
    err2 = ((out2.double() - ref - bias.double()).norm() / ref.norm()).item()
    err3 = ((out3.double() - ref).norm() / ref.norm()).item()
    print(out.device, out3.device, err, err2, err3, before, ctx0, mem0)
""")


@pytest.mark.timeout(600)
def test_tensors_on_the_second_gpu_touch_nothing_on_the_first():
    r = subprocess.run([sys.executable, "-c", _CHILD], cwd=ROOT, env=_env(), capture_output=True, text=True,
                       timeout=500)
    assert r.returncode == 0, r.stderr[-3000:]
    dev, dev3, err, err2, err3, before, ctx0, mem0 = r.stdout.split()[-8:]
    assert dev == "cuda:1" and dev3 == "cuda:1"
    assert float(err) < 2e-3 and float(err2) < 2e-3 and float(err3) < 2e-3, (err, err2, err3)
    assert before == "False", "placing the inputs on cuda:1 already created a context on cuda:0 (torch itself)"
    assert ctx0 == "False", "tritonblas created a CUDA context on cuda:0 for tensors on cuda:1"
    assert int(mem0) == 0, f"tritonblas allocated {mem0} bytes on cuda:0 for tensors on cuda:1"


@pytest.mark.timeout(600)
@pytest.mark.parametrize("forced", [None, "streamk"])
def test_launches_on_the_second_gpus_current_stream(forced):
    """cuda:1's current stream is a user stream that sleeps, then writes the inputs; the current
    device stays cuda:0. Had the kernel gone to another stream, it would read the inputs before the
    writes (zeros) and the comparison would fail."""
    config = _streamk() if forced else None
    m, n, k = ALT_SHAPE
    torch.cuda.set_device(0)
    s1 = torch.cuda.Stream(device=1)
    a = torch.zeros(m, k, device="cuda:1", dtype=torch.bfloat16)
    b = torch.zeros(k, n, device="cuda:1", dtype=torch.bfloat16)
    src_a, src_b = _rand(m, k, device="cuda:1"), _rand(k, n, device="cuda:1")
    ref, mag, _ = reference(src_a, src_b)
    tritonblas.matmul(src_a, src_b, config=config)  # compile outside the timed race
    torch.cuda.synchronize(1)
    prev = torch.cuda.current_stream(1)
    try:
        torch.cuda.set_stream(s1)  # sets cuda:1's current stream (and the current device: reset below)
        torch.cuda.set_device(0)
        assert torch.cuda.current_device() == 0 and torch.cuda.current_stream(1) == s1
        for _ in range(5):
            with torch.cuda.device(1):
                a.zero_()
                b.zero_()
                torch.cuda._sleep(2_000_000)
                a.copy_(src_a)
                b.copy_(src_b)
            out = tritonblas.matmul(a, b, config=config)
            assert torch.cuda.current_device() == 0
            s1.synchronize()
            assert_gemm_close(out, ref, mag, k)
    finally:
        torch.cuda.set_stream(prev)
        torch.cuda.set_device(0)


# --- 2. operands on two GPUs --------------------------------------------------------------------
def _mixed_calls():
    a0, b1 = _rand(30, 20, device="cuda:0"), _rand(20, 10, device="cuda:1")
    a1, b1b = _rand(30, 20, device="cuda:1"), _rand(20, 10, device="cuda:1")
    c0 = _rand(30, 10, device="cuda:0")
    w0 = _rand(10, 20, device="cuda:0")
    w1 = _rand(10, 20, device="cuda:1")
    bias0 = _rand(10, device="cuda:0")
    out0 = torch.empty(30, 10, device="cuda:0", dtype=torch.bfloat16)
    return {
        "matmul": lambda: tritonblas.matmul(a0, b1),
        "bmm": lambda: tritonblas.bmm(a0[None], b1[None]),
        "addmm_c": lambda: tritonblas.addmm(c0, a1, b1b),
        "linear_w": lambda: tritonblas.linear(a1, w0),
        "linear_bias": lambda: tritonblas.linear(a1, w1, bias0),
        "matmul_out": lambda: tritonblas.matmul(a1, b1b, out=out0),
    }


@pytest.mark.parametrize("case", ["matmul", "bmm", "addmm_c", "linear_w", "linear_bias", "matmul_out"])
def test_operands_on_two_gpus_raise_and_launch_nothing(case):
    call = _mixed_calls()[case]
    gc.collect()  # tensors of earlier tests held by reference cycles must not be freed mid-call
    torch.cuda.synchronize(0)
    torch.cuda.synchronize(1)
    launches = dispatch.stats()["launches"]
    mem = (torch.cuda.memory_allocated(0), torch.cuda.memory_allocated(1))
    with pytest.raises(RuntimeError, match=r"cuda:[01].*cuda:[01]") as err:
        call()
    msg = str(err.value)
    del err
    assert "cuda:0" in msg and "cuda:1" in msg, msg
    assert dispatch.stats()["launches"] == launches, "a kernel was launched before the device check"
    after = (torch.cuda.memory_allocated(0), torch.cuda.memory_allocated(1))
    assert after[0] <= mem[0] and after[1] <= mem[1], f"allocated during a failing call: {mem} -> {after}"


# --- 3. per-device caches ----------------------------------------------------------------------
@pytest.mark.timeout(900)
def test_alternating_between_gpus_1000_calls():
    m, n, k = ALT_SHAPE
    torch.manual_seed(0)
    sets = {}
    for dev in (0, 1):
        sets[dev] = []
        for _ in range(3):  # several input sets per device, so a stale or cross-device read shows
            a, b = _rand(m, k, device=f"cuda:{dev}"), _rand(k, n, device=f"cuda:{dev}")
            sets[dev].append((a, b, *reference(a, b)[:2]))
    tritonblas.clear_caches()
    for i in range(1000):
        dev = i % 2
        a, b, ref, mag = sets[dev][(i // 2) % 3]
        config = _streamk() if (i // 2) % 2 else None
        out = tritonblas.matmul(a, b, config=config)
        assert out.device == a.device
        assert_gemm_close(out, ref, mag, k)
    new_keys = [key for key in dispatch._PLANS if (key.m, key.n, key.k) == ALT_SHAPE]
    assert {key.device for key in new_keys} == {0, 1}, new_keys
    assert {(key.device, key.config is not None) for key in new_keys} == {(0, False), (0, True), (1, False), (1, True)}
    ws = {key[1]: tensors for key, tensors in _plan.WORKSPACES.items() if key[0] == "cuda"}
    assert {0, 1} <= set(ws), list(_plan.WORKSPACES)
    for dev, (partials, counters) in ws.items():
        assert partials.device == torch.device("cuda", dev) and counters.device == torch.device("cuda", dev)
        assert int(counters.count_nonzero()) == 0, f"cuda:{dev}: Stream-K counters not re-armed"


# --- 4. the sweep over both GPUs ------------------------------------------------------------------
SWEEP_SHAPES = """\
- {m: 2048, n: 2048, k: 2048}
- {m: 4096, n: 1000, k: 1536}
- {m: 64, n: 4096, k: 4096}
"""


def _sweep(tmp: Path, out: Path, ranks: int) -> dict:
    launcher = [sys.executable] if ranks == 1 else [sys.executable, "-m", "torch.distributed.run", "--standalone",
                                                     "--nproc-per-node", str(ranks)]
    cmd = [*launcher, str(ROOT / "benchmarks" / "sweep.py"), "--shapes", str(tmp / "shapes.yaml"),
           "--max-configs", "4", "--out", str(out)]
    r = subprocess.run(cmd, cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=800)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    with out.open() as f:
        rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
    keyed = {}
    for row in rows:
        key = tuple(v for c, v in row.items() if c not in ("median_ms", "error", "predicted_ns"))
        assert key not in keyed, f"duplicate row {key}"
        keyed[key] = row
    return keyed


@pytest.mark.timeout(1200)
def test_sweep_sharded_over_two_gpus_matches_one_gpu(tmp_path):
    (tmp_path / "shapes.yaml").write_text(SWEEP_SHAPES)
    single = _sweep(tmp_path, tmp_path / "single.csv", 1)
    merged = _sweep(tmp_path, tmp_path / "merged.csv", 2)
    assert set(single) == set(merged), "the sharded sweep timed other (shape, config) rows"
    assert not list(tmp_path.glob("merged.rank*.csv")), "shard files left behind"
    ratios, best = [], {}
    for key, r1 in single.items():
        r2 = merged[key]
        assert r1["predicted_ns"] == r2["predicted_ns"]
        assert bool(r1["median_ms"]) == bool(r2["median_ms"]), (key, r1["error"], r2["error"])
        if r1["median_ms"]:
            t1, t2 = float(r1["median_ms"]), float(r2["median_ms"])
            assert t1 > 0 and t2 > 0
            ratios.append(math.log(t2 / t1))
            shape = key[:4]
            b1, b2 = best.get(shape, (math.inf, math.inf))
            best[shape] = (min(b1, t1), min(b2, t2))
    assert len(ratios) >= 10, "too few timed rows to compare"
    ratios.sort()
    median = ratios[len(ratios) // 2]
    assert abs(median) < 0.05, f"sharded timings differ from single-GPU ones by {math.exp(median):.3f}x (median)"
    within = sum(abs(x) < math.log(1.15) for x in ratios) / len(ratios)
    assert within >= 0.9, f"only {within:.0%} of rows agree within 15%"
    for shape, (b1, b2) in best.items():
        assert abs(math.log(b2 / b1)) < math.log(1.10), f"{shape}: best {b1:.4f} ms (1 GPU) vs {b2:.4f} ms (2 GPUs)"

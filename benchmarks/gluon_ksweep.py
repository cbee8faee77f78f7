#!/usr/bin/env python
"""Where the Gluon kernel's time goes on shapes with few K-steps per program (H200 diagnosis).

    PYTHONPATH=$PWD python3 benchmarks/gluon_ksweep.py

Measured 2026-12-01 (benchmarks/results/gluon_probe_h200_*.csv): 0.77-0.80 us per 128x256x64 K-step
per program when a program runs >= ~190 K-steps (4096^3, 8192^3: at or above cuBLAS), but
4096x1024x4096 (one tile per program, 64 K-steps) takes 0.14-0.19 ms against cuBLAS's 0.05 and
4096x4096x1024 0.16 ms. Here: CUDA-graph replays (no host time) of the kernel at M = N = 4096 and
M = 4096, N = 1024 for K from 64 to 8192, and at fixed K = 4096 for grids of 1 to 132 programs,
printing us per launch, so a fixed cost and a per-step cost separate.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402


def graph_us(fn, reps=20):
    fn()
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(reps):
            fn()
    g.replay()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(5):
        start.record()
        g.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1000 / reps)
    return sorted(times)[len(times) // 2]


def main() -> int:
    from tritonblas.kernels.gluon_hopper import gluon_matmul

    dt = torch.bfloat16
    print("shape, gluon_us (128x256x64 s3), torch_us, programs")
    for m, n in ((4096, 4096), (4096, 1024)):
        for k in (64, 256, 1024, 4096, 8192):
            a = torch.randn(m, k, device="cuda", dtype=dt)
            b = torch.randn(k, n, device="cuda", dtype=dt)
            out = torch.empty(m, n, device="cuda", dtype=dt)
            g = graph_us(lambda: gluon_matmul(a, b, out))
            t = graph_us(lambda: torch.matmul(a, b, out=out))
            print(f"{m}x{n}x{k}, {g:.1f}, {t:.1f}, {min(132, (m // 128) * (n // 256))}", flush=True)
    m, n, k = 4096, 1024, 4096
    a = torch.randn(m, k, device="cuda", dtype=dt)
    b = torch.randn(k, n, device="cuda", dtype=dt)
    out = torch.empty(m, n, device="cuda", dtype=dt)
    for sms in (1, 8, 32, 64, 128):
        g = graph_us(lambda: gluon_matmul(a, b, out, num_sms=sms), reps=5)
        print(f"{m}x{n}x{k} num_sms={sms}: {g:.1f} us ({-(-128 // sms)} tiles per program)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python
"""Host time per call of the Gluon kernel's entry points on the H200 (diagnosis of the
``TRITONBLAS_GLUON=1`` models run, 2026-12-01: llama3.2-1b prefill 0.29x with ~230 us per GEMM).

    PYTHONPATH=$PWD python3 benchmarks/gluon_host.py

For one bf16 4096x1024x4096 GEMM: the mean wall time per call of N back-to-back calls with one
synchronisation at the end (host-bound when above the GPU time), for ``gluon_matmul`` (cold key,
then warm), ``tritonblas.matmul`` with and without ``TRITONBLAS_GLUON=1``, ``F.linear`` on a 3-D
activation inside ``enable()``, and ``torch.matmul``; and whether the warm key bound the raw launcher.
Then the same entries at 2048x1024x64, whose GPU time (a few us) is under any entry's host time, so
the numbers there are host time (it gives 128 tiles of 128x128, enough SMs for the experiment to
take it: ``gluon_route.GLUON_FILL``; the 256x256x64 of the 76bc61f/a8a7db8 runs no longer
qualifies); and the functions the ``TRITONBLAS_GLUON=1`` path spends it in
(cProfile, 2000 calls, top 15 by own time). At 4096x1024x4096 on the H200 (2026-12-01, 870c48f)
``tritonblas.matmul`` took 89 us per call with the experiment on against 47 us off.
"""

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402


def per_call_us(fn, n=200):
    fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / n * 1e6


def main() -> int:
    # our entry points under enable(), not the vendor-aligned default's hand-over to torch (NVIDIA GPUs)
    from tritonblas import settings

    os.environ.setdefault(settings.ENV_VENDOR_ALIGNED, "0")
    for m, n, k in ((4096, 1024, 4096), (2048, 1024, 64)):
        entries(m, n, k)
    for tokens in (4096, 2048):
        layers(tokens, 1024)
    profile_gluon_path(2048, 1024, 64)
    return 0


def layers(tokens: int, hidden: int, count: int = 24) -> None:
    """F.linear with bias over ``count`` distinct (hidden, hidden) weights (BERT-large's attention
    projections: one warm key, a new B and bias address per layer), per call, in enable() with and
    without TRITONBLAS_GLUON=1, and torch; and whether the Gluon entry holds a bound raw launch."""
    import tritonblas
    from tritonblas import dispatch

    x = torch.randn(tokens // 512 or 1, min(tokens, 512), hidden, device="cuda", dtype=torch.bfloat16)
    ws = [torch.randn(hidden, hidden, device="cuda", dtype=torch.bfloat16) for _ in range(count)]
    bs = [torch.randn(hidden, device="cuda", dtype=torch.bfloat16) for _ in range(count)]

    def run():
        for w, b in zip(ws, bs):
            F.linear(x, w, b)

    rows = {"torch": per_call_us(run, n=20) / count}
    with torch.no_grad(), tritonblas.enable():
        rows["enable()"] = per_call_us(run, n=20) / count
        os.environ["TRITONBLAS_GLUON"] = "1"
        try:
            rows["enable(), TRITONBLAS_GLUON=1"] = per_call_us(run, n=20) / count
            f = dispatch.fast_lookup(x.reshape(-1, hidden), ws[0].t(), None, bs[0])
        finally:
            os.environ.pop("TRITONBLAS_GLUON")
    print(f"== F.linear + bias, {count} weights, x {tuple(x.shape)}: entry {type(f).__name__}, "
          f"raw bound: {getattr(f, 'warm', None) is not None}")
    for name, us in rows.items():
        print(f"{name:48s} {us:8.1f} us/call")


def profile_gluon_path(m: int, n: int, k: int, calls: int = 2000) -> None:
    """cProfile of ``tritonblas.matmul`` with ``TRITONBLAS_GLUON=1`` at a host-bound shape."""
    import cProfile
    import pstats

    import tritonblas

    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
    os.environ["TRITONBLAS_GLUON"] = "1"
    try:
        for _ in range(3):
            tritonblas.matmul(a, b)
        torch.cuda.synchronize()
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(calls):
            tritonblas.matmul(a, b)
        prof.disable()
        torch.cuda.synchronize()
    finally:
        os.environ.pop("TRITONBLAS_GLUON")
    print(f"cProfile of {calls} tritonblas.matmul calls, TRITONBLAS_GLUON=1, {m}x{n}x{k} (own time):")
    pstats.Stats(prof).sort_stats("tottime").print_stats(15)


def entries(m: int, n: int, k: int) -> None:
    import tritonblas
    from tritonblas import dispatch
    from tritonblas.kernels import gluon_hopper as G

    print(f"== {m}x{n}x{k} bf16")
    dispatch.reset_stats()
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    out = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    rows = {}
    rows["torch.matmul"] = per_call_us(lambda: torch.matmul(a, b))
    rows["gluon_matmul (warm key)"] = per_call_us(lambda: G.gluon_matmul(a, b, out))
    print("warm keys bound:", len(G._WARM))
    G._WARM.clear()
    rows["gluon_matmul (raw launcher off)"] = per_call_us(lambda: (G._WARM.clear(), G.gluon_matmul(a, b, out)), n=50)
    rows["tritonblas.matmul"] = per_call_us(lambda: tritonblas.matmul(a, b))
    os.environ["TRITONBLAS_GLUON"] = "1"
    print("gluon_eligible:", dispatch.gluon_eligible(a, b, out))
    rows["tritonblas.matmul, TRITONBLAS_GLUON=1"] = per_call_us(lambda: tritonblas.matmul(a, b))
    x3 = a.view(4, m // 4, k)
    with torch.no_grad(), tritonblas.enable():
        rows["F.linear 3-D in enable(), TRITONBLAS_GLUON=1"] = per_call_us(lambda: F.linear(x3, w))
    print("stats:", dispatch.stats())
    os.environ.pop("TRITONBLAS_GLUON")
    with torch.no_grad(), tritonblas.enable():
        rows["F.linear 3-D in enable()"] = per_call_us(lambda: F.linear(x3, w))
    for name, us in rows.items():
        print(f"{name:48s} {us:8.1f} us/call")


if __name__ == "__main__":
    sys.exit(main())

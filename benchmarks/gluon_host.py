#!/usr/bin/env python
"""Host time per call of the Gluon kernel's entry points on the H200 (diagnosis of the
``TRITONBLAS_GLUON=1`` models run, 2026-12-01: llama3.2-1b prefill 0.29x with ~230 us per GEMM).

    PYTHONPATH=$PWD python3 benchmarks/gluon_host.py

For one bf16 4096x1024x4096 GEMM: the mean wall time per call of N back-to-back calls with one
synchronisation at the end (host-bound when above the GPU time), for ``gluon_matmul`` (cold key,
then warm), ``tritonblas.matmul`` with and without ``TRITONBLAS_GLUON=1``, ``F.linear`` on a 3-D
activation inside ``enable()``, and ``torch.matmul``; and whether the warm key bound the raw launcher.
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
    import tritonblas
    from tritonblas import dispatch
    from tritonblas.kernels import gluon_hopper as G

    m, n, k = 4096, 1024, 4096
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
    return 0


if __name__ == "__main__":
    sys.exit(main())

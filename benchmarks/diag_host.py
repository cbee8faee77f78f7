#!/usr/bin/env python
"""Host µs per call of each piece of a warm ``tritonblas.matmul(a, b)`` on this machine's GPU, per
shape (a diagnostic: where the warm path's time goes when a small shape's call costs more host time
than a large one's; benchmarks/diag_forced.py, H200, 2026-11-30: 25 us at 256^3, 14.5 us at 2048^3).

    python benchmarks/diag_host.py [--shapes 256x256x256,2048x2048x2048] [--calls 2000]

Each piece is timed alone in a loop of --calls (best of 5): the fast key, the fast-entry lookup,
``ops._direct``, the output allocation, the launch (``f.call``) with a preallocated output, the whole
``tritonblas.matmul`` and ``torch.matmul``; then with the GPU kept busy by one long kernel first
(is the launch itself slower when the GPU is idle?).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shapes", default="256x256x256,512x512x512,16x4096x4096,2048x2048x2048")
    ap.add_argument("--calls", type=int, default=2000)
    args = ap.parse_args(argv)
    import torch

    import tritonblas
    from profile_dispatch import per_call_us  # best of 5 loops of --calls, after 50 warm-up calls
    from tritonblas import dispatch, ops

    big = torch.randn(8192, 8192, device="cuda").bfloat16()
    for s in args.shapes.split(","):
        m, n, k = (int(x) for x in s.split("x"))
        a = torch.randn(m, k, device="cuda").bfloat16()
        b = torch.randn(k, n, device="cuda").bfloat16()
        out = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
        tritonblas.matmul(a, b)
        tritonblas.matmul(a, b)
        key = dispatch._fast_key(a, b, None, None, None, None)
        f = dispatch._fast_hit(key)
        print(f"== {s}: fast entry {'yes' if f is not None else 'NO'}; raw {getattr(f, 'raw', None) is not None}; "
              f"kernel {getattr(getattr(f, 'plan', None), 'kernel_name', '?')}", flush=True)
        pieces = {
            "_fast_key": lambda: dispatch._fast_key(a, b, None, None, None, None),
            "_fast_hit": lambda: dispatch._fast_hit(key),
            "ops._direct": lambda: ops._direct(a, b),
            "torch.empty": lambda: torch.empty(f.out_shape, dtype=a.dtype, device=a.device),
            "f.call(prealloc out)": lambda: f.call(a, b, out, None, 1.0, 0.0),
            "tritonblas.matmul": lambda: tritonblas.matmul(a, b),
            "torch.matmul": lambda: torch.matmul(a, b),
            "torch.matmul(out=)": lambda: torch.matmul(a, b, out=out),
        }
        for name, fn in pieces.items():
            print(f"  {name:24s} {per_call_us(fn, args.calls):7.2f} us", flush=True)
        for name in ("f.call(prealloc out)", "tritonblas.matmul", "torch.matmul"):
            fn = pieces[name]

            def busy(fn=fn):
                big @ big  # ~1.5 ms of GPU work queued ahead: launches return without waiting
                t0 = time.perf_counter()
                for _ in range(50):
                    fn()
                return (time.perf_counter() - t0) / 50 * 1e6

            torch.cuda.synchronize()
            best = min(busy() for _ in range(20))
            torch.cuda.synchronize()
            print(f"  {name + ' (GPU busy)':24s} {best:7.2f} us", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

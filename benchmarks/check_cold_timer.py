#!/usr/bin/env python
"""Sanity check of sweep.cold_graph_ms against triton.testing.do_bench on shapes whose kernels are
long enough that do_bench's host cost is hidden (H200): the two should agree within a few percent.

    python benchmarks/check_cold_timer.py
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


def main() -> int:
    import torch
    import triton

    from sweep import cold_graph_ms

    for m, n, k in [(4096, 4096, 4096), (2048, 8192, 4096), (8192, 1024, 4096), (1024, 1024, 1024),
                    (16, 4096, 4096)]:
        a = torch.randn(m, k, device="cuda").bfloat16()
        b = torch.randn(k, n, device="cuda").bfloat16()
        out = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
        fn = lambda: torch.matmul(a, b, out=out)  # noqa: E731
        eager = triton.testing.do_bench(fn, warmup=5, rep=50, return_mode="median")
        cold = [cold_graph_ms(fn, 20) for _ in range(3)]
        warm = triton.testing.do_bench_cudagraph(fn, rep=20, return_mode="median")
        print(f"{m}x{n}x{k} torch: do_bench {eager * 1e3:.1f} us, cold_graph_ms {', '.join(f'{c * 1e3:.1f}' for c in cold)}"
              f" us, graph (warm) {warm * 1e3:.1f} us", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python
"""Host cost and GPU time of the launch paths a benchmark can time our kernels through (H200).

    python benchmarks/diag_forced.py [--shapes 256x256x256,16x4096x4096]

Why: compare.py times forced configs (the oracle, nvMMH) through ``tritonblas.matmul(a, b, out=out,
config=cfg)`` and our pick through ``tritonblas.matmul(a, b)``; on some shapes under ~50 us the
forced timings came out 2-5x ours for neighbouring configs (compare 4f2aa7a), and a first probe
(cold_probe.py, 740f31b, since removed) measured 75 us for a 3 us kernel through
``PreparedLaunch.run`` (Triton's JIT launch). Per shape and path
this prints the host time per call (1000 back-to-back calls, perf_counter, no sync inside), the
``do_bench`` median (L2 flushed) and which dispatcher counters moved (fast hits vs plans), and
whether the fast entry is bound to the raw launcher.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shapes", default="256x256x256,512x512x512,16x4096x4096,1024x1024x1024,2048x2048x2048")
    args = ap.parse_args(argv)
    import torch
    import triton

    import origami
    import tritonblas
    from tritonblas import dispatch
    from tritonblas.plan import make_plan, prepare_launch

    hw = origami.load_profile("h200")
    for s in args.shapes.split(","):
        m, n, k = (int(x) for x in s.split("x"))
        a = torch.randn(m, k, device="cuda").bfloat16()
        b = torch.randn(k, n, device="cuda").bfloat16()
        out = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
        p = origami.GemmProblem(m, n, k, "bf16", "bf16", "bf16")
        cfg = origami.select(p, hw).config
        prepared = prepare_launch(make_plan(cfg, p, hw, tma=True), a, b, out)
        paths = {
            "matmul(a,b)": lambda: tritonblas.matmul(a, b),
            "matmul(a,b,out)": lambda: tritonblas.matmul(a, b, out=out),
            "matmul(a,b,out,config)": lambda: tritonblas.matmul(a, b, out=out, config=cfg),
            "matmul(a,b,config)": lambda: tritonblas.matmul(a, b, config=cfg),
            "prepared.run": prepared.run,
            "torch.matmul": lambda: torch.matmul(a, b),
        }
        print(f"== {s}: pick {cfg.short()}", flush=True)
        for name, fn in paths.items():
            fn()
            fn()
            torch.cuda.synchronize()
            before = dict(dispatch._STATS)
            t0 = time.perf_counter()
            for _ in range(1000):
                fn()
            host = (time.perf_counter() - t0) * 1e3
            torch.cuda.synchronize()
            moved = {k2: v - before.get(k2, 0) for k2, v in dispatch._STATS.items() if v != before.get(k2, 0)}
            ms = triton.testing.do_bench(fn, warmup=5, rep=20, return_mode="median")
            print(f"  {name:24s} host {host:7.1f} us/call  do_bench {ms * 1e3:8.1f} us  counters {moved}", flush=True)
        fast = [f for key, f in dispatch._FAST.items() if key[0] == a.shape and key[5] == b.shape]
        print(f"  fast entries for this shape: {len(fast)}; raw-bound {[f.raw is not None for f in fast]}; "
              f"run-bound {[f.run is not None for f in fast]}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

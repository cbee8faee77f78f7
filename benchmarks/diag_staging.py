#!/usr/bin/env python
"""Where an alignment-staged launch spends its time (H200): GPU time of the copies and the kernel, host time.

    python benchmarks/diag_staging.py [--shapes 1999x1999x1999,4096x1057x479]

Per bf16 shape with unaligned operands: ``tritonblas.matmul`` (do_bench, as compare.py times it),
the staged ``PreparedLaunch.run`` (do_bench and do_bench_cudagraph: GPU time only), each staging
copy alone (do_bench_cudagraph), the same TMA config on aligned contiguous copies of the operands
(the kernel alone), torch.matmul, and the host time of one ``tritonblas.matmul`` call (perf_counter
over 200 calls, synchronised once; ``--profile``: where that host time goes). The result of
``tritonblas.matmul`` is checked against an fp32 product (its relative error is printed).
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
    ap.add_argument("--shapes", default="1999x1999x1999,4096x1057x479,4096x1000x3333,4097x4097x4097")
    ap.add_argument("--profile", action="store_true", help="cProfile 100 tritonblas.matmul calls of each shape")
    args = ap.parse_args(argv)
    import torch
    import triton

    import tritonblas
    from tritonblas import dispatch
    from tritonblas.plan import prepare_launch, stage_copy

    def us(ms):
        return f"{ms * 1e3:8.1f}"

    for spec in args.shapes.split(","):
        m, n, k = map(int, spec.split("x"))
        a = torch.randn(m, k, device="cuda").bfloat16()
        b = torch.randn(k, n, device="cuda").bfloat16()
        ref = a.float() @ b.float()
        lp = dispatch.plan_for(a, b)
        out = tritonblas.matmul(a, b)
        torch.cuda.synchronize()
        err = ((out.float() - ref).norm() / ref.norm()).item()
        t_mm = triton.testing.do_bench(lambda: tritonblas.matmul(a, b), return_mode="median")
        prepared = prepare_launch(lp, a, b, torch.empty(m, n, device="cuda", dtype=torch.bfloat16))
        t_run = triton.testing.do_bench(prepared.run, return_mode="median")
        torch.cuda.synchronize()
        t_run_g = triton.testing.do_bench_cudagraph(prepared.run, return_mode="median")
        copies = []
        for buffer, source in prepared.staged:
            torch.cuda.synchronize()
            copies.append(triton.testing.do_bench_cudagraph(lambda: stage_copy(buffer, source), return_mode="median"))
        a16 = torch.empty(m, -(-k // 8) * 8, device="cuda", dtype=torch.bfloat16)[:, :k].copy_(a)
        b16 = torch.empty(k, -(-n // 8) * 8, device="cuda", dtype=torch.bfloat16)[:, :n].copy_(b)
        kern = prepare_launch(lp, a16, b16, torch.empty(m, n, device="cuda", dtype=torch.bfloat16))
        torch.cuda.synchronize()
        t_kern = triton.testing.do_bench_cudagraph(kern.run, return_mode="median")
        t_torch = triton.testing.do_bench(lambda: torch.matmul(a, b), return_mode="median")
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(200):
            tritonblas.matmul(a, b)
        t_host = (time.perf_counter() - t0) / 200 * 1e3
        torch.cuda.synchronize()
        t_all = (time.perf_counter() - t0) / 200 * 1e3
        if args.profile:
            import cProfile
            import pstats

            prof = cProfile.Profile()
            prof.enable()
            for _ in range(100):
                tritonblas.matmul(a, b)
            prof.disable()
            torch.cuda.synchronize()
            pstats.Stats(prof).sort_stats("tottime").print_stats(15)
        copies_us = " + ".join(us(c).strip() for c in copies)
        print(f"{spec}: plan {lp.config.short()} stage a={lp.stage_a} b={lp.stage_b} {lp.kernel_name}; "
              f"rel err {err:.2e}\n"
              f"  us: matmul do_bench {us(t_mm)} | run do_bench {us(t_run)} | run graph {us(t_run_g)} | "
              f"copies graph {copies_us} | kernel on aligned copies graph {us(t_kern)} | "
              f"torch {us(t_torch)} | host per matmul call {us(t_host)} (with the GPU: {us(t_all)})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

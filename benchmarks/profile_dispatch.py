"""Where a warm ``tritonblas.matmul`` spends its host time (a diagnostic for issue 5; GPU only).

    python benchmarks/profile_dispatch.py [--calls 10000] [--out DIR]

For a bf16 64×64×64 GEMM (and 16×4096×4096): CPU µs per call of torch.matmul, tritonblas.matmul,
dispatch.gemm (no ops layer), and of the pieces of the fast path taken alone (fast key, output
allocation, argument binding, the launch through Triton's CompiledKernel.run, the raw C launcher),
for the TMA plan and the pointer plan; then a cProfile of --calls tritonblas.matmul calls
(top 30 by own time). Then plan-cache misses of bf16 (1000..1031)×4096×4096 (compile excluded):
``bench_dispatch.miss_rows`` (whole call, without sharing compiled kernels, select + plan alone) and
a cProfile of 160 of them by cumulative time. Text to stdout and DIR/profile_dispatch.txt.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

import origami  # noqa: E402
import tritonblas  # noqa: E402
from tritonblas import dispatch  # noqa: E402
from tritonblas import plan as _plan  # noqa: E402


def per_call_us(fn, calls: int, repeats: int = 5) -> float:
    for _ in range(50):
        fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        best = min(best, (time.perf_counter() - t0) / calls * 1e6)
        torch.cuda.synchronize()
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--calls", type=int, default=10000)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    lines: list[str] = []

    def say(s: str) -> None:
        print(s, flush=True)
        lines.append(s)

    n = args.calls
    for m, nn, k in ((64, 64, 64), (16, 4096, 4096)):
        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(k, nn, device="cuda", dtype=torch.bfloat16)
        out = tritonblas.matmul(a, b)
        torch.testing.assert_close(out.float(), (a.float() @ b.float()), rtol=2e-2, atol=2e-2 * k ** 0.5)
        say(f"== {m}x{nn}x{k} bf16")
        with torch.no_grad():
            say(f"torch.matmul                 {per_call_us(lambda: torch.matmul(a, b), n):8.2f} us")
            say(f"torch.empty                  {per_call_us(lambda: torch.empty((m, nn), dtype=a.dtype, device=a.device), n):8.2f} us")
            say(f"tritonblas.matmul            {per_call_us(lambda: tritonblas.matmul(a, b), n):8.2f} us")
            say(f"dispatch.gemm                {per_call_us(lambda: dispatch.gemm(a, b), n):8.2f} us")
            fkey = dispatch._fast_key(a, b, None, None, None, None)
            f = dispatch._FAST[fkey]
            say(f"  plan: {f.plan.config.short()} kernel={getattr(f.kernel, '__name__', f.kernel)} "
                f"tma={f.a_desc is not None} run={type(f.run).__name__} raw={f.raw is not None}")
            say(f"_fast_key                    {per_call_us(lambda: dispatch._fast_key(a, b, None, None, None, None), n):8.2f} us")
            say(f"_fast_hit                    {per_call_us(lambda: dispatch._fast_hit(fkey), n):8.2f} us")
            o = torch.empty((m, nn), dtype=a.dtype, device=a.device)
            say(f"f.args                       {per_call_us(lambda: f.args(a, b, o, None, 1.0, 0.0), n):8.2f} us")
            fa = f.args(a, b, o, None, 1.0, 0.0)
            say(f"f.launch (prebuilt args)     {per_call_us(lambda: f.launch(fa), n):8.2f} us")
            say(f"f.call (raw launcher)        {per_call_us(lambda: f.call(a, b, o, None, 1.0, 0.0), n):8.2f} us")
            if f.run is not None:
                stream = torch.cuda.current_stream().cuda_stream
                say(f"CompiledKernel.run           {per_call_us(lambda: f.run(f.grid[0], 1, 1, stream, f.function, f.packed, None, None, None, *fa, *f.tail), n):8.2f} us")
                inner = getattr(f.run, "launch", None)
                say(f"  launcher.launch = {inner!r}")
            say(f"current_stream().cuda_stream {per_call_us(lambda: torch.cuda.current_stream(0).cuda_stream, n):8.2f} us")
            say(f"_raw_stream(0)               {per_call_us(lambda: dispatch._raw_stream(0), n):8.2f} us")
            say(f"current_device()             {per_call_us(lambda: torch.cuda.current_device(), n):8.2f} us")
            # the pointer kernel for the same config (no TMA descriptors)
            hw = origami.load_profile("h200")
            p = f.plan.problem
            lp = _plan.make_plan(f.plan.config, p, hw, tma=False)
            prep = _plan.prepare_launch(lp, a, b, o)
            prep.run()
            comp = prep.compile()
            pargs = prep.args
            params = prep.kernel.params
            tail = [prep.kwargs[q.name] if q.name in prep.kwargs else q.default for q in params[len(pargs):]]
            stream = torch.cuda.current_stream().cuda_stream
            say(f"pointer kernel CompiledKernel.run {per_call_us(lambda: comp.run(prep.grid[0], 1, 1, stream, comp.function, comp.packed_metadata, None, None, None, *pargs, *tail), n):8.2f} us")
            say(f"pointer kernel kernel[grid](...)  {per_call_us(prep.run, n):8.2f} us")
            pr = cProfile.Profile()
            pr.enable()
            for _ in range(n):
                tritonblas.matmul(a, b)
            pr.disable()
            torch.cuda.synchronize()
            s = io.StringIO()
            pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(30)
            say(s.getvalue())
    # a plan miss (the first call of a new key, compile excluded): where the time goes. The
    # compiled kernels and the bindings shared across keys (dispatch._COMPILED) stay, as they
    # would after the first shape of a config; bench_dispatch.miss_rows times the same misses.
    import bench_dispatch

    say("== plan miss: bf16 (1000..1031)x4096x4096, median per first call (no profiler)")
    for r in bench_dispatch.miss_rows(cuda=True):
        say(f"{r['mode']:12s} {r['cpu_us']:8.2f} us  {r['note']}")
    b = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    inputs = [torch.randn(m, 4096, device="cuda", dtype=torch.bfloat16) for m, _, _ in bench_dispatch.MISS_SHAPES]
    with torch.no_grad():
        for a in inputs:
            tritonblas.matmul(a, b)
        torch.cuda.synchronize()
        pr = cProfile.Profile()
        for _ in range(5):
            bench_dispatch._clear_plans()
            pr.enable()
            for a in inputs:
                tritonblas.matmul(a, b)
            pr.disable()
        torch.cuda.synchronize()
    s = io.StringIO()
    pstats.Stats(pr, stream=s).sort_stats("cumtime").print_stats(45)
    say(f"== plan miss: {5 * len(inputs)} first calls of new keys, by cumulative time\n" + s.getvalue())
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "profile_dispatch.txt").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

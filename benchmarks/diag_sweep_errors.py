#!/usr/bin/env python
"""Diagnose the wrong results the tf32 / fp8 sweep recorded on the H200 (2026-11-30, 2c5d4da).

The sweep's result check (``sweep.check_result``) rejected 154 of 1536 tf32 rows (Stream-K and
split-K only, all on the second GPU's shard) and 547 of 1536 fp8 rows (every config of 13 shapes,
relative error exactly 1 or NaN, plus Stream-K / split-K rows elsewhere). This script separates the
suspects, one shape at a time, printing one line per check:

  stage     ``plan.stage_copy`` into a buffer with guard bands: bit-exact, guards untouched?
  eager     each config launched once through ``prepare_launch(...).run()``, then synchronised
  counters  the cached Stream-K / split-K counters are zero again after the eager launches
  race      the sweep's sequence: ``fn()`` on the current stream, then ``do_bench_cudagraph`` (which
            starts on a fresh side stream without waiting): correct afterwards?
  synced    the same with ``torch.cuda.synchronize()`` between the two (the fix)
  matmul    ``tritonblas.matmul`` (the library path) on the same inputs

    PYTHONPATH=$PWD python3 benchmarks/diag_sweep_errors.py [--gpu 1]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CASES = [  # (dtype, M, N, K, configs as "kind bm bn bk warps stages grid split"), from grid_{tf32,fp8}.csv
    ("fp8_e4m3", 3584, 3328, 5760, ["dp 128 256 128 8 3 0 1", "persistent 128 256 128 8 3 132 1"]),
    ("fp8_e4m3", 3328, 6912, 3072, ["dp 128 256 128 8 3 0 1"]),
    ("fp8_e4m3", 5632, 6272, 4352, ["dp 128 256 128 8 3 0 1"]),
    ("fp8_e4m3", 5760, 4992, 1536, ["dp 128 256 128 8 3 0 1", "streamk 128 128 128 8 3 132 1"]),
    ("tf32", 4608, 7424, 5376, ["dp 128 128 32 8 3 0 1", "streamk 128 128 32 8 4 132 1",
                                "streamk 256 64 32 8 4 132 1"]),
    ("tf32", 3072, 896, 3968, ["streamk 128 128 32 8 3 132 1", "splitk 256 128 32 8 3 0 4"]),
]
TOL = {"tf32": 1e-2, "fp8_e4m3": 5e-2}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpu", type=int, default=0)
    args = ap.parse_args(argv)
    import torch
    import triton

    import origami
    import tritonblas
    from origami import DType, GemmProblem, Kind, Layout, TileConfig
    from tritonblas import plan as planmod
    from tritonblas.plan import _example_tensors, make_plan, prepare_launch

    dev = torch.device(f"cuda:{args.gpu}")
    torch.cuda.set_device(dev)
    hw = origami.load_profile("h200")

    def rel(out, ref):
        return float((out.float() - ref).norm() / ref.norm().clamp_min(1e-30))

    def verdict(err, tol):
        return f"{err:.3g} {'ok' if err <= tol else 'WRONG'}"

    for dtype, m, n, k, cfgs in CASES:
        torch.manual_seed(0)
        p = GemmProblem(m=m, n=n, k=k, a_dtype=DType(dtype), b_dtype=DType(dtype),
                        c_dtype=DType.FP32 if dtype == "tf32" else DType.BF16,
                        a_layout=Layout.N, b_layout=Layout.N)
        a, b, out = _example_tensors(p, dev)
        ref = a.float() @ b.float()
        torch.cuda.synchronize()
        tol = TOL[dtype]
        kw = {"allow_tf32": dtype == "tf32"}
        if dtype.startswith("fp8"):
            kw.update(scale_a=torch.ones((), device=dev), scale_b=torch.ones((), device=dev))
        head = f"{dtype} {m}x{n}x{k}"
        # stage: b (K, N) N-major -> a K-major (N, K) buffer inside guard bands
        guard = 4096
        flat = torch.full((2 * guard + n * k,), 7, dtype=torch.uint8, device=dev)
        elem = b.element_size()
        assert (guard % elem) == 0
        buf_storage = flat[guard:guard + n * k * elem].view(b.dtype) if elem == 1 else None
        if buf_storage is None:
            flat = torch.full((2 * guard + n * k * elem,), 7, dtype=torch.uint8, device=dev)
            buf_storage = flat[guard:guard + n * k * elem].view(b.dtype)
        buffer = buf_storage.view(n, k).mT
        planmod.stage_copy(buffer, b)
        torch.cuda.synchronize()
        exact = torch.equal(buffer.float(), b.float())
        guards_ok = bool((flat[:guard] == 7).all() and (flat[-guard:] == 7).all())
        print(f"{head} stage: exact={exact} guards_untouched={guards_ok}", flush=True)
        for spec in cfgs:
            kind, bm, bn, bk, w, s, g, sk = spec.split()
            cfg = TileConfig(kind=Kind(kind), block_m=int(bm), block_n=int(bn), block_k=int(bk), num_warps=int(w),
                             num_stages=int(s), group_m=8 if kind in ("dp", "persistent", "streamk") else 1,
                             grid=int(g), split_k=int(sk))
            try:
                pl = make_plan(cfg, p, hw, tma=True)  # as the sweep does (its default)
            except ValueError as e:
                print(f"{head} {spec}: make_plan: {e}")
                continue
            planmod.clear_workspaces()
            prep = prepare_launch(pl, a, b, out, **kw)
            out.fill_(float("nan"))
            prep.run()
            torch.cuda.synchronize()
            e_eager = rel(out, ref)
            ws = list(planmod.WORKSPACES.values())
            cnt = int(ws[0][1].abs().sum()) if ws else 0
            # the sweep's sequence: no synchronisation between the current stream and the side stream
            fn = prep.run
            out.fill_(float("nan"))
            fn()
            triton.testing.do_bench_cudagraph(fn, rep=3, return_mode="median")
            torch.cuda.synchronize()
            e_race = rel(out, ref)
            cnt_race = int(ws[0][1].abs().sum()) if ws else 0
            planmod.clear_workspaces()
            prep = prepare_launch(pl, a, b, out, **kw)
            fn = prep.run
            out.fill_(float("nan"))
            fn()
            torch.cuda.synchronize()
            triton.testing.do_bench_cudagraph(fn, rep=3, return_mode="median")
            torch.cuda.synchronize()
            e_sync = rel(out, ref)
            print(f"{head} {spec} [{pl.kernel_name}, staged={len(prep.staged)}]: eager {verdict(e_eager, tol)}, "
                  f"counters after eager {cnt}; race {verdict(e_race, tol)} (counters {cnt_race}); "
                  f"synced {verdict(e_sync, tol)}", flush=True)
        if dtype == "tf32":  # fp8 has no torch.matmul drop-in path (tritonblas.matmul runs torch there)
            planmod.clear_workspaces()
            torch.backends.cuda.matmul.allow_tf32 = True
            r = tritonblas.matmul(a, b)
            torch.cuda.synchronize()
            torch.backends.cuda.matmul.allow_tf32 = False
            print(f"{head} matmul: {verdict(rel(r, ref), tol)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

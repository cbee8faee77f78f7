"""How our pick compares with torch's own GEMM (cuBLAS) on every recorded shape, and whether a rule
fitted on the training shapes can tell in advance where we win (the question behind tritonblas.versus).

    python benchmarks/vendor_gap.py [--profile h200] [--margin 0.05]

Reads benchmarks/data/<profile>_vendor{,_heldout}/torch.csv (benchmarks/vendor_times.py, GPU) and the recorded
sweeps (training: benchmarks/data/<profile>/*.csv; held-out: benchmarks/data/<profile>_heldout/*.csv).
Per sweep file: shapes with both times, the geometric mean of torch_ms / pick_ms (above 1: our pick is
faster), how many picks lose, the same for the best measured config, and "oracle-route", the best a
per-shape ours-or-torch choice could do (torch_ms / min(pick, torch)). Then three policies scored on
each split by efficiency (min(pick, torch) / chosen) and by speed against torch alone: always ours,
always torch, and a ridge regression of log(torch_ms / pick_ms) on the problem (log M, N, K,
arithmetic intensity, alignment, the pick's kind and predicted time) fitted on the training split
only, choosing ours where it predicts more than ``--margin`` of gain.

    python benchmarks/vendor_gap.py --max-m 16     # instead: every shape with M <= 16 (decode, GEMV-like), one row each
    python benchmarks/vendor_gap.py --classes      # instead: per split, the classes handover.vendor_aligned was
                                                   # decided on (aligned decode-sized, aligned larger, other)

``--max-m M`` prints, per recorded shape with at most M rows, torch's time, our pick's and the best recorded
config's (microseconds) and the two ratios, then their geometric means per split: whether a decode-sized
gap is the pick's (torch/pick below torch/best) or the kernels' ceiling (torch/best below 1).
"""

from __future__ import annotations

import argparse
import math
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import origami  # noqa: E402
from origami.fit import read_sweep  # noqa: E402
from vendor_times import PROBLEM_COLS, problem_key, read_vendor_rows, vendor_paths  # noqa: E402


def rows_of(profile: str) -> list[dict]:
    hw = origami.load_profile(profile)
    torch_ms = {tuple(r[c] for c in PROBLEM_COLS): float(r["torch_ms"])
                for path in vendor_paths(profile).values() for r in read_vendor_rows(path) if r["torch_ms"]}
    out = []
    data = ROOT / "benchmarks" / "data"
    for split, d in (("training", data / profile), ("heldout", data / f"{profile}_heldout")):
        for f in sorted(d.glob("*.csv")):
            for m in read_sweep(f):
                t = torch_ms.get(problem_key(m.problem))
                est = origami.select(m.problem, hw)
                times = dict(zip(m.configs, m.ms))
                if t is None or est.config not in times:
                    continue
                out.append(dict(file=f"{d.name}/{f.name}", split=split, p=m.problem, cfg=est.config,
                                pred=est.latency_ns, pick=times[est.config], best=min(m.ms), torch=t))
    return out


def features(r: dict) -> list[float]:
    p, kind = r["p"], r["cfg"].kind.value
    eb = {"bf16": 2, "fp16": 2, "tf32": 4, "fp32": 4}.get(p.a_dtype.value, 1)
    ai = 2 * p.m * p.n * p.k / ((p.m * p.k + p.k * p.n + p.m * p.n) * eb)
    return [1.0, math.log(p.m), math.log(p.n), math.log(p.k), math.log(ai), float(p.align_bytes < 16),
            math.log(r["pred"]), float(kind == "streamk"), float(kind == "splitk"), float(kind == "ws"),
            float(min(p.m, p.n) <= 64)]


def geo(xs) -> float:
    return math.exp(sum(map(math.log, xs)) / len(xs))


def score(rs: list[dict], torch_side: list[bool]) -> str:
    eff = [min(r["pick"], r["torch"]) / (r["torch"] if t else r["pick"]) for r, t in zip(rs, torch_side)]
    vs = [r["torch"] / (r["torch"] if t else r["pick"]) for r, t in zip(rs, torch_side)]
    return (f"efficiency {geo(eff):.3f} (p10 {np.percentile(eff, 10):.3f}), vs torch {geo(vs):.3f} "
            f"(worst {min(vs):.3f}), ours on {sum(not t for t in torch_side)} of {len(rs)}")


def skinny_table(rows: list[dict]) -> int:
    """The ``--max-m`` listing (see the module docstring)."""
    print(f"{'file':26s} {'shape':20s} {'dtype':5s} {'layout':7s} {'torch_us':>8s} {'pick_us':>8s} {'best_us':>8s} "
          f"{'t/pick':>6s} {'t/best':>6s}  pick")
    for r in sorted(rows, key=lambda r: (r["split"] != "training", r["p"].m, r["p"].n, r["p"].k, r["file"])):
        p = r["p"]
        print(f"{r['file']:26s} {f'{p.m}x{p.n}x{p.k}':20s} {p.a_dtype.name.lower():5s} "
              f"{p.a_layout.name}{p.b_layout.name} a{p.align_bytes:<3d} {r['torch'] * 1e3:8.2f} {r['pick'] * 1e3:8.2f} "
              f"{r['best'] * 1e3:8.2f} {r['torch'] / r['pick']:6.3f} {r['torch'] / r['best']:6.3f}  {r['cfg'].short()}")
    for split in ("training", "heldout"):
        rs = [r for r in rows if r["split"] == split]
        if rs:
            print(f"{split}: {len(rs)} shapes, torch/pick {geo([r['torch'] / r['pick'] for r in rs]):.3f} "
                  f"(below 1 on {sum(r['torch'] < r['pick'] for r in rs)}), torch/best "
                  f"{geo([r['torch'] / r['best'] for r in rs]):.3f} (below 1 on {sum(r['torch'] < r['best'] for r in rs)})")
    return 0


def aligned_class(p) -> str:
    """The class :func:`tritonblas.handover.vendor_aligned` decides by: a bf16/fp16 problem of 16-byte-aligned
    rows, decode-sized (min(M, N) <= 16) or not; everything else "other"."""
    if p.a_dtype.value not in ("bf16", "fp16") or p.align_bytes < 16:
        return "other (unaligned, or not 2-byte)"
    return "aligned, min(M,N) <= 16" if min(p.m, p.n) <= 16 else "aligned, min(M,N) > 16"


def classes_table(rows: list[dict]) -> int:
    """The ``--classes`` table: per split, :func:`aligned_class` and GFLOP bucket (under 100, or not), the
    shapes, the geometric mean of torch_ms / pick_ms (above 1: our pick is faster) and how many picks win or
    lose by more than 5%."""
    by = defaultdict(list)
    for r in rows:
        p = r["p"]
        gf = 2 * p.m * p.n * p.k * p.batch / 1e9
        by[(r["split"], aligned_class(p), "< 100 GFLOP" if gf < 100 else ">= 100 GFLOP")].append(r["torch"] / r["pick"])
    print(f"{'split':9s} {'class':34s} {'GFLOP':13s} {'n':>4s} {'torch/pick':>10s} {'win>5%':>7s} {'lose>5%':>7s}")
    for key in sorted(by):
        v = by[key]
        print(f"{key[0]:9s} {key[1]:34s} {key[2]:13s} {len(v):4d} {geo(v):10.3f} {sum(x > 1.05 for x in v):7d} "
              f"{sum(x < 0.95 for x in v):7d}")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="h200")
    ap.add_argument("--margin", type=float, default=0.05)
    ap.add_argument("--ridge", type=float, default=1.0)
    ap.add_argument("--max-m", type=int, default=None, metavar="M",
                    help="only list the shapes with at most M rows: torch, pick and best, per shape")
    ap.add_argument("--classes", action="store_true",
                    help="torch/pick per split, alignment class (handover.vendor_aligned's) and GFLOP bucket")
    args = ap.parse_args(argv)
    rows = rows_of(args.profile)
    if args.classes:
        return classes_table(rows)
    if args.max_m is not None:
        return skinny_table([r for r in rows if r["p"].m <= args.max_m])
    by = defaultdict(list)
    for r in rows:
        by[r["file"]].append(r)
    print(f"{'file':30s} {'n':>4s} torch/pick lose torch/best oracle-route")
    for f, rs in by.items():
        tp = [r["torch"] / r["pick"] for r in rs]
        print(f"{f:30s} {len(rs):4d} {geo(tp):10.3f} {sum(x < 1 for x in tp):4d} "
              f"{geo([r['torch'] / r['best'] for r in rs]):10.3f} "
              f"{geo([r['torch'] / min(r['pick'], r['torch']) for r in rs]):11.3f}")
    train = [r for r in rows if r["split"] == "training"]
    X = np.array([features(r) for r in train])
    y = np.array([math.log(r["torch"] / r["pick"]) for r in train])
    w = np.linalg.solve(X.T @ X + args.ridge * np.eye(X.shape[1]), X.T @ y)
    for split in ("training", "heldout"):
        rs = [r for r in rows if r["split"] == split]
        pred = np.array([features(r) for r in rs]) @ w
        print(f"\n{split} ({len(rs)} shapes)")
        print(f"  always ours : {score(rs, [False] * len(rs))}")
        print(f"  always torch: {score(rs, [True] * len(rs))}")
        print(f"  fitted rule : {score(rs, list(pred <= args.margin))}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

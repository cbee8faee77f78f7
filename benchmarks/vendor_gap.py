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
"""

from __future__ import annotations

import argparse
import csv
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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="h200")
    ap.add_argument("--margin", type=float, default=0.05)
    ap.add_argument("--ridge", type=float, default=1.0)
    args = ap.parse_args(argv)
    rows = rows_of(args.profile)
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

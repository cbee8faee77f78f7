"""Where the model's split-K and Stream-K predictions go wrong, on the training sweeps only.

    python benchmarks/splitk_residuals.py [--profile h200] [--set splitk_range_reads=1]

Per recorded row of benchmarks/data/<profile>/*.csv and <profile>_cold/*.csv (never <profile>_heldout/):
r = log(measured / predicted), taken relative to the median r of the same shape's data-parallel,
persistent and warp-specialised rows (what selection compares a split config with). Prints the
geometric mean of exp(r) by kind, by split count, by K-iterations per split, by tile area, by the
fix-up's share of the prediction, and the model's HBM term against the compulsory A + B bytes at
the profile's HBM bandwidth. ``--set name=value`` scores a profile with model parameters replaced.
CPU only.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import origami  # noqa: E402
from origami.enumerate import row_to_config  # noqa: E402
from origami.fit import read_sweep  # noqa: E402
from origami.select import score_problem  # noqa: E402

_REF = ("dp", "persistent", "ws")


def rows(hw, files):
    """One dict per timed row the model scores: file, problem, config, ms, pred (ns), terms, rel."""
    term = {name: i for i, name in enumerate(("compute", "l2", "llc", "hbm", "latency", "epilogue", "fixup"))}
    out = []
    for f in files:
        for meas in read_sweep(f):
            base, lat, terms = score_problem(meas.problem, hw)
            pred = {}
            for i in np.nonzero(np.isfinite(lat))[0]:
                pred.setdefault(row_to_config(base[i], meas.problem, hw), (float(lat[i]), terms[i]))
            shape = []
            for c, ms in zip(meas.configs, meas.ms):
                if c in pred:
                    p, t = pred[c]
                    shape.append({"file": f"{f.parent.name}/{f.name}", "problem": meas.problem, "config": c,
                                  "ms": ms, "pred": p, "hbm": float(t[term["hbm"]]),
                                  "fixup": float(t[term["fixup"]]), "r": math.log(ms * 1e6 / p)})
            ref = [d["r"] for d in shape if d["config"].kind.value in _REF]
            if not ref:
                continue
            mid = float(np.median(ref))
            for d in shape:
                d["rel"] = d["r"] - mid
            out += shape
    return out


def _line(label, sel):
    x = np.array([d["rel"] for d in sel])
    if not x.size:
        return None
    return (f"  {label:<26} {x.size:>5}  {math.exp(np.median(x)):6.3f}  "
            f"{math.exp(np.percentile(x, 25)):6.3f}  {math.exp(np.percentile(x, 75)):6.3f}")


def report(data, hbm_bytes_per_ns) -> list[str]:
    lines = [f"  {'group':<26} {'rows':>5}  {'median':>6}  {'q25':>6}  {'q75':>6}   (measured/predicted, "
             "relative to the shape's data-parallel rows)"]

    def add(label, sel):
        ln = _line(label, sel)
        if ln:
            lines.append(ln)

    for kind in ("dp", "persistent", "ws", "streamk", "splitk"):
        add(kind, [d for d in data if d["config"].kind.value == kind])
    sk = [d for d in data if d["config"].kind.value == "splitk"]
    for s in sorted({d["config"].split_k for d in sk}):
        add(f"splitk split {s}", [d for d in sk if d["config"].split_k == s])

    def kpart(d):
        return math.ceil(d["problem"].k / d["config"].block_k) / d["config"].split_k

    for lo, hi in ((1, 4), (4, 16), (16, 64), (64, 256), (256, math.inf)):
        add(f"splitk K-iters/split {lo}-{hi}", [d for d in sk if lo <= kpart(d) < hi])
    for a in sorted({d["config"].block_m * d["config"].block_n for d in sk}):
        add(f"splitk tile area {a}", [d for d in sk if d["config"].block_m * d["config"].block_n == a])
    for lo, hi in ((0, .1), (.1, .3), (.3, .5), (.5, 1.01)):
        add(f"splitk fix-up share {lo}-{hi}", [d for d in sk if lo <= d["fixup"] / d["pred"] < hi])
    lines.append("  model HBM term / compulsory A+B bytes at HBM bandwidth (median):")
    for label, sel in [("dp", [d for d in data if d["config"].kind.value == "dp"])] + \
            [(f"splitk split {s}", [d for d in sk if d["config"].split_k == s])
             for s in sorted({d["config"].split_k for d in sk})]:
        if sel:
            q = [d["hbm"] * hbm_bytes_per_ns / ((p := d["problem"]).m * p.k * p.a_dtype.bytes
                                                + p.k * p.n * p.b_dtype.bytes) for d in sel]
            lines.append(f"  {label:<26} {len(sel):>5}  {np.median(q):6.3f}")
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="h200")
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE[,NAME=VALUE]")
    args = ap.parse_args(argv)
    hw = origami.load_profile(args.profile)
    if args.set:
        from benchmarks.missing_picks import variant_profiles  # the one KEY=VALUE[,KEY=VALUE] parser
        hw = variant_profiles(args.profile, [",".join(args.set)], "--set")[0]
    data_dir = ROOT / "benchmarks" / "data"
    files = sorted((data_dir / args.profile).glob("*.csv")) + sorted((data_dir / f"{args.profile}_cold").glob("*.csv"))
    data = rows(hw, files)
    bw = hw.memory["hbm_bytes_per_s"] * hw.model["hbm_efficiency"] / 1e9
    print(f"{args.profile} {' '.join(args.set)}: {len(data)} timed rows of {len(files)} training sweeps")
    print("\n".join(report(data, bw)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

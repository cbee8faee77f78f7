"""How often origami's best score is an exact tie, and what the row order that breaks it costs (training sweeps only).

    python benchmarks/tie_census.py [--profile h200] [--files benchmarks/data/h200/llm.csv ...]

For every shape of the profile's training sweeps (benchmarks/data/<profile>/*.csv and <profile>_cold/*.csv;
held-out sweeps are never read), the configs whose predicted time
equals the best one's (relative 1e-9; ``origami.rank``'s top 64) are the tie. ``origami.select()`` takes the
first of them in the space's fixed row order. Where the pick and at least one other tied config were timed,
the census compares the pick's measured efficiency (best measured / pick's time) with the best of the tied
configs', and it counts the timed pairs in a tie that differ only in ``num_stages``.

Why: two configs that differ only in what a shape's binding term does not read (num_stages where latency is
hidden, num_warps, GROUP_M, persistent or not) tie exactly, and then the row order, not the model, picks. On h200's training sweeps (session 42) 262 of 705 shapes tie at
the top. On the 236 with the pick and another tied config timed, the pick's geomean is 0.923 against 0.957 for
the best tied config.
CPU only; exit status 0, 2 on a bad argument.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import origami  # noqa: E402
from origami.fit import read_sweep  # noqa: E402

TIE_REL = 1e-9  # predicted times within this relative distance of the best tie
TOP_K = 64


@dataclasses.dataclass(frozen=True)
class Census:
    """The tie census of some sweeps under one profile (see the module docstring)."""

    shapes: int
    tied: int  # shapes whose best predicted time is shared by two or more configs
    compared: int  # of those, shapes with the pick and another tied config timed
    pick_geomean: float  # on the compared shapes: best measured / pick's time, geomean (nan if none)
    best_tied_geomean: float  # the same for the fastest timed config of each tie
    stage_pairs: tuple  # ((outcome, count), ...): tied timed pairs differing only in num_stages


def tied_configs(problem, hw) -> list:
    """The configs tied at ``problem``'s best predicted time under ``hw``, in ``select()``'s order (its pick first)."""
    est = origami.rank(problem, hw, k=TOP_K)
    top = est[0].latency_ns
    return [e.config for e in est if e.latency_ns <= top * (1 + TIE_REL)]


def census(sweeps, hw) -> Census:
    """The tie census of ``sweeps`` (lists of ``origami.fit.Measured``) under profile ``hw``."""
    shapes = tied = 0
    pick_logs, best_logs = [], []
    pairs: collections.Counter = collections.Counter()
    for data in sweeps:
        for m in data:
            shapes += 1
            tie = tied_configs(m.problem, hw)
            if len(tie) < 2:
                continue
            tied += 1
            meas = dict(zip(m.configs, m.ms))
            best = min(meas.values())
            timed = [c for c in tie if c in meas]
            if tie[0] in meas and len(timed) >= 2:
                pick_logs.append(math.log(best / meas[tie[0]]))
                best_logs.append(math.log(best / min(meas[c] for c in timed)))
            for a in timed:
                for b in timed:
                    if a.num_stages < b.num_stages and dataclasses.replace(a, num_stages=b.num_stages) == b:
                        r = meas[b] / meas[a]
                        pairs["more stages faster" if r < 0.98 else "more stages slower" if r > 1.02
                              else "within 2%"] += 1

    def gm(logs):
        return math.exp(sum(logs) / len(logs)) if logs else math.nan

    return Census(shapes, tied, len(pick_logs), gm(pick_logs), gm(best_logs), tuple(sorted(pairs.items())))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", default="h200")
    ap.add_argument("--files", nargs="+", default=None, help="sweep CSVs (default: the profile's training sweeps)")
    args = ap.parse_args(argv)
    try:
        hw = origami.load_profile(args.profile)
    except origami.ProfileError as e:
        ap.error(f"--profile: {e}")
    if args.files:
        missing = [f for f in args.files if not Path(f).is_file()]
        if missing:
            ap.error(f"--files: no such file: {', '.join(missing)}")
        paths = [Path(f) for f in args.files]
    else:
        data = ROOT / "benchmarks" / "data"
        paths = [f for d in (args.profile, f"{args.profile}_cold") for f in sorted((data / d).glob("*.csv"))]
        if not paths:
            ap.error(f"--profile {args.profile}: no training sweeps under benchmarks/data/{args.profile}/")
    c = census([read_sweep(p) for p in paths], hw)
    print(f"{args.profile}: {c.shapes} training shapes in {len(paths)} files; {c.tied} tie at the best predicted time")
    print(f"  {c.compared} with the pick and another tied config timed: pick geomean {c.pick_geomean:.3f}, "
          f"best tied config {c.best_tied_geomean:.3f}")
    print("  tied timed pairs differing only in num_stages (the higher against the lower): "
          + (", ".join(f"{k} {v}" for k, v in c.stage_pairs) or "none"))
    return 0


if __name__ == "__main__":
    sys.exit(main())

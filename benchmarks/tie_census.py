"""How often origami's best score is an exact tie, and what the row order that breaks it costs (training sweeps only).

    python benchmarks/tie_census.py [--profile h200] [--files benchmarks/data/h200/llm.csv ...] [--worst N]

For every shape of the profile's training sweeps (benchmarks/data/<profile>/*.csv and <profile>_cold/*.csv;
held-out sweeps are never read), the configs whose predicted time
equals the best one's (relative 1e-9; ``origami.rank``'s top 64) are the tie. ``origami.select()`` takes the
first of them in the space's fixed row order. Where the pick and at least one other tied config were timed,
the census compares the pick's measured efficiency (best measured / pick's time) with the best of the tied
configs'. It also counts the timed pairs in a tie that differ in one thing only (``num_stages``, ``GROUP_M``, or
persistent against data-parallel), per binding term of the tie (``Estimate.bound``): whether the higher stage
count, the larger GROUP_M or the persistent kernel ran faster (under 0.98x), slower (over 1.02x) or within 2%.

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
from benchmarks.splitk_eval import _files  # noqa: E402  (the one list of a profile's sweeps)
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
    pairs: tuple  # (((what, bound, outcome), count), ...): tied timed pairs differing in one thing (module docstring)
    losses: tuple  # ((pick's time / the fastest tied config's, problem, pick, fastest), ...), largest first


def tied(problem, hw) -> list:
    """The estimates tied at ``problem``'s best predicted time under ``hw``, in ``select()``'s order (its pick first)."""
    est = origami.rank(problem, hw, k=TOP_K)
    top = est[0].latency_ns
    return [e for e in est if e.latency_ns <= top * (1 + TIE_REL)]


def _difference(a, b) -> "str | None":
    """What ``b`` has more of than ``a`` when that is all they differ in: ``num_stages``, ``group_m`` or
    ``persistent`` (``a`` data-parallel, ``b`` the persistent kernel on the same tile), else None."""
    for attr in ("num_stages", "group_m"):
        if getattr(a, attr) < getattr(b, attr) and dataclasses.replace(a, **{attr: getattr(b, attr)}) == b:
            return attr
    if (a.kind is origami.Kind.DP and b.kind is origami.Kind.PERSISTENT
            and dataclasses.replace(a, kind=b.kind, grid=b.grid) == b):
        return "persistent"
    return None


def census(sweeps, hw) -> Census:
    """The tie census of ``sweeps`` (lists of ``origami.fit.Measured``) under profile ``hw``."""
    shapes = n_tied = 0
    pick_logs, best_logs = [], []
    pairs: collections.Counter = collections.Counter()
    losses: list = []
    for data in sweeps:
        for m in data:
            shapes += 1
            est = tied(m.problem, hw)
            if len(est) < 2:
                continue
            tie, bound = [e.config for e in est], est[0].bound
            n_tied += 1
            meas = dict(zip(m.configs, m.ms))
            best = min(meas.values())
            timed = [c for c in tie if c in meas]
            if tie[0] in meas and len(timed) >= 2:
                fastest = min(timed, key=meas.__getitem__)
                pick_logs.append(math.log(best / meas[tie[0]]))
                best_logs.append(math.log(best / meas[fastest]))
                if fastest != tie[0]:
                    losses.append((meas[tie[0]] / meas[fastest], m.problem, tie[0], fastest))
            for a in timed:
                for b in timed:
                    what = _difference(a, b)
                    if what is not None:
                        r = meas[b] / meas[a]
                        pairs[(what, bound, "faster" if r < 0.98 else "slower" if r > 1.02 else "within 2%")] += 1

    def gm(logs):
        return math.exp(sum(logs) / len(logs)) if logs else math.nan

    losses.sort(key=lambda x: -x[0])
    return Census(shapes, n_tied, len(pick_logs), gm(pick_logs), gm(best_logs), tuple(sorted(pairs.items())),
                  tuple(losses))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", default="h200")
    ap.add_argument("--files", nargs="+", default=None, help="sweep CSVs (default: the profile's training sweeps)")
    ap.add_argument("--worst", type=int, default=0, metavar="N",
                    help="also list the N shapes whose pick loses most to a tied config (pick / fastest tied)")
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE[,NAME=VALUE]",
                    help="score with these model parameters replaced (a candidate's ties before it ships)")
    args = ap.parse_args(argv)
    if args.worst < 0:
        ap.error(f"--worst {args.worst}: expected a count >= 0")
    try:
        hw = origami.load_profile(args.profile)
    except origami.ProfileError as e:
        ap.error(f"--profile: {e}")
    if args.set:
        from benchmarks.missing_picks import variant_profiles  # the one KEY=VALUE[,KEY=VALUE] parser
        hw = variant_profiles(args.profile, [",".join(args.set)], "--set")[0]
    if args.files:
        missing = [f for f in args.files if not Path(f).is_file()]
        if missing:
            ap.error(f"--files: no such file: {', '.join(missing)}")
        paths = [Path(f) for f in args.files]
    else:
        paths = _files(args.profile)[0]  # the training sweeps (held-out ones never)
        if not paths:
            ap.error(f"--profile {args.profile}: no training sweeps under benchmarks/data/{args.profile}/")
    sweeps = []
    for p in paths:
        try:
            data = read_sweep(p)
        except (ValueError, KeyError, TypeError) as e:  # a malformed row, a missing column
            ap.error(f"{p}: not a readable sweep CSV ({type(e).__name__}: {e})")
        if not data:
            ap.error(f"{p}: no shape with two or more timed configs (not a sweep.py CSV?)")
        sweeps.append(data)
    c = census(sweeps, hw)
    print(f"{args.profile}{' ' + ','.join(args.set) if args.set else ''}: {c.shapes} training shapes in {len(paths)} files; {c.tied} tie at the best predicted time")
    print(f"  {c.compared} with the pick and another tied config timed: pick geomean {c.pick_geomean:.3f}, "
          f"best tied config {c.best_tied_geomean:.3f}")
    print("  tied timed pairs differing in one thing (more stages, GROUP_M 8 over 1, persistent over data-parallel),")
    print("  by the tie's binding term: faster / slower / within 2%")
    counts = dict(c.pairs)
    for what, bound in sorted({(w, b) for w, b, _ in counts}):
        print(f"    {what:11} {bound:8} " + " / ".join(str(counts.get((what, bound, o), 0))
                                                 for o in ("faster", "slower", "within 2%")))
    if args.worst:
        print(f"  the {min(args.worst, len(c.losses))} shapes whose pick loses most to a tied config (of {len(c.losses)}):")
        for ratio, problem, pick, fastest in c.losses[:args.worst]:
            print(f"    x{ratio:.2f}  {problem.describe()}: pick {pick.short()}, fastest tied {fastest.short()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What ``model.staged_spill_rule`` (origami.space.staged_spills) would do to origami.select()'s
picks: per recorded sweep where a pick moves, selection efficiency (best measured / pick's measured time)
with the profile as shipped and with the rule on, and the picks the rule sends to configs the sweep did
not time (a training sweep must time them before the rule can ship: the guards fail on a missing pick).

    python benchmarks/staged_rule_eval.py [--profile h200]

CPU only; reads benchmarks/data/<profile>/ and <profile>_cold/ (training) and <profile>_heldout/.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import origami  # noqa: E402
from origami.fit import pick_efficiency, read_sweep  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="h200")
    args = ap.parse_args(argv)
    base = origami.load_profile(args.profile)
    rule = base.replace_model(staged_spill_rule=1.0)
    data = ROOT / "benchmarks" / "data"
    files = [("training", f) for d in (args.profile, f"{args.profile}_cold") for f in sorted((data / d).glob("*.csv"))]
    files += [("held-out", f) for f in sorted((data / f"{args.profile}_heldout").glob("*.csv"))]
    print(f"{'split':9s}{'file':30s}{'n':>4s}{'moved':>6s}   as shipped (geomean/p10 missing) -> with the rule")
    for split, f in files:
        sweep = read_sweep(f)
        moved = sum(origami.select(m.problem, base).config != origami.select(m.problem, rule).config for m in sweep)
        if not moved:
            continue
        a, b = pick_efficiency(sweep, base), pick_efficiency(sweep, rule)
        print(f"{split:9s}{f.parent.name + '/' + f.name:30s}{len(sweep):4d}{moved:6d}   "
              f"{a.geomean:.3f}/{a.p10:.3f} {len(a.missing)} -> {b.geomean:.3f}/{b.p10:.3f} {len(b.missing)}")
        for p, c in b.missing:
            if (p, c) not in a.missing:
                print(f"{'':13s}not timed: {p.describe()} {c.short()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

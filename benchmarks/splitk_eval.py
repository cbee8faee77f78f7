"""What ``model.splitk_range_reads`` does to origami.select()'s picks: its value fitted on the training
sweeps only, then every sweep (training and held-out) scored with the profile as shipped and with the
fitted value.

    python benchmarks/splitk_eval.py [--profile h200] [--value 1.0 | --fit [--refit fixup_ns,k_iter_overhead_ns]]

Training: benchmarks/data/<profile>/*.csv and <profile>_cold/*.csv (sampled sweeps); held-out:
<profile>_heldout/*.csv (exhaustive), never read by the fit. ``--fit`` runs origami.fit.fit(params=
["splitk_range_reads"]) on the training sweeps (its objective: the geomean of the predicted-best
measured config, with the log prediction error as a tie-break) and reports the value it reaches;
``--refit`` fits it jointly with other parameters, from ``--value``. Without ``--fit``, ``--value``
(default 1: every range's bytes distinct) is scored. Per file: select()'s pick (best measured /
pick's measured time) geomean, p10 and worst, picks moved, picks missing (not timed by that sweep),
then the decision rule of issue 19 item 5. CPU only.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import origami  # noqa: E402
from origami.fit import fit, pick_efficiency, read_sweep  # noqa: E402

PARAM = "splitk_range_reads"
SLACK = 0.005  # the largest drop of any held-out file's geomean or p10 the rule allows


def _files(profile: str):
    data = ROOT / "benchmarks" / "data"
    train = [f for d in (profile, f"{profile}_cold") for f in sorted((data / d).glob("*.csv"))]
    return train, sorted((data / f"{profile}_heldout").glob("*.csv"))


def numbers(text: str, flag: str, ap) -> list[float]:
    """``flag``'s comma-separated numbers (the residual scripts' scan options), or ``ap.error`` naming it."""
    try:
        return [float(c) for c in text.split(",")]
    except ValueError:
        ap.error(f"{flag} {text!r}: expected numbers separated by commas")


def ratio_cells(r, width: int = 5) -> str:
    """A residual table's cells for the measured / predicted ratios ``r``: rows, geomean, p10, p90."""
    import numpy as np

    r = np.asarray(r)
    return (f"{r.size:{width}d}  {np.exp(np.log(r).mean()):5.2f}  {np.percentile(r, 10):5.2f}  "
            f"{np.percentile(r, 90):5.2f}")


def _worst(s) -> str:
    w = s.worst(1)
    return f"{w[0][0]:.2f} {w[0][1].m}x{w[0][1].n}x{w[0][1].k}" if w else "-"


def compare(files, base, new, split: str) -> list[tuple]:
    """(split, file, n, moved, before PickScore, after PickScore) per file."""
    out = []
    for f in files:
        sweep = read_sweep(f)
        moved = sum(origami.select(m.problem, base).config != origami.select(m.problem, new).config for m in sweep)
        out.append((split, f"{f.parent.name}/{f.name}", len(sweep), moved, pick_efficiency(sweep, base),
                    pick_efficiency(sweep, new)))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="h200")
    ap.add_argument("--value", type=float, default=1.0)
    ap.add_argument("--fit", action="store_true")
    ap.add_argument("--refit", default="", metavar="P1,P2",
                    help="with --fit: also refit these model parameters jointly (the ones fitted while the split-K "
                         "bytes were under-counted, e.g. fixup_ns,k_iter_overhead_ns), starting from "
                         f"{PARAM} = --value")
    args = ap.parse_args(argv)
    base = origami.load_profile(args.profile)
    train, heldout = _files(args.profile)
    values = {PARAM: args.value}
    if args.fit:
        others = [p for p in args.refit.split(",") if p]
        start = base.replace_model(**values) if others else base
        rep = fit(start, [m for f in train for m in read_sweep(f)], [], params=[PARAM, *others])
        values = {p: rep.params[p] for p in (PARAM, *others)}
        print(f"fit on {len(train)} training sweeps: "
              + ", ".join(f"{p} {base.model[p]:g} -> {v:.4g}" for p, v in values.items())
              + f"; training predicted-best geomean {rep.train_before.geomean:.3f} -> {rep.train_after.geomean:.3f}, "
              f"p10 {rep.train_before.p10:.3f} -> {rep.train_after.p10:.3f}, median |log pred/meas| "
              f"{rep.train_before.log_error:.3f} -> {rep.train_after.log_error:.3f}")
    new = base.replace_model(**values)
    print(", ".join(f"{p} = {v:g}" for p, v in values.items())
          + ": select()'s pick / best measured, as shipped -> with it; as a repick variant: --variant "
          + ",".join(f"{p}={v:.6g}" for p, v in values.items()))
    report(compare(heldout, base, new, "held-out") + compare(train, base, new, "training"))
    return 0


def broken_floors(rows, floors: dict | None = None) -> list[str]:
    """The training files whose new geomean or p10 would fall under its floors-file entry
    (benchmarks/data/floors.yaml's ``training`` section; a file with no entry is not judged)."""
    if floors is None:
        from benchmarks.selection import load_floors

        floors = load_floors().get("training", {})
    out = []
    for split, name, _n, _moved, _a, b in rows:
        f = floors.get(name) if split == "training" else None
        if f and (b.geomean < f["geomean"] or b.p10 < f["p10"]):
            out.append(f"{name} ({b.geomean:.3f} / {b.p10:.3f} < {f['geomean']} / {f['p10']})"
                       if b.geomean < f["geomean"] else f"{name} (p10 {b.p10:.3f} < {f['p10']})")
    return out


GAIN_SETS = ("skinny", "longk", "fp16", "llm")  # the held-out files split-K's terms are for (issue 19, item 5)


def report(rows, gain_sets: tuple = GAIN_SETS) -> bool:
    """Print :func:`compare`'s rows and issue 19's rule (held-out ``gain_sets`` files' geomean up, no
    held-out geomean or p10 down by more than :data:`SLACK`, no training file with more picks untimed,
    no training floor broken: :func:`broken_floors`); returns whether the rule is met. Without held-out
    rows only the training floors are judged. ``gain_sets`` () for a term not aimed at particular files
    (benchmarks/term_eval.py): then some held-out file's geomean must go up."""
    print(f"{'split':9s}{'file':26s}{'n':>4s}{'moved':>6s}  {'geomean':>13s}  {'p10':>13s}  {'missing':>7s}  worst")
    for split, name, n, moved, a, b in rows:
        print(f"{split:9s}{name:26s}{n:4d}{moved:6d}  {a.geomean:.3f}->{b.geomean:.3f}  {a.p10:.3f}->{b.p10:.3f}  "
              f"{len(a.missing):>3d}->{len(b.missing):<3d}  {_worst(a)} -> {_worst(b)}")
        for p, c in b.missing:
            if (p, c) not in a.missing:
                print(f"{'':15s}not timed: {p.describe()} {c.short()}")
    broken = broken_floors(rows)
    floors = f"no training floor broken{' (broken: ' + ', '.join(broken) + ')' if broken else ''}"
    held = [r for r in rows if r[0] == "held-out"]
    if not held:
        print(f"training floors: {floors}: {'met' if not broken else 'NOT met'} (held-out rule not judged)")
        return False
    drop = [r[1] for r in held if r[5].geomean < r[4].geomean - SLACK or r[5].p10 < r[4].p10 - SLACK]
    gain = [r[1] for r in held if r[1].split("/")[1][:-4] in gain_sets and r[5].geomean <= r[4].geomean]
    if not gain_sets and not any(r[5].geomean > r[4].geomean for r in held):
        gain = ["every file"]  # a change that lifts nothing held out has nothing to ship
    more_missing = [r[1] for r in rows if len(r[5].missing) > len(r[4].missing)]
    ok = not drop and not gain and not more_missing and not broken
    up = f"held-out {'/'.join(gain_sets) or 'some file'}'s geomean up{' (not: ' + ', '.join(gain) + ')' if gain else ''}; "
    print(f"rule: {up}"
          f"no held-out geomean/p10 down by > {SLACK}{' (down: ' + ', '.join(drop) + ')' if drop else ''}; "
          f"no more missing picks{' (more: ' + ', '.join(more_missing) + ')' if more_missing else ''}; "
          f"{floors}: {'met' if ok else 'NOT met'}")
    return ok


if __name__ == "__main__":
    raise SystemExit(main())

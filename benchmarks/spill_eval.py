"""What ``model.staged_spill_penalty`` does: the spill predicate (``origami.space.staged_spills``) against
the sm_90 compile census, then the penalty's value fitted on the training sweeps only and select()'s pick
on every sweep (training and held-out) with the profile as shipped and with the fitted value, alone and
on top of ``splitk_range_reads=1``.

    python benchmarks/spill_eval.py [--profile h200] [--census-only] [--value 0.37] [--fit]

Census (benchmarks/data/nvidia_aot/h200_staged.csv, compiler output, no timings, no held-out shape): per
compiled row, ptxas's verdict (spill bytes > 0) against the predicate before this change (1.5 A + B +
accumulator elements per thread over {dp 108, persistent 72, streamk 96, splitk 144}) and today's.
Training: benchmarks/data/<profile>/*.csv and <profile>_cold/*.csv (sampled sweeps); held-out:
<profile>_heldout/*.csv (exhaustive), never read by the fit. ``--fit`` runs origami.fit.fit(params=
["staged_spill_penalty"]) on the training sweeps (objective: geomean of the predicted-best measured config,
log prediction error as a tie-break) and prints the staged training rows' residuals; the value scored is
the fitted one when the fit moves it off the shipped value, else ``--value`` (default 0.37: the census-timed
spill ratio on ragged.csv, 1.26 / 0.92, origami.space.STAGED_PRESSURE_LIMITS). Per file: select()'s pick (best
measured / pick's measured time) geomean, p10 and worst, picks moved, picks missing (not timed by that
sweep), then issue 19's rule. CPU only.
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import origami  # noqa: E402
from origami import space  # noqa: E402
from origami.config import TileConfig  # noqa: E402
from origami.fit import fit, pick_efficiency, read_sweep  # noqa: E402
from benchmarks.splitk_eval import _files, _worst  # noqa: E402  (one reader of the sweeps, one worst-shape label)

PARAM = "staged_spill_penalty"
SLACK = 0.005  # the largest drop of any held-out file's geomean the rule allows
CENSUS = ROOT / "benchmarks" / "data" / "nvidia_aot" / "h200_staged.csv"
# the predicate before origami.space.staged_load_pressure counted the B tile twice (git show 6d5b360:origami/space.py)
OLD_LIMITS = {"dp": 108.0, "persistent": 72.0, "streamk": 96.0, "splitk": 144.0}
UNALIGNED_SHARE = 1 / 3  # a held-out file is unaligned-heavy when at least this share of its shapes is staged


def census_rows() -> list[dict]:
    with CENSUS.open() as f:
        return [r for r in csv.DictReader(line for line in f if not line.startswith("#")) if r["status"] == "ok"]


def census_config(r: dict) -> TileConfig:
    extra = {"grid": 132} if r["kind"] in ("persistent", "streamk") else \
        {"split_k": 4, "group_m": 1} if r["kind"] == "splitk" else {}
    return TileConfig(r["kind"], int(r["block_m"]), int(r["block_n"]), int(r["block_k"]), int(r["num_warps"]),
                      int(r["num_stages"]), **extra)


def old_spills(r: dict) -> bool:
    bm, bn, bk, threads = int(r["block_m"]), int(r["block_n"]), int(r["block_k"]), 32 * int(r["num_warps"])
    return (1.5 * bm * bk + bk * bn + bm * bn) / threads > OLD_LIMITS[r["kind"]]


def confusion(hw) -> dict:
    """{predicate: {kind or 'all': [tp, fp, fn, tn]}} over the census rows (positive: ptxas spills)."""
    preds = {"before (1.5A+B+acc)": old_spills,
             "rule alone (A+2B+acc)": lambda r: space.over_pressure_limit(census_config(r), hw),
             "staged_spills (+census)": lambda r: space.staged_spills(
                 census_config(r), origami.GemmProblem(int(r["m"]), int(r["n"]), int(r["k"]),
                                                       align_bytes=int(r["align_bytes"])), hw)}
    out = {}
    for name, pred in preds.items():
        t = {}
        for r in census_rows():
            spilled = int(r["spill_stores"]) + int(r["spill_loads"]) > 0
            said = pred(r)
            for key in (r["kind"], "all"):
                c = t.setdefault(key, [0, 0, 0, 0])
                c[(0 if spilled else 1) if said else (2 if spilled else 3)] += 1
        out[name] = t
    return out


def print_census(hw) -> None:
    rows = census_rows()
    shapes = sorted({f"{r['m']}x{r['n']}x{r['k']}" for r in rows})
    distinct = {(r["kind"], r["block_m"], r["block_n"], r["block_k"], r["num_warps"]) for r in rows}
    print(f"census: {len(rows)} compiled rows ({', '.join(shapes)}), {len(distinct)} distinct (kind, tile, warps); "
          f"positive = ptxas spills (spill bytes > 0)")
    print(f"{'predicate':26s}{'kind':12s}{'spill/said':>11s}{'clean/said':>11s}{'spill/not':>10s}{'clean/not':>10s}"
          f"{'wrong':>7s}")
    for name, t in confusion(hw).items():
        for kind in ("dp", "persistent", "streamk", "splitk", "all"):
            tp, fp, fn, tn = t[kind]
            print(f"{name:26s}{kind:12s}{tp:11d}{fp:11d}{fn:10d}{tn:10d}{fp + fn:7d}")
    wrong = [(r["config"], int(r["spill_stores"]) + int(r["spill_loads"])) for r in rows
             if space.staged_spills(census_config(r), origami.GemmProblem(int(r["m"]), int(r["n"]), int(r["k"]),
                                                                           align_bytes=2), hw)
             != (int(r["spill_stores"]) + int(r["spill_loads"]) > 0)]
    print("staged_spills wrong on: " + (", ".join(sorted({f"{c.rsplit(' ', 1)[0] if 'grid' in c or 'split' in c else c}"
                                                          f" ({b} B)" for c, b in wrong})) or "none"))


def compare(files, base, new, split: str) -> list[tuple]:
    """(split, file, n, staged, moved, before PickScore, after PickScore) per file."""
    out = []
    for f in files:
        sweep = read_sweep(f)
        moved = sum(origami.select(m.problem, base).config != origami.select(m.problem, new).config for m in sweep)
        staged = sum(space.register_staged(m.problem, base) for m in sweep)
        out.append((split, f"{f.parent.name}/{f.name}", len(sweep), staged, moved, pick_efficiency(sweep, base),
                    pick_efficiency(sweep, new)))
    return out


def max_missing() -> dict:
    from benchmarks.selection import load_floors

    return {name: e.get("max_missing", 0) for name, e in load_floors().get("training", {}).items()}


def report(base, new, label: str, train, heldout) -> bool:
    """Prints the before/after table and issue 19's rule; returns whether it is met."""
    rows = compare(heldout, base, new, "held-out") + compare(train, base, new, "training")
    print(f"\n{label}: select()'s pick / best measured, as shipped -> with it")
    print(f"{'split':9s}{'file':26s}{'n':>4s}{'stgd':>5s}{'moved':>6s}  {'geomean':>13s}  {'p10':>13s}  "
          f"{'missing':>8s}  worst")
    for split, name, n, staged, moved, a, b in rows:
        print(f"{split:9s}{name:26s}{n:4d}{staged:5d}{moved:6d}  {a.geomean:.3f}->{b.geomean:.3f}  "
              f"{a.p10:.3f}->{b.p10:.3f}  {len(a.missing):>3d}->{len(b.missing):<4d}  {_worst(a)} -> {_worst(b)}")
        for p, c in b.missing:
            if (p, c) not in a.missing:
                print(f"{'':15s}not timed: {p.describe()} {c.short()}")
    held = [r for r in rows if r[0] == "held-out"]
    drop = [r[1] for r in held if r[6].geomean < r[5].geomean - SLACK]
    heavy = [r for r in held if r[3] >= UNALIGNED_SHARE * r[2]]
    # unaligned-heavy: each file whose picks move must gain, and at least one must
    flat = [r[1] for r in heavy if r[4] and r[6].geomean <= r[5].geomean]
    gained = [r[1] for r in heavy if r[6].geomean > r[5].geomean]
    limits = max_missing()
    over = [f"{r[1]} {len(r[6].missing)} > {limits.get(r[1], 0)}" for r in rows
            if r[0] == "training" and len(r[6].missing) > limits.get(r[1], 0)]
    ok = not drop and not flat and bool(gained) and not over
    print(f"rule: unaligned-heavy held-out ({', '.join(r[1].split('/')[1][:-4] for r in heavy)}) geomean up where "
          f"picks move{' (not: ' + ', '.join(flat) + ')' if flat else ''}{'' if gained else ' (none up)'}; "
          f"no held-out geomean down by > {SLACK}{' (down: ' + ', '.join(drop) + ')' if drop else ''}; training "
          f"missing picks within floors.yaml max_missing{' (over: ' + '; '.join(over) + ')' if over else ''}: "
          f"{'met' if ok else 'NOT met'}")
    total = sum(len(r[6].missing) for r in rows if r[0] == "training")
    print(f"training picks missing: {sum(len(r[5].missing) for r in rows if r[0] == 'training')} -> {total}")
    return ok


def print_residuals(hw, train) -> None:
    """Measured / predicted of the staged training rows (penalty 0), spilling and clean apart, absolute and
    over the median of the same shape's clean rows; then the fit's objective terms at a few values."""
    import statistics as st

    from origami.fit import _objective, selection_efficiency

    out: dict = {}
    for f in train:
        for m in read_sweep(f):
            if not space.register_staged(m.problem, hw):
                continue
            rs = []
            for c, ms in zip(m.configs, m.ms):
                try:
                    rs.append((space.staged_spills(c, m.problem, hw), ms * 1e6 / origami.predict(m.problem, hw, c).latency_ns))
                except ValueError:
                    continue
            clean = [r for s, r in rs if not s]
            for s, r in rs:
                out.setdefault(("measured/predicted", s), []).append(r)
                if clean:
                    out.setdefault(("over the shape's clean median", s), []).append(r / st.median(clean))
    print("\nstaged training rows (h200 and h200_cold), penalty 0:")
    for (what, s), v in sorted(out.items()):
        v = sorted(v)
        print(f"  {what:30s} {'spilling' if s else 'clean':9s} n={len(v):4d} median {st.median(v):.3f} "
              f"(p25 {v[len(v) // 4]:.3f}, p75 {v[3 * len(v) // 4]:.3f})")
    every = [m for f in train for m in read_sweep(f)]
    staged = [m for m in every if space.register_staged(m.problem, hw)]
    for v in (0.0, 0.2, 0.37, 0.6, 1.0):
        h = hw.replace_model(**{PARAM: v})
        a, b = selection_efficiency(every, h), selection_efficiency(staged, h)
        print(f"  {PARAM}={v:<4g} fit objective {_objective(a):.5f}: predicted-best geomean {a.geomean:.4f}, median "
              f"|log pred/meas| {a.log_error:.4f}; staged shapes only: {b.geomean:.4f}, {b.log_error:.4f}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="h200")
    ap.add_argument("--value", type=float, default=0.37)
    ap.add_argument("--fit", action="store_true")
    ap.add_argument("--census-only", action="store_true")
    args = ap.parse_args(argv)
    base = origami.load_profile(args.profile)
    print_census(base)
    if args.census_only:
        return 0
    train, heldout = _files(args.profile)
    value = args.value
    if args.fit:
        rep = fit(base, [m for f in train for m in read_sweep(f)], [], params=[PARAM])
        fitted = rep.params[PARAM]
        value = fitted if fitted != base.model[PARAM] else value
        print_residuals(base, train)
        print(f"\nfit on {len(train)} training sweeps: {PARAM} {base.model[PARAM]:g} -> {fitted:.4g}; training "
              f"predicted-best geomean {rep.train_before.geomean:.4f} -> {rep.train_after.geomean:.4f}, p10 "
              f"{rep.train_before.p10:.3f} -> {rep.train_after.p10:.3f}, median |log pred/meas| "
              f"{rep.train_before.log_error:.4f} -> {rep.train_after.log_error:.4f}")
    report(base, base.replace_model(**{PARAM: value}), f"{PARAM} = {value:g}", train, heldout)
    both = base.replace_model(**{PARAM: value, "splitk_range_reads": 1.0})
    report(base, both, f"{PARAM} = {value:g} and splitk_range_reads = 1", train, heldout)
    report(base.replace_model(splitk_range_reads=1.0), both,
           f"{PARAM} = {value:g} on top of splitk_range_reads = 1 (base: splitk_range_reads = 1)", train, heldout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

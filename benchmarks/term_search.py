"""Search model parameters on the training sweeps by select()'s real pick, under the training floors.

    python benchmarks/term_search.py --params splitk_efficiency,small_tile_efficiency [--set K=V,...]
        [--untimed-eff 0.8] [--rounds 3]

origami.fit.fit scores "the predicted-best among the configs a sweep measured", which cannot see a
pick that moves to an untimed config and knows nothing of the floors file. This searches the same
way (coordinate steps x0.7, 0.85, 1.15, 1.4 of each parameter within its MODEL_PARAMS bounds, from
the shipped profile with ``--set``) but scores what the guards score:

- objective: the geometric mean over every training shape (benchmarks/data/<profile>/ and
  <profile>_cold/) of best measured / measured time of ``origami.select()``'s pick, a pick the sweep
  did not time counted at ``--untimed-eff`` (default 0.8: pessimistic, so a step is not taken for
  moving picks out of sight);
- constraint: no training file's geomean or p10 (timed picks) under its floors-file entry
  (benchmarks.splitk_eval.broken_floors).

Held-out sweeps are never read. Prints each accepted step, then the parameters reached and the
term_eval command that scores them on every file. CPU only; exit status 0, 2 on a bad argument.

    python benchmarks/term_search.py --grid staged_load_exponent=0,0.2,0.34 --grid splitk_fixup_read_efficiency=1,0.7 [--set ...]

evaluates every point of the grid (from the shipped profile with ``--set``) the same way instead: objective,
picks untimed and broken floors per point; where the objective is flat, a point is chosen here, on training
data, before any held-out look (benchmarks/results/terms_h200_session22.txt).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import origami  # noqa: E402
from benchmarks.missing_picks import variant_profiles  # noqa: E402
from benchmarks.splitk_eval import _files, broken_floors  # noqa: E402
from origami.fit import pick_efficiency, read_sweep  # noqa: E402
from origami.hardware import MODEL_PARAMS  # noqa: E402

STEPS = (0.7, 0.85, 1.15, 1.4)


def evaluate(sweeps, hw, untimed_eff: float, floors=None) -> tuple[float, int, list[str]]:
    """(objective, picks untimed, broken floors) of profile ``hw`` on ``sweeps`` ({name: data})."""
    logs, untimed, rows = [], 0, []
    for name, data in sweeps.items():
        s = pick_efficiency(data, hw)
        logs += [math.log(e) for e in s.per_shape]
        logs += [math.log(untimed_eff)] * len(s.missing)
        untimed += len(s.missing)
        rows.append(("training", name, len(data), 0, None, s))
    return math.exp(sum(logs) / len(logs)), untimed, broken_floors(rows, floors)


def search(sweeps, start, params, untimed_eff: float, rounds: int, floors=None, log=print) -> tuple[dict, tuple]:
    """Coordinate search from profile ``start``; returns (the parameters reached, their evaluation)."""
    cur = dict(start.model)
    best = evaluate(sweeps, start, untimed_eff, floors)
    log(f"start: objective {best[0]:.4f}, {best[1]} picks untimed, floors broken: {best[2] or 'none'}")
    for r in range(rounds):
        moved = False
        for name in params:
            lo, hi, _ = MODEL_PARAMS[name]
            for f in STEPS:
                v = min(hi, max(lo, cur[name] * f if cur[name] > 0 else (lo + hi) / 10 * f))
                if v == cur[name]:
                    continue
                cand = start.replace_model(**{**cur, name: v})
                ev = evaluate(sweeps, cand, untimed_eff, floors)
                if not ev[2] and ev[0] > best[0] + 1e-5:
                    cur, best, moved = {**cur, name: v}, ev, True
                    log(f"round {r + 1}: {name} = {v:.5g}: objective {ev[0]:.4f}, {ev[1]} picks untimed")
        if not moved:
            break
    return cur, best


def grid(sweeps, start, axes: dict, untimed_eff: float, floors=None, log=print) -> list[tuple]:
    """Every point of ``axes`` ({param: values}) from profile ``start``: [(point, evaluation)]."""
    import itertools

    out = []
    names = list(axes)
    for values in itertools.product(*(axes[n] for n in names)):
        point = dict(zip(names, values))
        ev = evaluate(sweeps, start.replace_model(**{**start.model, **point}), untimed_eff, floors)
        out.append((point, ev))
        log(" ".join(f"{n}={v:g}" for n, v in point.items())
            + f": objective {ev[0]:.4f}, {ev[1]} picks untimed, floors broken: {'; '.join(ev[2]) or 'none'}")
    return out


def _axis(text: str, ap) -> tuple[str, list[float]]:
    name, _, vals = text.partition("=")
    if name not in MODEL_PARAMS:
        ap.error(f"--grid {text}: {name!r} is not a model parameter (known: {', '.join(MODEL_PARAMS)})")
    lo, hi, _ = MODEL_PARAMS[name]
    try:
        values = [float(v) for v in vals.split(",") if v.strip()]
    except ValueError:
        ap.error(f"--grid {text}: expected {name}=V1,V2,... (numbers)")
    bad = [v for v in values if not lo <= v <= hi]
    if not values or bad:
        ap.error(f"--grid {text}: expected values in [{lo:g}, {hi:g}]" + (f", got {bad}" if bad else ""))
    return name, values


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="h200")
    ap.add_argument("--params", default="", metavar="P1,P2", help="model parameters to search")
    ap.add_argument("--grid", action="append", default=[], metavar="P=V1,V2",
                    help="evaluate every point of these axes instead of searching (repeatable)")
    ap.add_argument("--set", default="", metavar="K=V[,K=V]", help="model parameters to start from")
    ap.add_argument("--untimed-eff", type=float, default=0.8,
                    help="efficiency counted for a pick the sweep did not time (default 0.8)")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    params = [p for p in args.params.split(",") if p]
    axes = dict(_axis(g, ap) for g in args.grid)
    bad = [p for p in params if p not in MODEL_PARAMS]
    if bad or not (params or axes):
        ap.error(f"--params: {', '.join(bad) or 'none given'}: not model parameters (known: {', '.join(MODEL_PARAMS)})")
    if not 0 < args.untimed_eff <= 1:
        ap.error(f"--untimed-eff {args.untimed_eff}: expected a value in (0, 1]")
    if args.rounds < 1:
        ap.error(f"--rounds {args.rounds}: expected at least 1")
    base = origami.load_profile(args.profile)
    start = variant_profiles(args.profile, [args.set], "--set")[0] if args.set else base
    train, _heldout = _files(args.profile)
    sweeps = {f"{f.parent.name}/{f.name}": read_sweep(f) for f in train}
    if axes:
        grid(sweeps, start, axes, args.untimed_eff)
        return 0
    reached, ev = search(sweeps, start, params, args.untimed_eff, args.rounds)
    changed = {p: v for p, v in reached.items() if v != base.model.get(p)}
    print(f"reached: objective {ev[0]:.4f}, {ev[1]} picks untimed; changed: "
          + (", ".join(f"{p} {base.model.get(p, 0.0):g} -> {v:.5g}" for p, v in changed.items()) or "nothing"))
    if changed:
        print("score it: python benchmarks/term_eval.py --training-only --set "
              + ",".join(f"{p}={v:.5g}" for p, v in changed.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Any set of model-parameter changes, judged as issue 19 asks: start from the shipped profile with
``--set`` overrides, optionally fit ``--fit`` parameters jointly on the training sweeps only, then
select()'s pick on every sweep (training and held-out) before and after, and the rule.

    python benchmarks/term_eval.py --set staged_spill_penalty=0.37 [--fit staged_spill_penalty,unaligned_penalty]

Training: benchmarks/data/<profile>/*.csv and <profile>_cold/*.csv (sampled sweeps); held-out:
<profile>_heldout/*.csv (exhaustive), never read by the fit (origami.fit.fit: objective the geomean
of the predicted-best measured config, log prediction error as a tie-break; each parameter within its
MODEL_PARAMS bounds). Prints the parameters reached, the per-file table and the rule
(``splitk_eval.report``), and the ``--variant`` for benchmarks/missing_picks.py that lists the picks
a GPU session must time before the change can ship. CPU only; exit status 0 whether or not the rule
is met (the text says), 2 on a bad argument.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import origami  # noqa: E402
from benchmarks.missing_picks import variant_profiles  # noqa: E402
from benchmarks.splitk_eval import _files, compare, report  # noqa: E402
from origami.fit import fit, pick_efficiency, read_sweep  # noqa: E402
from origami.hardware import MODEL_PARAMS  # noqa: E402


def pooled(files, hw, dtype: str = "bf16") -> str:
    """select()'s pick over every ``dtype`` shape of ``files``: shapes scored, geomean, p10, how many under
    0.75, picks untimed."""
    import numpy as np

    effs, untimed = [], 0
    for f in files:
        data = [m for m in read_sweep(f) if m.problem.a_dtype.value == dtype]
        if data:
            s = pick_efficiency(data, hw)
            effs += s.per_shape
            untimed += len(s.missing)
    if not effs:
        return f"no {dtype} shape"
    e = np.array(effs)
    return (f"{e.size} {dtype} shapes: {np.exp(np.log(e).mean()):.3f} / p10 {np.percentile(e, 10):.3f}, "
            f"{int((e < 0.75).sum())} under 0.75, {untimed} untimed")


def moved_picks(sweep, base, new) -> list[str]:
    """One line per shape of ``sweep`` whose select() pick differs between profiles ``base`` and ``new``:
    the shape, then each pick's efficiency (best measured / its time; nan: not timed) and config."""
    out = []
    for m in sweep:
        a, b = origami.select(m.problem, base).config, origami.select(m.problem, new).config
        if a == b:
            continue
        ms = dict(zip(m.configs, m.ms))
        best = min(ms.values())
        eff = [best / ms[c] if c in ms else float("nan") for c in (a, b)]
        out.append(f"{m.problem.m}x{m.problem.n}x{m.problem.k}: {eff[0]:.2f} {a.short()} -> {eff[1]:.2f} {b.short()}")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="h200")
    ap.add_argument("--set", default="", metavar="K=V[,K=V]", help="model parameters to start from")
    ap.add_argument("--fit", default="", metavar="P1,P2", help="model parameters to fit jointly on the training sweeps")
    ap.add_argument("--moved", action="store_true",
                    help="also list every moved pick: shape, efficiency and config before -> after")
    ap.add_argument("--training-only", action="store_true",
                    help="report the training sweeps only (for exploring a term without looking at held-out data)")
    args = ap.parse_args(argv)
    base = origami.load_profile(args.profile)
    start = variant_profiles(args.profile, [args.set], "--set")[0] if args.set else base
    params = [p for p in args.fit.split(",") if p]
    bad = [p for p in params if p not in MODEL_PARAMS]
    if bad:
        ap.error(f"--fit: {', '.join(bad)}: not model parameters (known: {', '.join(MODEL_PARAMS)})")
    train, heldout = _files(args.profile)
    new = start
    if params:
        rep = fit(start, [m for f in train for m in read_sweep(f)], [], params=params)
        new = start.replace_model(**{p: rep.params[p] for p in params})
        print(f"fit on {len(train)} training sweeps: "
              + ", ".join(f"{p} {start.model.get(p, 0.0):g} -> {rep.params[p]:.4g}" for p in params)
              + f"; training predicted-best geomean {rep.train_before.geomean:.3f} -> {rep.train_after.geomean:.3f}, "
              f"p10 {rep.train_before.p10:.3f} -> {rep.train_after.p10:.3f}, median |log pred/meas| "
              f"{rep.train_before.log_error:.3f} -> {rep.train_after.log_error:.3f}")
    changed = {p: v for p, v in new.model.items() if v != base.model.get(p)}
    print("changed: " + (", ".join(f"{p} {base.model.get(p, 0.0):g} -> {v:.6g}" for p, v in changed.items()) or "nothing")
          + "; as a repick variant: --variant " + ",".join(f"{p}={v:.6g}" for p, v in changed.items()))
    held = [] if args.training_only else compare(heldout, base, new, "held-out")
    report(held + compare(train, base, new, "training"), gain_sets=())  # any term: no file is owed a gain
    for label, files in (() if args.training_only else (("held-out", heldout),)) + (("training", train),):
        print(f"pooled {label}: shipped {pooled(files, base)}; changed {pooled(files, new)}")
    if args.moved:
        for f in ([] if args.training_only else heldout) + train:
            for line in moved_picks(read_sweep(f), base, new):
                print(f"moved {f.parent.name}/{f.name}: {line}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

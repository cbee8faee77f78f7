"""Plots and headline numbers from recorded CSVs (CPU only; matplotlib with the Agg backend).

    python benchmarks/plots.py [plot] [--compare benchmarks/results/compare_calib.csv ...]
                               [--sweep benchmarks/data/h200/calib.csv ...] [--profile h200]
                               [--out-dir benchmarks/results/plots]
    python benchmarks/plots.py summary [--sweep ...] [--compare ...] [--profile h200]

``plot`` (the default) writes PNGs to ``--out-dir``:

- ``efficiency_hist.png``: per-shape % of the oracle: ``pct_of_oracle`` of compare CSVs (measured in
  one run) and the current model's selection efficiency on each sweep (``origami.fit``: the pick
  among the measured configs vs the best of them);
- ``ours_vs_torch.png``: torch_ms / ours_ms per shape, sorted (> 1: ours faster);
- ``predicted_vs_measured.png``: log-log, the model's prediction against the measured time: every
  config of the sweeps (the current model's prediction) and our pick in compare CSVs;
- ``roofline.png``: arithmetic intensity (FLOPs / compulsory HBM bytes) against achieved TFLOP/s
  (ours, torch, oracle from compare CSVs; the best config per shape of the sweeps), under the
  profile's matrix peak per dtype and its HBM bandwidth line.

``summary`` prints, per sweep CSV (one per shape set and dtype), the selection efficiency of the
current model (geomean, p10, median |log prediction error|), and the summary of each compare CSV.
Without arguments both modes read every ``benchmarks/data/<profile>/*.csv`` and
``benchmarks/results/compare_*.csv``. ``summary`` needs no matplotlib.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.compare import fnum, geomean, percentile, read_csv, summarize, summary_text  # noqa: E402


def _problem(row: dict):
    import origami

    return origami.GemmProblem(int(row["m"]), int(row["n"]), int(row["k"]), row["a_dtype"], row["b_dtype"],
                               row["c_dtype"], row["a_layout"], row["b_layout"], int(row["batch"]),
                               int(row.get("align_bytes") or 16))


def sweep_efficiency(paths, hw):
    """{file name: origami.fit Score} for each sweep CSV with at least one usable shape."""
    from origami.fit import read_sweep, selection_efficiency

    out = {}
    for path in paths:
        data = read_sweep(path)
        if data:
            out[Path(path).name] = (selection_efficiency(data, hw), data)
    return out


def summary(sweeps, compares, hw) -> str:
    lines = []
    effs = sweep_efficiency(sweeps, hw)
    if effs:
        lines.append(f"selection efficiency of the current model ({hw.name}) on recorded sweeps:")
        lines.append(f"  {'sweep':28s} {'shapes':>6s} {'geomean':>8s} {'p10':>6s} {'|log err|':>9s}  worst")
        for name, (s, data) in effs.items():
            worst = min(zip(s.per_shape, (m.problem.describe() for m in data)), default=(math.nan, ""))
            lines.append(f"  {name:28s} {len(s.per_shape):6d} {s.geomean:8.3f} {s.p10:6.3f} {s.log_error:9.3f}  "
                         f"{worst[0]:.2f} {worst[1]}")
        if len(effs) > 1:
            per = [e for s, _ in effs.values() for e in s.per_shape]
            lines.append(f"  {'all':28s} {len(per):6d} {geomean(per):8.3f} {percentile(per, 10):6.3f}")
    else:
        lines.append("no sweep CSV with measured shapes")
    for path in compares:
        rows = read_csv(Path(path))
        if rows:
            lines.append(f"{Path(path).name}: " + summary_text(summarize(rows)))
    return "\n".join(lines)


def _sweep_points(paths, hw):
    """(predicted ms, measured ms) of every measured config under the current model, and the best
    measured config per shape as (problem, ms)."""
    import numpy as np

    from origami.enumerate import row_to_config
    from origami.fit import read_sweep
    from origami.select import score_problem

    pred, meas, best = [], [], []
    for path in paths:
        for m in read_sweep(path):
            base, lat, _ = score_problem(m.problem, hw)
            table = {}
            for i in np.nonzero(np.isfinite(lat))[0]:
                table.setdefault(row_to_config(base[i], m.problem, hw), float(lat[i]) / 1e6)
            for cfg, ms in zip(m.configs, m.ms):
                if cfg in table:
                    pred.append(table[cfg])
                    meas.append(ms)
            best.append((m.problem, min(m.ms)))
    return pred, meas, best


def plot(sweeps, compares, hw, out_dir: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    rows = [r for path in compares for r in read_csv(Path(path))]
    written = []

    def save(fig, name):
        path = out_dir / name
        fig.tight_layout()
        fig.savefig(path, dpi=120)
        plt.close(fig)
        written.append(path)

    # 1. efficiency histogram
    fig, ax = plt.subplots(figsize=(7, 4))
    pct = [v for r in rows if (v := fnum(r.get("pct_of_oracle"))) is not None]
    effs = sweep_efficiency(sweeps, hw)
    bins = [i * 5 for i in range(0, 23)]
    if pct:
        ax.hist([min(p, 110) for p in pct], bins=bins, alpha=0.6,
                label=f"compare: ours / re-timed oracle (n={len(pct)}, geomean {geomean(pct):.1f}%)")
    for name, (s, _) in effs.items():
        ax.hist([100 * e for e in s.per_shape], bins=bins, alpha=0.5, histtype="step", linewidth=2,
                label=f"{name}: model pick among measured (n={len(s.per_shape)}, geomean {100 * s.geomean:.1f}%)")
    ax.set_xlabel("% of the best measured config (values above 110 shown at 110)")
    ax.set_ylabel("shapes")
    ax.set_title(f"selection efficiency ({hw.name})")
    if pct or effs:
        ax.legend(fontsize=7)
    save(fig, "efficiency_hist.png")

    # 2. ours vs torch per shape
    several = len({r.get("dtype") for r in rows}) > 1
    pairs = sorted(((v, f"{r['m']}x{r['n']}x{r['k']}" + (f" {r.get('dtype')}" if several else ""))
                    for r in rows if (v := fnum(r.get("ratio_to_torch")))), key=lambda t: t[0])
    fig, ax = plt.subplots(figsize=(max(6, 0.3 * len(pairs) + 2), 4))
    if pairs:
        ax.bar(range(len(pairs)), [v for v, _ in pairs],
               color=["tab:green" if v >= 1 else "tab:red" for v, _ in pairs])
        ax.set_xticks(range(len(pairs)), [s for _, s in pairs], rotation=90, fontsize=6)
        ax.axhline(1.0, color="k", linewidth=0.8)
        ax.set_title(f"torch_ms / ours_ms per shape, sorted (geomean {geomean([v for v, _ in pairs]):.3f})")
    else:
        ax.text(0.5, 0.5, "no compare rows with torch timings", ha="center", transform=ax.transAxes)
    ax.set_ylabel("speed relative to torch.matmul")
    save(fig, "ours_vs_torch.png")

    # 3. predicted vs measured
    s_pred, s_meas, best = _sweep_points(sweeps, hw) if sweeps else ([], [], [])
    fig, ax = plt.subplots(figsize=(5.5, 5))
    if s_pred:
        ax.scatter(s_meas, s_pred, s=4, alpha=0.25, label=f"sweep configs (n={len(s_pred)}), current model")
    c = [(m, p) for r in rows if (m := fnum(r.get("ours_ms"))) and (p := fnum(r.get("predicted_ms")))]
    if c:
        ax.scatter([m for m, _ in c], [p for _, p in c], s=18, color="tab:red", label=f"compare: our pick (n={len(c)})")
    pts = s_meas + s_pred + [x for t in c for x in t]
    if pts:
        lo, hi = min(pts) / 1.5, max(pts) * 1.5
        ax.plot([lo, hi], [lo, hi], "k--", linewidth=0.8, label="predicted = measured")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.legend(fontsize=7)
    ax.set_xlabel("measured ms")
    ax.set_ylabel("predicted ms")
    ax.set_title(f"model prediction vs measurement ({hw.name})")
    save(fig, "predicted_vs_measured.png")

    # 4. roofline
    fig, ax = plt.subplots(figsize=(7, 5))
    series = {"ours": [], "torch": [], "oracle (re-timed)": [], "sweep best": []}
    dtypes = set()
    for r in rows:
        p = _problem(r)
        dtypes.add(p.a_dtype)
        ai = p.flops / p.min_bytes
        for label, col in (("ours", "ours_ms"), ("torch", "torch_ms"), ("oracle (re-timed)", "oracle_ms")):
            if (ms := fnum(r.get(col))) is not None and ms > 0:
                series[label].append((ai, p.flops / ms / 1e9))
    for p, ms in best:
        dtypes.add(p.a_dtype)
        series["sweep best"].append((p.flops / p.min_bytes, p.flops / ms / 1e9))
    marks = {"ours": "o", "torch": "x", "oracle (re-timed)": "+", "sweep best": "."}
    for label, xy in series.items():
        if xy:
            ax.scatter([x for x, _ in xy], [y for _, y in xy], marker=marks[label], s=22, label=label)
    xs = [x for xy in series.values() for x, _ in xy]
    bw = hw.memory["hbm_bytes_per_s"]
    if xs:
        lo, hi = min(xs) / 2, max(xs) * 2
        grid = [lo * (hi / lo) ** (i / 200) for i in range(201)]
        for d in sorted(dtypes, key=lambda d: d.value):
            peak = hw.matrix_peak_flops.get(d.rate_key, 0.0)
            if peak > 0:
                ax.plot(grid, [min(peak, x * bw) / 1e12 for x in grid], linewidth=1,
                        label=f"roofline {d.value}: peak {peak / 1e12:.0f} TFLOP/s, HBM {bw / 1e12:.1f} TB/s")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.legend(fontsize=7)
    else:
        ax.text(0.5, 0.5, "no data", ha="center", transform=ax.transAxes)
    ax.set_xlabel("arithmetic intensity (FLOP / compulsory HBM byte)")
    ax.set_ylabel("achieved TFLOP/s")
    ax.set_title(f"roofline ({hw.name})")
    save(fig, "roofline.png")
    return written


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", nargs="?", choices=("plot", "summary"), default="plot")
    ap.add_argument("--compare", nargs="*", default=None, help="compare CSVs (default: benchmarks/results/compare_*.csv)")
    ap.add_argument("--sweep", nargs="*", default=None, help="sweep CSVs (default: benchmarks/data/<profile>/*.csv)")
    ap.add_argument("--profile", default="h200")
    ap.add_argument("--out-dir", default=str(ROOT / "benchmarks" / "results" / "plots"))
    args = ap.parse_args(argv)

    import origami

    hw = origami.load_profile(args.profile)
    sweeps = args.sweep if args.sweep is not None else sorted(
        str(p) for p in (ROOT / "benchmarks" / "data" / hw.name).glob("*.csv"))
    compares = args.compare if args.compare is not None else sorted(
        str(p) for p in (ROOT / "benchmarks" / "results").glob("compare_*.csv"))
    if args.mode == "summary":
        print(summary(sweeps, compares, hw))
        return 0
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("plots: matplotlib is not installed (pip install 'tritonblas[plots]')", file=sys.stderr)
        return 2
    for path in plot(sweeps, compares, hw, Path(args.out_dir)):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Plots and headline numbers from recorded CSVs (CPU only; matplotlib with the Agg backend).

    python benchmarks/plots.py [plot] [--compare benchmarks/results/compare_calib.csv ...]
                               [--sweep benchmarks/data/h200/calib.csv ...] [--profile h200]
                               [--out-dir benchmarks/results/plots]
    python benchmarks/plots.py summary [--sweep ...] [--compare ...] [--profile h200]

``plot`` (the default) writes PNGs to ``--out-dir``:

- ``selection_efficiency_ecdf.png``: is the model's pick close to the best config? ECDFs per shape
  set of the current model's selection efficiency on each sweep (``origami.fit``: the pick among
  the measured configs vs the best of them): bf16 sets in one panel, the other dtypes in another;
  a third panel has the compare CSVs' ``pct_of_oracle`` (our pick and the oracle re-timed in one run);
- ``ours_vs_torch_ecdf.png``: are we faster than torch.matmul? ECDFs per compare set of
  torch_ms / ours_ms (> 1: ours faster), log axis, with geomean and the share of shapes at >= 1;
- ``predicted_vs_measured.png``: log-log, the model's prediction against the measured time: every
  config of the sweeps (the current model's prediction) and our pick in compare CSVs;
- ``roofline.png``: arithmetic intensity (FLOPs / compulsory HBM bytes) against achieved TFLOP/s
  (ours, torch, oracle from compare CSVs; the best config per shape of the sweeps), under the
  profile's matrix peak per dtype and its HBM bandwidth line.

``summary`` prints, per sweep CSV (one per shape set and dtype), the selection efficiency of the
current model (geomean, p10, median |log prediction error|), and the summary of each compare CSV.
Colours are the Okabe-Ito palette (colour-blind safe, 8 colours) with a line style per series, so
no two series of a panel look alike. Without arguments both modes read every ``benchmarks/data/<profile>/*.csv`` and
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


# Okabe & Ito (2008), "Color Universal Design": distinguishable under the common colour-vision
# deficiencies; black last (used for reference lines too). Line styles cycle with a different period.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#56B4E9", "#CC79A7", "#F0E442", "#000000")
LINESTYLES = ("-", "--", "-.", ":")


def _style(i: int) -> dict:
    return {"color": PALETTE[i % len(PALETTE)], "linestyle": LINESTYLES[(i // 2) % len(LINESTYLES)]}


def _ecdf(ax, values, i: int, label: str) -> None:
    xs = sorted(values)
    n = len(xs)
    ax.step([xs[0], *xs], [0.0, *[(j + 1) / n for j in range(n)]], where="post", linewidth=1.6, label=label, **_style(i))


def _label(name: str) -> str:
    """A set's name from its CSV file name: compare_llm.csv -> llm, calib.csv -> calib."""
    return Path(name).stem.removeprefix("compare_").replace("_h200", "")


def _by_set(compares) -> dict[str, list]:
    """{compare CSV file name: its rows}: one set per file."""
    return {Path(path).name: read_csv(Path(path)) for path in compares}


def plot(sweeps, compares, hw, out_dir: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker
    from cycler import cycler

    plt.rcParams["axes.prop_cycle"] = cycler(color=PALETTE)

    out_dir.mkdir(parents=True, exist_ok=True)
    rows = [r for path in compares for r in read_csv(Path(path))]
    written = []

    def save(fig, name):
        path = out_dir / name
        fig.tight_layout()
        fig.savefig(path, dpi=120)
        plt.close(fig)
        written.append(path)

    # 1. selection efficiency, per set
    effs = sweep_efficiency(sweeps, hw)
    bf16 = {n: s for n, (s, data) in effs.items() if data and data[0].problem.a_dtype.value == "bf16"}
    other = {n: s for n, (s, _) in effs.items() if n not in bf16}
    by_set = _by_set(compares)
    pct = {name: [v / 100 for r in rs if (v := fnum(r.get("pct_of_oracle"))) is not None] for name, rs in by_set.items()}
    pct = {k: v for k, v in pct.items() if v}
    panels = [(t, d) for t, d in (("sweeps, bf16: model pick among measured", bf16),
                                  ("sweeps, other dtypes", other),
                                  ("compare: our pick / oracle re-timed in one run", pct)) if d]
    fig, axes = plt.subplots(1, max(1, len(panels)), figsize=(5.2 * max(1, len(panels)), 4.6), squeeze=False)
    for ax, (title, series) in zip(axes[0], panels):
        for i, (name, vals) in enumerate(series.items()):
            vals = list(vals.per_shape) if hasattr(vals, "per_shape") else vals
            _ecdf(ax, [min(v, 1.1) for v in vals], i,
                  f"{_label(name)} (n={len(vals)}, geomean {geomean(vals):.3f}, p10 {percentile(vals, 10):.2f})")
        ax.set_xlim(0.3, 1.1)
        ax.set_xlabel("fraction of the best measured config's speed (values above 1.1 at 1.1)")
        ax.set_title(title, fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper left")
    axes[0][0].set_ylabel("share of shapes at or below x")
    if not panels:
        axes[0][0].text(0.5, 0.5, "no sweep or compare data", ha="center", transform=axes[0][0].transAxes)
    fig.suptitle(f"Is the model's pick close to the best config? ({hw.name}; curves further right are better)")
    save(fig, "selection_efficiency_ecdf.png")

    # 2. ours vs torch, per set
    ratios = {name: [v for r in rs if (v := fnum(r.get("ratio_to_torch")))] for name, rs in by_set.items()}
    ratios = {k: v for k, v in ratios.items() if v}
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    for i, (name, vals) in enumerate(ratios.items()):
        ahead = sum(v >= 1 for v in vals) / len(vals)
        _ecdf(ax, vals, i, f"{_label(name)} (n={len(vals)}, geomean {geomean(vals):.2f}, {100 * ahead:.0f}% >= 1)")
    if ratios:
        ax.set_xscale("log")
        lo, hi = min(min(v) for v in ratios.values()), max(max(v) for v in ratios.values())
        ticks = [t for t in (0.1, 0.2, 0.3, 0.5, 0.7, 1, 1.5, 2, 3, 5, 10) if lo / 1.5 <= t <= hi * 1.5]
        ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.axvline(1.0, color="k", linewidth=0.8)
        ax.legend(fontsize=7, loc="upper left")
        ax.grid(alpha=0.3, which="both")
    else:
        ax.text(0.5, 0.5, "no compare rows with torch timings", ha="center", transform=ax.transAxes)
    ax.set_xlabel("torch_ms / ours_ms (> 1: tritonblas faster)")
    ax.set_ylabel("share of shapes at or below x")
    ax.set_title(f"Are we faster than torch.matmul? ({hw.name}; curves further right are better)", fontsize=10)
    save(fig, "ours_vs_torch_ecdf.png")

    # 3. predicted vs measured
    s_pred, s_meas, best = _sweep_points(sweeps, hw) if sweeps else ([], [], [])
    fig, ax = plt.subplots(figsize=(5.5, 5))
    if s_pred:
        ax.scatter(s_meas, s_pred, s=4, alpha=0.25, label=f"sweep configs (n={len(s_pred)}), current model")
    c = [(m, p) for r in rows if (m := fnum(r.get("ours_ms"))) and (p := fnum(r.get("predicted_ms")))]
    if c:
        ax.scatter([m for m, _ in c], [p for _, p in c], s=18, color=PALETTE[3], label=f"compare: our pick (n={len(c)})")
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
        for j, d in enumerate(sorted(dtypes, key=lambda d: d.value)):
            peak = hw.matrix_rate(d)
            if peak > 0:
                ax.plot(grid, [min(peak, x * bw) / 1e12 for x in grid], linewidth=1, color="0.3",
                        linestyle=LINESTYLES[j % len(LINESTYLES)],
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

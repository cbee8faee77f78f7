"""Where ``model.staged_spill_traffic_limit`` comes from: the spilling configs' slowdown on training rows, by the
spill traffic of their K-step (CPU; reads training sweeps only).

    python benchmarks/spill_traffic.py [--profile h100] [--slow 1.1] [--min-rows 10]

For every register-staged shape (rows under 4 bytes aligned) of benchmarks/data/<profile>/*.csv, each timed
config's measured / predicted time is divided by the median of that of the shape's configs the sm_90 compile
census says compile clean: how much slower than the model expects a spilling config runs, next to clean ones of
the same shape. Per census group (kind, tile, warps; ``origami.space.census_spill_traffic``, spill bytes per
multiply-add of the K-step) the table gives the rows and their median. The limit is derived, not chosen: going
down from the heaviest traffic, the groups with at least ``--min-rows`` rows whose median is at least ``--slow``
form a run that stops at the first group under it; the limit is the midpoint between that group's traffic and
the lowest traffic of the run (configs at or above it leave the space: ``origami.space.check_staged_registers``).
No held-out file is read. The rows that decide it on the H100 come from benchmarks/spill_jobs.py (session 33:
every spilling group of the space timed on the 32 unaligned ragged shapes). Then judge select()'s picks:
``python benchmarks/term_eval.py --profile h100 --set staged_spill_traffic_limit=<it>``.
"""

from __future__ import annotations

import argparse
import statistics as st
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def group_ratios(profile: str) -> dict:
    """{(kind, bm, bn, bk, warps): (traffic, [ratio over the shape's clean median, ...])} of the spilling groups."""
    import origami
    from origami import space
    from origami.fit import read_sweep
    from benchmarks.splitk_eval import _files

    hw = origami.load_profile(profile)
    train, _heldout = _files(profile)
    out: dict = {}
    for f in train:
        for meas in read_sweep(f):
            if not space.register_staged(meas.problem, hw):
                continue
            rows = []
            for cfg, ms in zip(meas.configs, meas.ms):
                traffic = space.census_spill_traffic(cfg, meas.problem, hw)
                if traffic is None:
                    continue
                try:
                    ratio = ms * 1e6 / origami.predict(meas.problem, hw, cfg).latency_ns
                except ValueError:
                    continue
                rows.append((cfg, traffic, ratio))
            clean = [r for _, t, r in rows if t == 0]
            if len(clean) < 3:
                continue
            base = st.median(clean)
            for cfg, traffic, ratio in rows:
                if traffic > 0:
                    key = (cfg.kind.value, cfg.block_m, cfg.block_n, cfg.block_k, cfg.num_warps)
                    out.setdefault(key, (traffic, []))[1].append(ratio / base)
    return out


def derive_limit(groups: dict, slow: float, min_rows: int) -> "float | None":
    """The midpoint between the heaviest group under ``slow`` and the lightest of the run above it (None: no run)."""
    ranked = sorted(((t, st.median(v)) for t, v in groups.values() if len(v) >= min_rows), reverse=True)
    run = []
    for traffic, med in ranked:
        if med < slow:
            return (traffic + run[-1]) / 2 if run else None
        run.append(traffic)
    return run[-1] / 2 if run else None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", default="h100")
    ap.add_argument("--slow", type=float, default=1.1)
    ap.add_argument("--min-rows", type=int, default=10)
    args = ap.parse_args(argv)
    groups = group_ratios(args.profile)
    print(f"{args.profile} training rows, register-staged shapes: spilling census groups, measured/predicted over "
          f"the shape's clean median")
    print(f"{'group':34s}{'bytes/MAC':>10s}{'rows':>6s}{'median':>8s}")
    for key, (traffic, v) in sorted(groups.items(), key=lambda kv: -kv[1][0]):
        kind, bm, bn, bk, w = key
        print(f"{f'{kind} {bm}x{bn}x{bk} w{w}':34s}{traffic:10.3f}{len(v):6d}{st.median(v):8.2f}")
    limit = derive_limit(groups, args.slow, args.min_rows)
    print(f"limit (groups with >= {args.min_rows} rows at >= {args.slow}x, from the heaviest down): "
          + (f"{limit:.3f}" if limit is not None else "none (the heaviest group is not slow)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())

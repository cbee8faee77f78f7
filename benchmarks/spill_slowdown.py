"""The spilling kernels' measured slowdown on training rows, origami's table of it, and the limit above which such
configs leave the space (CPU; reads training sweeps only, never a held-out file).

    python benchmarks/spill_slowdown.py [--profile h100]            # the table of the profile's training rows
    python benchmarks/spill_slowdown.py --table                     # write origami/spill_slowdown.py from h100's
    python benchmarks/spill_slowdown.py --choose [--profiles h100 h200]   # the limit, chosen on training sweeps
    python benchmarks/spill_slowdown.py --choose --param fp8_spill_traffic_limit --profiles h100   # fp8's, the same way

For every register-staged shape (rows under 4 bytes aligned) of benchmarks/data/<profile>/*.csv, each timed
config's measured / predicted time is divided by the median of that of the shape's configs the sm_90 compile census
(origami/spill_census.py) says compile clean: how much slower than the model expects a spilling config runs, next
to clean ones of the same shape. Per census group (kind, tile, warps) with at least ``MIN_ROWS`` rows, the median of
those ratios is its measured slowdown. ``--table`` writes the H100's (``SOURCE``: every spilling group of the
space timed on its 32 unaligned ragged training shapes, benchmarks/spill_jobs.py) to
origami/spill_slowdown.py, which ``origami.space.measured_spill_slowdown`` reads on sm_90 for h100 and h200 alike
(the same kernels and compiler; the H200's own training rows cover 10 groups).

``--choose`` picks ``model.staged_slowdown_limit`` on the training sweeps of every profile named: for each
candidate limit (the table's slowdowns at or above 1.1: a group leaves the space when its slowdown is at least the
limit), select()'s real pick is scored on every training file of those profiles. A candidate is out if any file
loses more than ``SLACK`` or a pick goes untimed (time it first: benchmarks/missing_picks.py --variant
staged_slowdown_limit=X); of the rest, the highest pooled geomean wins, ties going to the higher limit, which
leaves more of the space. Where no limit moves a timed pick, that is the table's largest slowdown: the one group
measured slowest leaves the space on the strength of its rows alone. None: every limit loses a file or a timed
pick (the profile keeps 0), as where the training sweeps hold no register-staged row the limit acts on. The H200's
training rows never entered the table, so on them the choice is out of sample. Then judge the held-out split: ``python benchmarks/selection.py --profile h100``.

``--param fp8_spill_traffic_limit`` chooses the fp8 rule the same way: its candidates are the fp8 compile census's
spill bytes per multiply-add (origami.spill_census.SPILL_BYTES_FP8), and a register-staged fp8 config at or above
the limit leaves the space (origami.space.check_staged_registers): no measured table, since the census separates the
H100's unaligned fp8 training rows that ran 40-59x their prediction on its own.
"""

from __future__ import annotations

import argparse
import math
import statistics as st
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SOURCE = "h100"
MIN_ROWS = 10
SLACK = 0.005
TABLE = ROOT / "origami" / "spill_slowdown.py"


def group_ratios(profile: str) -> dict:
    """{(kind, bm, bn, bk, warps): [ratio over the shape's clean median, ...]} of the census-spilling groups on the
    profile's training sweeps (benchmarks/data/<profile>/ and <profile>_cold/)."""
    import origami
    from origami import space
    from origami.fit import read_sweep
    from benchmarks.splitk_eval import _files

    hw = origami.load_profile(profile)
    train, _heldout = _files(profile)
    out: dict = {}
    for f in train:
        for meas in read_sweep(f):
            # the table prices the bf16 census's groups (2-byte operands: space.measured_spill_slowdown)
            if not space.register_staged(meas.problem, hw) or meas.problem.a_dtype.bytes != 2:
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
                    out.setdefault(space.spill_group(cfg), []).append(ratio / base)
    return out


def slowdowns(profile: str = SOURCE, min_rows: int = MIN_ROWS) -> dict:
    """{group: median slowdown, rounded to 3 places} of the groups with at least ``min_rows`` rows."""
    return {k: round(st.median(v), 3) for k, v in group_ratios(profile).items() if len(v) >= min_rows}


def table_source(table: dict) -> str:
    body = "\n".join(f"    ({k!r}, {bm}, {bn}, {bk}, {w}): {s}," for (k, bm, bn, bk, w), s in sorted(table.items()))
    return f'''"""Measured slowdown of the register-staged kernels that spill (rows under 4 bytes aligned, sm_90): per
(kind, BLOCK_M, BLOCK_N, BLOCK_K, warps) with at least {MIN_ROWS} timed rows, the median over {SOURCE}'s training
sweeps of (measured / predicted) over the same ratio's median among the shape's configs that compile clean (the
sm_90 census, origami/spill_census.py). Timings of training shapes only. Generated by
`python benchmarks/spill_slowdown.py --table`; tests/benchmarks/test_spill_slowdown.py checks it against the
committed sweeps. Read through origami.space.measured_spill_slowdown."""

__all__ = ["SLOWDOWN"]

SLOWDOWN = {{
{body}
}}
'''


def write_table() -> None:
    from tritonblas.tables import AtomicFile

    src = table_source(slowdowns())
    with AtomicFile(TABLE) as f:
        f.write(src)


def fp8_traffic_candidates() -> list[float]:
    """The fp8 census's distinct spill bytes per multiply-add (``origami.space.census_spill_traffic`` of every group of
    origami.spill_census.SPILL_BYTES_FP8 on a register-staged fp8 problem, h100's sm_90), rounded to 3 decimals:
    ``model.fp8_spill_traffic_limit``'s candidates (a group leaves the space when its traffic is at least the limit)."""
    import origami
    from origami import GemmProblem, Kind, TileConfig, space
    from origami.spill_census import SPILL_BYTES_FP8

    hw = origami.load_profile("h100")
    probe = GemmProblem(4097, 4097, 4097, "fp8_e4m3", "fp8_e4m3", "bf16", align_bytes=1)
    grid = {Kind.PERSISTENT: dict(grid=hw.compute["compute_units"]), Kind.STREAMK: dict(grid=hw.compute["compute_units"])}
    traffic = {space.census_spill_traffic(TileConfig(Kind(k), bm, bn, bk, w, 3, **grid.get(Kind(k), {})), probe, hw)
               for (k, bm, bn, bk, w) in SPILL_BYTES_FP8}
    return sorted({round(t, 3) for t in traffic if t})


def slowdown_candidates() -> list[float]:
    """The slowdown table's values at or above 1.1: ``model.staged_slowdown_limit``'s candidates."""
    from origami.spill_slowdown import SLOWDOWN

    return sorted({s for s in SLOWDOWN.values() if s >= 1.1})


# the limits --choose picks, each with its candidates and the operand width (bytes) of the rows it acts on
LIMITS = {"staged_slowdown_limit": (slowdown_candidates, 2), "fp8_spill_traffic_limit": (fp8_traffic_candidates, 1)}


def choose(profiles: list[str], param: str = "staged_slowdown_limit") -> tuple["float | None", list[str]]:
    """(the chosen value of ``param`` (a key of LIMITS) or None, the report's lines): see the module docstring."""
    import origami
    from origami.fit import pick_efficiency, read_sweep
    from benchmarks.splitk_eval import _files

    from origami import space

    data = {p: [(f, read_sweep(f)) for f in _files(p)[0]] for p in profiles}
    candidates, width = LIMITS[param]
    hws = {p: origami.load_profile(p) for p in profiles}
    in_regime = sum(space.register_staged(m.problem, hws[p]) and m.problem.a_dtype.bytes == width
                    for p in profiles for _f, sweep in data[p] for m in sweep)
    if not in_regime:  # nothing to choose on: the profile keeps 0
        return None, [f"no register-staged training row with {width}-byte operands: {param} cannot be chosen"]
    cands = [0.0] + candidates()
    base, lines, ok = {}, [], []
    for limit in cands:
        effs, drops, untimed = [], [], 0
        for p in profiles:
            hw = hws[p].replace_model(**{param: limit})
            for f, sweep in data[p]:
                s = pick_efficiency(sweep, hw)
                untimed += len(s.missing)
                effs += list(s.per_shape)
                name = f"{p}:{f.parent.name}/{f.name}"
                if limit == 0.0:
                    base[name] = s.geomean
                elif s.geomean < base[name] - SLACK:
                    drops.append(f"{f.parent.name}/{f.name} {base[name]:.3f}->{s.geomean:.3f}")
        geo = math.exp(sum(math.log(e) for e in effs) / len(effs))
        lines.append(f"limit {limit:6.3f}: pooled training {geo:.4f} over {len(effs)} picks, {untimed} untimed"
                     + (f"; down: {', '.join(drops)}" if drops else ""))
        if limit and not drops and not untimed:
            ok.append((round(geo, 6), limit))
    best = max(ok) if ok else None
    return (best[1] if best else None), lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", default=SOURCE)
    ap.add_argument("--table", action="store_true", help=f"write {TABLE.relative_to(ROOT)} from {SOURCE}'s rows")
    ap.add_argument("--choose", action="store_true", help="choose --param on training sweeps")
    ap.add_argument("--param", default="staged_slowdown_limit", choices=sorted(LIMITS),
                    help="--choose's model parameter (default staged_slowdown_limit)")
    ap.add_argument("--profiles", nargs="+", default=["h100", "h200"])
    args = ap.parse_args(argv)
    if args.table:
        write_table()
        print(f"wrote {TABLE.relative_to(ROOT)} from {SOURCE}'s training rows")
        return 0
    if args.choose:
        limit, lines = choose(args.profiles, args.param)
        print("\n".join(lines))
        print(f"chosen: {limit}" if limit is not None else "none: the profile keeps 0 (above: why)")
        return 0
    groups = group_ratios(args.profile)
    print(f"{args.profile} training rows, register-staged shapes: census-spilling groups, measured/predicted over "
          f"the shape's clean median")
    print(f"{'group':34s}{'rows':>6s}{'median':>8s}")
    for key, v in sorted(groups.items(), key=lambda kv: -st.median(kv[1])):
        kind, bm, bn, bk, w = key
        print(f"{f'{kind} {bm}x{bn}x{bk} w{w}':34s}{len(v):6d}{st.median(v):8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

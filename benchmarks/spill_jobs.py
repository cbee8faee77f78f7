"""A job file that times the spilling configs of origami's space on a training sweep's register-staged
shapes (CPU; the timing is ``sweep.py --rows`` on the GPU).

    python benchmarks/spill_jobs.py [--profile h100] [--sweep benchmarks/data/h100/ragged.csv]
        [-o benchmarks/data/jobs/h100_spill.csv]
    torchrun --nproc-per-node gpu benchmarks/sweep.py --rows benchmarks/data/jobs/h100_spill.csv --rep-ms 3
    python benchmarks/missing_picks.py --profile h100 --apply                               # CPU, after it

Why: on unaligned rows (under 4 bytes aligned: register-staged loads, ``origami.space.register_staged``) the
configs whose kernels spill run slower than the model predicts, by an amount the spill bytes alone do not tell
(on the H100's training rows, over each shape's clean median: 1.0x clean, 1.24x at 200-500 bytes, 1.59x at
500-1000, 1.73x at 2000-5000, with dp 128x128x64 w8 at 1576 bytes the fastest config of 11059^3). The held-out
split's worst H100 pick (26x2255x12085: Stream-K 32x128x64 w4, 4732 bytes per the sm_90 census, 4.2x its
prediction) is a config no training row has timed, so any spill term fitted today could only be judged on the
held-out split. This job gives the training sweep those rows: for every register-staged shape of ``--sweep``,
one config of each (kind, tile, warps) that the sm_90 compile census (benchmarks/data/nvidia_aot/h200_staged.csv:
spill bytes do not depend on the shape or the stages) says spills and that the shape has not timed (the one the
model ranks first among that group's stages, grids and GROUP_M), heaviest spill first, beside every config the
shape already timed: the repick protocol (benchmarks/missing_picks.py), so the new rows and the oracle come from
one run and ``missing_picks.py --apply`` merges complete shapes into the original.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.missing_picks import repick_path  # noqa: E402
from benchmarks.sweep import JOB_COLS, job_row, write_rows  # noqa: E402

def spill_rows(sweep: Path, profile) -> tuple[list[dict], int, int]:
    """(job rows, shapes, new configs): per register-staged shape of ``sweep``, its untimed spilling groups' best-
    ranked configs (heaviest first, by the census's bytes: origami.spill_census), then every config the shape
    already timed, all into the repick file."""
    import origami
    from origami import space
    from origami.fit import read_sweep
    from origami.spill_census import SPILL_BYTES

    # the space without the profile's slowdown limit: the groups it leaves out are the ones to time
    hw = origami.load_profile(profile).replace_model(staged_slowdown_limit=0.0)
    out = repick_path(sweep).relative_to(ROOT).as_posix()
    rows, shapes, new = [], 0, 0
    for meas in read_sweep(sweep):
        if not space.register_staged(meas.problem, hw):
            continue
        timed = {space.spill_group(c) for c in meas.configs}
        first: dict = {}
        for est in origami.rank(meas.problem, hw, k=1 << 30):
            g = space.spill_group(est.config)
            if (space.census_spill_traffic(est.config, meas.problem, hw) or 0) > 0 and g not in timed and g not in first:
                first[g] = est.config
        if not first:
            continue
        shapes += 1
        new += len(first)
        heavy = sorted(first.values(), key=lambda c: -SPILL_BYTES[space.spill_group(c)])
        rows += [job_row(meas.problem, c, out) for c in dict.fromkeys((*heavy, *meas.configs))]
    return rows, shapes, new


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", default="h100")
    ap.add_argument("--sweep", default=None, help="training sweep CSV (default benchmarks/data/<profile>/ragged.csv)")
    ap.add_argument("-o", "--output", default=None, help="job file (default benchmarks/data/jobs/<profile>_spill.csv)")
    args = ap.parse_args(argv)
    sweep = Path(args.sweep) if args.sweep else ROOT / "benchmarks" / "data" / args.profile / "ragged.csv"
    if not sweep.exists():
        raise SystemExit(f"--sweep: {sweep} does not exist")
    if "heldout" in sweep.parent.name:
        raise SystemExit(f"--sweep: {sweep} is a held-out sweep (exhaustive already; no fit reads it)")
    out = Path(args.output) if args.output else ROOT / "benchmarks" / "data" / "jobs" / f"{args.profile}_spill.csv"
    rows, shapes, new = spill_rows(sweep.resolve(), args.profile)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_rows(out, [], JOB_COLS, rows)
    print(f"wrote {out} ({len(rows)} rows: {new} spilling configs new to {shapes} shapes of {sweep.name}, each shape's "
          f"timed configs beside them); time them with: torchrun --nproc-per-node gpu benchmarks/sweep.py --rows "
          f"{out} --rep-ms 3 --profile {args.profile}, then python benchmarks/missing_picks.py --profile "
          f"{args.profile} --apply")
    return 0


if __name__ == "__main__":
    sys.exit(main())

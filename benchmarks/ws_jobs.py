#!/usr/bin/env python
"""Job file for timing the warp-specialised kernel (kind 'ws') on the training sweeps (CPU).

    python benchmarks/ws_jobs.py [--cold] [--anchors 3] [-o benchmarks/data/ws_jobs.csv]
    torchrun --nproc-per-node gpu benchmarks/sweep.py --rows benchmarks/data/ws_jobs.csv \\
        --profile benchmarks/data/h200_ws/h200_ws_probe.yaml --rep-ms 3 [--timer cold]   # on the H200
    python benchmarks/ws_jobs.py --append                                   # CPU, after it

For every shape of the recorded training sweeps (benchmarks/data/h200/*.csv: never the held-out
split) that the 'ws' rows can run (``origami.space.check_ws``: 16-bit, aligned, batch 1, C rows of
whole 16-byte chunks), the job lists every 'ws' candidate AND the ``--anchors`` fastest configs the
file recorded for that shape, all into benchmarks/data/h200_ws/<file>.csv: the anchors are re-timed
in the same run as the new kernel (times from different days differ by several percent, H200.md),
and their ratio to the recorded times says how far the day drifted. ``origami.fit.read_sweep`` reads
the original and the h200_ws file of a set together (a re-timed anchor replaces its older time), so
``calibrate --fit`` can fit ``model.ws_efficiency`` on them.

``--cold`` does the same for the cold-L2 sweeps (benchmarks/data/h200_cold/ -> h200_cold_ws/, to be
timed with ``--timer cold``). ``--append`` then adds each h200_ws / h200_cold_ws file's 'ws' rows to
its original (the file the selection guard scores, which must hold every pick), with ``#`` lines
saying where they came from and how far that run's anchors drifted; the anchors stay in the h200_ws
file only (an original keeps one time per config, from one day). Atomic writes; appending twice adds
nothing (rows already there are kept as they are).

The sweep needs a profile with the kernel in its space (the shipped h200 has it only once fitted):
``--probe`` writes h200 with ``ws_efficiency`` 1 (the probe's value only decides the job's
``predicted_ns`` column, not which configs are timed).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

import origami  # noqa: E402
from benchmarks.sweep import JOB_COLS, job_row, merge_rows, read_rows, row_key, write_rows  # noqa: E402
from origami._encoding import K_WS  # noqa: E402
from origami.enumerate import row_to_config  # noqa: E402
from origami.fit import read_sweep  # noqa: E402
from origami.hardware import render_profile  # noqa: E402
from origami.select import score_problem  # noqa: E402

DATA = ROOT / "benchmarks" / "data"
OUT_DIR = DATA / "h200_ws"
PROBE = OUT_DIR / "h200_ws_probe.yaml"


def probe_profile(value: float = 1.0):
    return origami.load_profile("h200").replace_model(ws_efficiency=value)


def ws_configs(problem, hw) -> list:
    """The problem's 'ws' candidates (finite score: the kernel can run it), empty when none."""
    try:
        base, lat, _ = score_problem(problem, hw)
    except ValueError:
        return []
    rows = np.nonzero((base[:, 0] == K_WS) & np.isfinite(lat))[0]
    return [row_to_config(base[i], problem, hw) for i in rows]


def jobs(anchors: int, hw, cold: bool = False) -> tuple[list[dict], list[str]]:
    rows, notes = [], []
    src, dst = (DATA / "h200_cold", DATA / "h200_cold_ws") if cold else (DATA / "h200", OUT_DIR)
    for path in sorted(src.glob("*.csv")):
        out = (dst / path.name).relative_to(ROOT).as_posix()
        shapes = 0
        for m in read_sweep(path):
            ws = ws_configs(m.problem, hw)
            if not ws:
                continue
            shapes += 1
            best = [c for _, c in sorted(zip(m.ms, m.configs), key=lambda t: t[0])][:anchors]
            rows += [job_row(m.problem, cfg, out) for cfg in dict.fromkeys((*ws, *best))]
        notes.append(f"{path.relative_to(ROOT)}: {shapes} shapes the 'ws' kernel can run")
    return rows, notes


def append() -> list[str]:
    """Add every h200_ws / h200_cold_ws file's 'ws' rows to its original (sweep.merge_rows: rows already
    there are kept, the original's columns); returns what it did."""
    done = []
    for new_dir, orig_dir in ((OUT_DIR, DATA / "h200"), (DATA / "h200_cold_ws", DATA / "h200_cold")):
        for path in sorted(new_dir.glob("*.csv")):
            orig = orig_dir / path.name
            rows, old = read_rows(path), read_rows(orig)
            seen = {row_key(r) for r in old}
            ws = [r for r in rows if r["kind"] == "ws" and row_key(r) not in seen]
            timed = {row_key(r): float(r["median_ms"]) for r in old if r.get("median_ms")}
            drift = sorted(float(r["median_ms"]) / timed[row_key(r)] for r in rows
                           if r["kind"] != "ws" and r.get("median_ms") and row_key(r) in timed)
            if not ws:
                continue
            with path.open() as f:
                header = [f"# ws rows from {path.relative_to(ROOT)}: {line[1:].strip()}" for line in f
                          if line.startswith("#")]
            if drift:
                header.append(f"# ws rows from {path.relative_to(ROOT)}: its {len(drift)} re-timed anchors ran "
                              f"{drift[len(drift) // 2]:.3f}x (median) their times here")
            merge_rows(orig, [(header, [], ws)])
            done.append(f"{orig.relative_to(ROOT)}: {len(ws)} 'ws' rows added from {path.relative_to(ROOT)}"
                        + (f" (anchors {drift[len(drift) // 2]:.3f}x)" if drift else ""))
    return done


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--anchors", type=int, default=3, help="fastest recorded configs re-timed per shape")
    ap.add_argument("-o", "--output", default=None, help="the job file (default benchmarks/data/ws_jobs[_cold].csv)")
    ap.add_argument("--cold", action="store_true", help="the cold-L2 sweeps (h200_cold -> h200_cold_ws)")
    ap.add_argument("--append", action="store_true", help="add the recorded 'ws' rows to their original files")
    args = ap.parse_args(argv)
    if args.append:
        print("\n".join(append()) or "nothing to append")
        return 0
    if args.anchors < 0:
        ap.error(f"--anchors: must be >= 0, got {args.anchors}")
    args.output = args.output or str(DATA / ("ws_jobs_cold.csv" if args.cold else "ws_jobs.csv"))
    hw = probe_profile()
    rows, notes = jobs(args.anchors, hw, args.cold)
    print("\n".join(notes))
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    from tritonblas.tables import AtomicFile

    with AtomicFile(PROBE) as f:
        f.write(render_profile(hw.to_yaml_dict(), ["h200 with model.ws_efficiency 1: the probe profile of "
                                                   "benchmarks/ws_jobs.py (not fitted; decides nothing timed)"]))
    out = Path(args.output)
    write_rows(out, [], JOB_COLS, rows)
    print(f"wrote {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out} ({len(rows)} rows) and "
          f"{PROBE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

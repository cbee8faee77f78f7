"""How far the model is off where the wide MMA reads an operand through registers, on the training sweeps.

    python benchmarks/kmajor_residuals.py [--profile h200] [--heldout]

Per timed row of the tf32 and fp8 training sweeps (benchmarks/data/<profile>/ and <profile>_cold/; with
``--heldout``, also <profile>_heldout/: report only, nothing is fitted here), measured / predicted time, grouped by whether
the problem is in the register-read regime (origami.kmajor.mma_reads_through_registers: an N-major B
or M-major A that the launch does not stage K-major), by MMA width (tiles under the instruction's M
use the narrow MMA, which this does not slow the same way) and by BLOCK_N (the N-major B tile's width).
Prints the geometric mean, p10 and p90 of the ratio and the row count per group. CPU only.

    python benchmarks/kmajor_residuals.py --cost 0,1,1.5,2,2.5,3

scores the regime's training rows with ``model.mn_major_tile_cost`` at each value and prints the median
|log(measured / predicted)| and the mean log ratio (training sweeps only: how its value was chosen).
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import origami  # noqa: E402
from origami.fit import read_sweep  # noqa: E402
from origami.kmajor import KMAJOR_ONLY_DTYPES, mma_reads_through_registers  # noqa: E402
from benchmarks.splitk_eval import _files, numbers, ratio_cells  # noqa: E402  (the one list of sweeps; table cells)


def groups(hw, files) -> dict[tuple, list[float]]:
    """{(file's dtype, regime, width, block_n): [measured / predicted, ...]} over the rows the model scores."""
    out: dict[tuple, list[float]] = defaultdict(list)
    im = {key: shape[0] for key, shape in hw.matrix_instr_shape.items()}
    for f in files:
        for meas in read_sweep(f):
            p = meas.problem
            if p.a_dtype not in KMAJOR_ONLY_DTYPES:
                continue
            regime = "registers" if mma_reads_through_registers(p, hw) else "k-major"
            for cfg, ms in zip(meas.configs, meas.ms):
                try:
                    pred = origami.predict(p, hw, cfg).latency_ns
                except ValueError:  # a recorded config the current space no longer holds
                    continue
                width = "narrow" if cfg.block_m < im[p.a_dtype.rate_key] else "wide"
                out[(p.a_dtype.value, regime, width, cfg.block_n)].append(ms * 1e6 / pred)
    return out


def scan(hw, costs, files) -> int:
    """Print, per cost, the regime rows' median |log(measured / predicted)| and mean log ratio."""
    rows = [(m.problem, c, ms) for f in files for m in read_sweep(f)
            if m.problem.a_dtype in KMAJOR_ONLY_DTYPES and mma_reads_through_registers(m.problem, hw)
            for c, ms in zip(m.configs, m.ms)]
    print(f"{len(rows)} training rows of the register-read regime ({hw.name}): cost, median |log(meas/pred)|, mean log")
    for cost in costs:
        v = hw.replace_model(mn_major_tile_cost=cost)
        r = []
        for p, cfg, ms in rows:
            try:
                r.append(np.log(ms * 1e6 / origami.predict(p, v, cfg).latency_ns))
            except ValueError:  # a recorded config the current space no longer holds
                continue
        r = np.array(r)
        print(f"  {cost:5.2f}  {np.median(np.abs(r)):.3f}  {r.mean():+.3f}")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="h200")
    ap.add_argument("--heldout", action="store_true", help="also the held-out sweeps (report only)")
    ap.add_argument("--cost", default=None, metavar="C1,C2,...",
                    help="score the regime's training rows at these model.mn_major_tile_cost values")
    args = ap.parse_args(argv)
    hw = origami.load_profile(args.profile)
    train, heldout = _files(args.profile)
    if args.cost is not None:
        return scan(hw, numbers(args.cost, "--cost", ap), train)
    table = groups(hw, train + (heldout if args.heldout else []))
    split = "training and held-out" if args.heldout else "training"
    print(f"measured / predicted, {hw.name} ({split} sweeps): dtype regime width block_n: rows geomean p10 p90")
    for key in sorted(table):
        print(f"  {key[0]:9s} {key[1]:9s} {key[2]:6s} n{key[3]:<4d} {ratio_cells(table[key])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

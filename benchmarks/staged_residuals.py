"""How far the model is off on register-staged rows, by the warps resident on an SM, on the training sweeps.

    python benchmarks/staged_residuals.py [--profile h200] [--heldout]

Per timed bf16/fp16 row of the training sweeps (benchmarks/data/<profile>/ and <profile>_cold/; with
``--heldout``, also <profile>_heldout/: report only, nothing is fitted here), measured / predicted time,
grouped by alignment class (register-staged: origami.space.register_staged; aligned: 16 bytes or more)
and by the warps the row's main wave keeps resident on one SM (programs per SM x num_warps, the
programs per SM as the model counts them: min(programs, SMs x resident programs) / SMs, rounded up).
Prints the geometric mean, p10 and p90 of the ratio and the row count per group. CPU only.

    python benchmarks/staged_residuals.py --scan 4,5,6.9 --exponent 0,0.25,0.5

scores the register-staged training rows at every (model.unaligned_penalty, model.staged_load_exponent)
pair and prints the median |log(measured / predicted)| and the mean log ratio (training sweeps only:
how the values were chosen).

    python benchmarks/staged_residuals.py --rates

the measured load rate of an SM (operand bytes the tiles read / time / SMs, bytes/ns) of the
register-staged data-parallel training rows, by num_warps and programs per SM: what the model's
staged_load_exponent describes (origami._core._staged_load_factor).
"""

from __future__ import annotations

import argparse
import math
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import origami  # noqa: E402
from origami.config import Kind  # noqa: E402
from origami.fit import read_sweep  # noqa: E402
from origami.space import register_staged, resident_programs  # noqa: E402
from benchmarks.splitk_eval import _files, numbers, ratio_cells  # noqa: E402  (the one list of sweeps; table cells)

DTYPES = ("bf16", "fp16")
WARP_BINS = (4, 8, 16, 32, 64)


def programs(p, cfg) -> int:
    """The programs the config launches on problem ``p`` (data-parallel: tiles; split-K: tiles x
    splits; persistent and Stream-K: their grid)."""
    tiles = -(-p.m // cfg.block_m) * -(-p.n // cfg.block_n) * p.batch
    if cfg.kind == Kind.DP:
        return tiles
    if cfg.kind == Kind.SPLITK:
        return tiles * cfg.split_k
    return cfg.grid or tiles


def resident_warps(p, cfg, hw) -> int:
    """Warps of the main wave on one SM: ceil(min(programs, SMs x resident) / SMs) x num_warps."""
    cus = hw.compute["compute_units"]
    occ = max(1, resident_programs(cfg, p, hw))
    return math.ceil(min(programs(p, cfg), cus * occ) / cus) * cfg.num_warps


def _rows(files, hw):
    for f in files:
        for meas in read_sweep(f):
            if meas.problem.a_dtype.value in DTYPES:
                for cfg, ms in zip(meas.configs, meas.ms):
                    yield meas.problem, cfg, ms


def groups(hw, files) -> dict[tuple, list[float]]:
    """{(class, warp bin): [measured / predicted, ...]} over the rows the model scores."""
    out: dict[tuple, list[float]] = defaultdict(list)
    for p, cfg, ms in _rows(files, hw):
        cls = "staged" if register_staged(p, hw) else ("aligned" if p.align_bytes >= 16 else "narrow")
        try:
            pred = origami.predict(p, hw, cfg).latency_ns
        except ValueError:  # a recorded config the current space no longer holds
            continue
        w = resident_warps(p, cfg, hw)
        out[(cls, next((b for b in WARP_BINS if w <= b), WARP_BINS[-1] * 2))].append(ms * 1e6 / pred)
    return out


def rates(hw, files) -> int:
    """Print the register-staged data-parallel rows' per-SM load rate by (num_warps, programs per SM)."""
    cus = hw.compute["compute_units"]
    out: dict[tuple, list[float]] = defaultdict(list)
    for p, cfg, ms in _rows(files, hw):
        if cfg.kind != Kind.DP or not register_staged(p, hw):
            continue
        tiles = programs(p, cfg)
        loaded = tiles * -(-p.k // cfg.block_k) * (cfg.block_m * p.a_dtype.bytes + cfg.block_n * p.b_dtype.bytes) \
            * cfg.block_k
        per_sm = math.ceil(min(tiles, cus * max(1, resident_programs(cfg, p, hw))) / cus)
        out[(cfg.num_warps, per_sm)].append(loaded / (ms * 1e6) / cus)
    print(f"register-staged data-parallel rows ({hw.name}): num_warps, programs per SM: rows, "
          "bytes/ns an SM loaded (median, p90)")
    for key in sorted(out):
        r = np.array(out[key])
        print(f"  w{key[0]:<2d} x{key[1]}  {r.size:5d}  {np.median(r):6.1f}  {np.percentile(r, 90):6.1f}")
    return 0


def scan(hw, penalties, exponents, files) -> int:
    """Print, per (unaligned_penalty, staged_load_exponent), the register-staged rows' median
    |log(measured / predicted)| and mean log ratio."""
    rows = [(p, c, ms) for p, c, ms in _rows(files, hw) if register_staged(p, hw)]
    print(f"{len(rows)} register-staged training rows ({hw.name}): unaligned_penalty staged_load_exponent "
          "median |log(meas/pred)| mean log")
    for pen in penalties:
        for e in exponents:
            v = hw.replace_model(unaligned_penalty=pen, staged_load_exponent=e)
            r = []
            for p, cfg, ms in rows:
                try:
                    r.append(np.log(ms * 1e6 / origami.predict(p, v, cfg).latency_ns))
                except ValueError:
                    continue
            r = np.array(r)
            print(f"  {pen:6.2f} {e:6.2f}  {np.median(np.abs(r)):.3f}  {r.mean():+.3f}", flush=True)
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="h200")
    ap.add_argument("--heldout", action="store_true", help="also the held-out sweeps (report only)")
    ap.add_argument("--scan", default=None, metavar="P1,P2,...",
                    help="score the register-staged training rows at these model.unaligned_penalty values")
    ap.add_argument("--exponent", default="0", metavar="E1,E2,...",
                    help="with --scan: these model.staged_load_exponent values (0: off)")
    ap.add_argument("--rates", action="store_true", help="the data-parallel rows' per-SM load rates")
    args = ap.parse_args(argv)
    hw = origami.load_profile(args.profile)
    train, heldout = _files(args.profile)
    if args.rates:
        return rates(hw, train)
    if args.scan is not None:
        return scan(hw, numbers(args.scan, "--scan", ap), numbers(args.exponent, "--exponent", ap), train)
    table = groups(hw, train + (heldout if args.heldout else []))
    split = "training and held-out" if args.heldout else "training"
    print(f"measured / predicted, {hw.name} ({split} bf16/fp16 sweeps): class, resident warps per SM (at most): "
          "rows geomean p10 p90")
    for key in sorted(table):
        print(f"  {key[0]:8s} {key[1]:4d} {ratio_cells(table[key], 6)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

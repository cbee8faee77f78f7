"""Decode-shaped tiles outside origami's space, on our own kernels: is the M <= 16 ceiling the kernels' or the space's?

    python benchmarks/decode_probe.py [--profile h100] [--shapes benchmarks/shapes/decode.yaml] \
        [--out-jobs benchmarks/data/decode_probe_jobs.csv]
    python benchmarks/sweep.py --rows benchmarks/data/decode_probe_jobs.csv --profile h100 --timer cold

Why: on the H100 (session 29, ``benchmarks/results/compare_decode_h100_c95e843.csv``, cold L2) the best
config of origami's exhaustive space ran the 30 decode GEMMs of models.py's LLMs at 0.954x torch's time
(geometric mean), and the small ones (1x2048x2048, 1x512x2048, 8x2048x2048) at 0.77-0.84x: a ceiling no
selection fixes. The space's 16-row tiles are at least 64 wide and read at most 128 bf16 of K per step
(``origami.enumerate``); a GEMV streams a K-major weight, where narrower column blocks and longer K steps
put more programs and more bytes in flight. Those tiles run on the existing data-parallel and split-K
kernels (they pass every predicate of ``origami.space.violations``), so they can be timed without a new
kernel before one is built.

Measured (H100, session 29, ``benchmarks/results/compare_decode_probe_h100_409ee65.csv``, one run): the best of
the space and the probe re-timed at 0.985x torch (the space's alone 0.954x); 24 of the 30 bests are probe tiles
(dp 16x32x256 / 16x64x256, split-K 16x32x128). The model as it stands ranks them badly (it would pick 16x16x512 dp,
which runs slow), so they are not in the space.

Writes a ``sweep.py --rows`` job file: per shape, BLOCK_M 16 with BLOCK_N {16, 32, 64} x BLOCK_K
{128, 256, 512} x warps {2, 4} x stages {3, 4}, data-parallel and split-K {2, 4, 8}, minus the rows
origami's space already holds (``origami.candidates``) and the rows a predicate refuses. Its timings go to
``benchmarks/data/<profile>_probe/decode.csv``, apart from the space's sweeps (``<profile>/``, ``<profile>_cold/``,
``<profile>_heldout/``, which the fits, the guards and the residual tools read), since no profile selects these
rows. CPU only (it writes a file).

    python benchmarks/decode_probe.py --best-table TABLE.json --profile h100 SWEEP.csv [SWEEP.csv ...]

writes a tile table (``tritonblas.tables``) of the fastest recorded config per shape over the given
sweeps (the space's and the probe's), for a model run under ``TRITONBLAS_TABLE``: what the decode step
of a real model gains if every GEMM ran its best measured tile.

    python benchmarks/decode_probe.py --rank --profile h100 SPACE.csv PROBE.csv

prints how origami's model ranks the probe's tiles, from recorded times only (CPU): per shape of SPACE.csv (an
exhaustive sweep of the space), the config the model predicts fastest among SPACE.csv's rows (its pick) and
among those and PROBE.csv's (its pick were the probe's tiles in the space), each as the merged best time over its
measured time; geomean, p10 and worst. On the H100's sweeps with h100.yaml's terms: 0.933 without the probe's
tiles, 0.888 with them (the model ranks them worse than it ranks the space's), the reason they stay out of the space.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import origami  # noqa: E402
from origami.config import Kind, TileConfig  # noqa: E402
from origami.shapes import load_shapes  # noqa: E402
from origami.space import violations  # noqa: E402

sys.path.insert(0, str(ROOT / "benchmarks"))
from sweep import JOB_COLS, job_row, shard_contents, write_rows  # noqa: E402  (the sweep CSV's own helpers)

BLOCK_N = (16, 32, 64)
BLOCK_K = (128, 256, 512)
WARPS = (2, 4)
STAGES = (3, 4)
SPLITS = (1, 2, 4, 8)  # 1: data-parallel


def probe_configs(problem, hw) -> list[TileConfig]:
    """The probe's tiles for ``problem`` that origami's space lacks and every predicate admits."""
    space = set(origami.candidates(problem, hw))
    out = []
    for bn in BLOCK_N:
        for bk in BLOCK_K:
            for w in WARPS:
                for s in STAGES:
                    for sk in SPLITS:
                        kind = Kind.DP if sk == 1 else Kind.SPLITK
                        cfg = TileConfig(kind, 16, bn, bk, w, s, 1, split_k=sk)
                        if cfg in space or violations(cfg, problem, hw):
                            continue
                        out.append(cfg)
    return out


def job_rows(shapes, hw, out: str) -> list[dict]:
    return [job_row(p, cfg, out) for p in shapes for cfg in probe_configs(p, hw)]


def best_table(sweeps, hw, path: str) -> str:
    """Write the tile table of each shape's fastest row over ``sweeps`` to ``path``; one line saying so. Shapes
    are keyed as compare.py keys them, without ``align_bytes`` (the table's problems get GemmProblem's default,
    16 bytes: what the decode set's contiguous operands have)."""
    from origami.problem import GemmProblem
    from tritonblas import tables

    from compare import PROBLEM_COLS as KEY_COLS, sweep_best  # every timed row, a shape with one row included

    best: dict = {}
    for f in sweeps:
        for key, timed in sweep_best(Path(f)).items():
            kw = dict(zip(KEY_COLS, key))
            p = GemmProblem(**{c: int(v) if c in ("m", "n", "k", "batch", "align_bytes") else v for c, v in kw.items()})
            ms, cfg = timed[0]
            if p not in best or ms < best[p][0]:
                best[p] = (ms, cfg)
    if not best:
        raise SystemExit(f"--best-table: no timed row in {', '.join(map(str, sweeps))}")
    tables.write_table(tables.table_of({p: c for p, (_, c) in best.items()}, hw), path)
    return f"{path}: {len(best)} shapes, each its fastest recorded config"


def rank_report(space: Path, probe: Path, hw) -> list[str]:
    """The ``--rank`` lines: the model's predicted-best config among the recorded rows of each shape of ``space``,
    without and with ``probe``'s rows for that shape, scored as (best time over both files) / (its time)."""
    from origami.fit import efficiency_summary, read_sweep
    from origami.select import predict

    together = {m.problem: dict(zip(m.configs, m.ms)) for m in read_sweep([space, probe])}  # rows merged per shape
    effs: dict = {"space's tiles": [], "space's and the probe's tiles": []}
    for m in read_sweep(space):
        both = together[m.problem]
        pred = {c: predict(m.problem, hw, c).latency_ns for c in both}  # each config predicted once
        best = min(both.values())
        for label, times in zip(effs, (dict(zip(m.configs, m.ms)), both)):
            effs[label].append(best / times[min(times, key=pred.__getitem__)])
    if not effs["space's tiles"]:
        raise SystemExit(f"--rank: no timed shape in {space}")
    n = len(effs["space's tiles"])
    out = [f"model's pick / best of both files, {n} shapes of {space.name} ({hw.name}):"]
    for label, e in effs.items():
        geo, p10 = efficiency_summary(e)
        out.append(f"  among the {label:30} geomean {geo:.3f}  p10 {p10:.3f}  worst {min(e):.3f}")
    return out


def merged(sweeps, path: str) -> str:
    """Write every row of ``sweeps`` to one sweep CSV ``path`` (the first file's columns and ``#`` lines), for
    ``compare.py --sweep``, which re-times one file's fastest config per shape; one line saying so."""
    parts = [shard_contents(Path(f)) for f in sweeps]
    rows = [r for _, _, part in parts for r in part]
    if not rows:
        raise SystemExit(f"--merged: no row in {', '.join(map(str, sweeps))}")
    header, cols, _ = next(part for part in parts if part[1])
    write_rows(Path(path), header, cols, rows)
    return f"{path}: {len(rows)} rows of {len(sweeps)} sweeps"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--profile", default="h100")
    ap.add_argument("--shapes", default=str(ROOT / "benchmarks" / "shapes" / "decode.yaml"))
    ap.add_argument("--out-jobs", default=str(ROOT / "benchmarks" / "data" / "decode_probe_jobs.csv"))
    ap.add_argument("--best-table", default=None, metavar="TABLE.json",
                    help="write the fastest recorded config per shape of the SWEEP files as a tile table")
    ap.add_argument("--merged", default=None, metavar="OUT.csv",
                    help="write the rows of the SWEEP files into one sweep CSV (for compare.py --sweep)")
    ap.add_argument("--rank", action="store_true",
                    help="SPACE.csv PROBE.csv: the model's pick without and with the probe's tiles, from recorded times")
    ap.add_argument("sweeps", nargs="*", metavar="SWEEP.csv")
    args = ap.parse_args(argv)
    hw = origami.load_profile(args.profile)
    if args.rank:
        if len(args.sweeps) != 2:
            ap.error("--rank takes two files: SPACE.csv PROBE.csv")
        print("\n".join(rank_report(Path(args.sweeps[0]), Path(args.sweeps[1]), hw)))
        return 0
    if args.best_table or args.merged:
        if not args.sweeps:
            ap.error("--best-table and --merged need SWEEP.csv files")
        if args.best_table:
            print(best_table([Path(f) for f in args.sweeps], hw, args.best_table))
        if args.merged:
            print(merged([Path(f) for f in args.sweeps], args.merged))
        return 0
    if args.sweeps:
        ap.error("SWEEP.csv files go with --best-table or --merged")
    shapes = load_shapes(args.shapes)
    out = f"benchmarks/data/{hw.name}_probe/decode.csv"
    rows = job_rows(shapes, hw, out)
    if not rows:
        raise SystemExit(f"--shapes {args.shapes}: no probe row (every tile is in the space or refused)")
    dest = Path(args.out_jobs)
    dest.parent.mkdir(parents=True, exist_ok=True)
    write_rows(dest, [], JOB_COLS, rows)
    print(f"{dest}: {len(rows)} rows over {len(shapes)} shapes -> {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

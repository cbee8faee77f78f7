"""Exhaustive (or sampled) timing of our own candidate space per shape: the oracle.

    python benchmarks/sweep.py --set square [--profile h200] [--max-configs 0] [--dtype bf16]
                               [--out benchmarks/data/h200/square.csv] [--budget-s 500] [--gpus all]

For each shape: every config of ``origami.candidates(problem, profile)`` (or a seeded sample of
``--max-configs`` that always contains the model's top 16), compiled ahead of time in parallel
processes, then timed with ``triton.testing.do_bench(return_mode="median")`` on random inputs.
One CSV row per shape × config in the contract format (DESIGN.md §8): problem columns, one column
per TileConfig field, ``median_ms`` (empty on failure, reason in ``error``), ``predicted_ns``;
provenance in ``#`` header lines. Resumable: rows already in the output are skipped. ``--gpus``
shards shapes over GPUs (one process each, shape i on GPU i mod n) and merges the shards.

    python benchmarks/sweep.py --jobs llm dlrm grid:fp16:40 ... [--out-dir DIR] [--budget-s 480]

runs several sets in one go (``SET[:DTYPE[:LIMIT]]`` each, one CSV per job named as above, under
``--out-dir`` or benchmarks/data/<profile>/), with one compile pool and one time budget for all:
the spawned compile workers import torch and Triton once (~10 s) instead of once per set.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import os
import random
import subprocess
import sys
import time
from dataclasses import fields
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import origami  # noqa: E402
from origami.config import Kind, TileConfig  # noqa: E402
from origami.shapes import load_shapes  # noqa: E402

PROBLEM_COLS = ["m", "n", "k", "batch", "a_dtype", "b_dtype", "c_dtype", "a_layout", "b_layout", "align_bytes"]
CONFIG_COLS = [f.name for f in fields(TileConfig)]
COLS = PROBLEM_COLS + CONFIG_COLS + ["median_ms", "error", "predicted_ns"]


def provenance() -> list[str]:
    import torch
    import triton

    sha = os.environ.get("GIT_SHA") or subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none"
    return [f"git_sha={sha or 'unknown'}", f"gpu={gpu}", f"torch={torch.__version__}", f"triton={triton.__version__}",
            f"date={datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')}"]


def cell(v) -> str:
    if v is None:
        return ""
    return v.value if hasattr(v, "value") else str(v)


def row_key(row: dict) -> tuple:
    return tuple(row.get(c) or "" for c in PROBLEM_COLS + CONFIG_COLS)  # rows of older files lack align_bytes


def read_rows(path: Path) -> list[dict]:
    if not path.exists():
        return []
    with path.open() as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def problem_with_dtype(p, dtype: str):
    c = origami.DType.parse(dtype, "--dtype").default_output
    align = origami.GemmProblem.contiguous_align_bytes(p.m, p.n, p.k, dtype, dtype, c, p.a_layout, p.b_layout,
                                                       p.batch)  # the sweep's tensors are contiguous
    return origami.GemmProblem(p.m, p.n, p.k, dtype, dtype, c, p.a_layout, p.b_layout, p.batch, align)


def _stable_hash(cfg: TileConfig) -> int:
    import hashlib

    return int(hashlib.sha1(cfg.short().encode()).hexdigest()[:8], 16)


def configs_for(p, hw, max_configs: int, seed: int) -> list[tuple[TileConfig, float]]:
    """Every candidate (max_configs = 0), or the model's top 16 plus a sample chosen by a stable
    hash of the config, so that the same configs recur across shapes and their compiled kernels
    are reused from Triton's cache."""
    import numpy as np

    from origami.enumerate import row_to_config
    from origami.select import score_problem

    base, lat, _ = score_problem(p, hw)
    idx = [int(i) for i in np.nonzero(np.isfinite(lat))[0]]
    idx.sort(key=lambda i: (lat[i], i))
    cands = []
    seen = set()
    for i in idx:
        cfg = row_to_config(base[i], p, hw)
        if cfg not in seen:
            seen.add(cfg)
            cands.append((cfg, float(lat[i])))
    if not max_configs or len(cands) <= max_configs:
        return cands
    n_top = min(16, max_configs)
    top, rest = cands[:n_top], cands[n_top:]
    rest.sort(key=lambda cp: (_stable_hash(cp[0]) ^ seed) % 1_000_003)
    return top + rest[: max_configs - len(top)]


def run_shard(args, jobs: list[tuple[list, Path]], device: str) -> None:
    """Sweep each job's (shapes, output CSV) in turn on ``device``, with one compile pool and one
    time budget (``args.budget_s``, counted from the shard's start) for all of them."""
    import torch

    from tritonblas.plan import compile_pool

    if device.startswith("cuda"):
        # the timers (CUDA graphs, events) work on the current device: make it the shard's GPU, else a
        # capture on cuda:0 records nothing of a launch on cuda:1 (it measured 0.0 ms, 2026-11-30)
        torch.cuda.set_device(torch.device(device))
    hw = origami.load_profile(args.profile)
    t_start = time.time()
    pool = [compile_pool(args.workers) if args.workers else None]  # one set of workers for every shape
    try:
        for shapes, out in jobs:
            done = {row_key(r) for r in read_rows(out)}
            new_file = not out.exists()
            out.parent.mkdir(parents=True, exist_ok=True)
            if not _sweep_shapes(args, shapes, out, device, hw, done, new_file, t_start, pool):
                break
    finally:
        if pool[0] is not None:
            pool[0].shutdown(cancel_futures=True)


def _sweep_shapes(args, shapes, out: Path, device: str, hw, done: set, new_file: bool, t_start: float,
                  pool: list) -> bool:
    """Append ``shapes``' rows to ``out``; False when the time budget ran out. ``pool`` is a
    one-element list holding the compile pool (replaced there when a worker dies)."""
    import torch
    import triton

    from tritonblas.plan import _example_tensors, compile_pool, make_plan, precompile, prepare_launch

    with out.open("a", newline="") as f:
        if new_file:
            for line in provenance() + [f"profile={hw.name} hash={hw.content_hash}", f"args={' '.join(sys.argv[1:])}"]:
                f.write(f"# {line}\n")
        w = csv.DictWriter(f, fieldnames=COLS)
        if new_file:
            w.writeheader()
        for p in shapes:
            if time.time() - t_start > args.budget_s:
                print(f"[{device}] budget reached, stopping (resume later)", flush=True)
                return False
            todo = []
            for cfg, pred in configs_for(p, hw, args.max_configs, args.seed):
                row = {c: cell(getattr(p, c)) for c in PROBLEM_COLS}
                row.update({c: cell(getattr(cfg, c)) for c in CONFIG_COLS})
                if row_key(row) in done:
                    continue
                todo.append((cfg, pred, row))
            if not todo:
                continue
            plans, errors = [], []
            for cfg, _, _ in todo:
                try:
                    plans.append(make_plan(cfg, p, hw, tma=args.tma))
                    errors.append(None)
                except ValueError as e:
                    plans.append(None)
                    errors.append(str(e)[:300])
            t0 = time.time()
            ok = [pl for pl in plans if pl is not None]
            comp = precompile(ok, device, pool=pool[0]) if pool[0] is not None else [None] * len(ok)
            if pool[0] is not None and any(e and "BrokenProcessPool" in e for e in comp):
                pool[0].shutdown(cancel_futures=True)  # a worker died (it is reported per config): fresh workers
                pool[0] = compile_pool(args.workers)
            comp_iter = iter(comp)
            errors = [e if pl is None else next(comp_iter) for pl, e in zip(plans, errors)]
            t1 = time.time()
            a, b, c_out = _example_tensors(p, device)
            kw = {}
            if a.dtype in (torch.float8_e4m3fn, torch.float8_e5m2):
                kw = dict(scale_a=torch.ones((), device=device), scale_b=torch.ones((), device=device))
            kw["allow_tf32"] = p.a_dtype.value == "tf32"
            ref = a.float() @ b.float()  # every timed config's last output is checked against it
            kept = [(x, x.clone()) for x in (a, b, ref)]  # must be unchanged after the shape (below)
            rows_out = []
            for (cfg, pred, row), pl, err in zip(todo, plans, errors):
                ms = ""
                if err is None:
                    try:
                        # bound once: the timing is the kernel's, not Python's argument checking
                        fn = prepare_launch(pl, a, b, c_out, **kw).run
                        c_out.fill_(float("nan"))
                        if args.timer == "cold":
                            t = cold_graph_ms(fn, args.rep_ms)
                        elif args.timer == "graph":
                            fn()  # compile / load outside the capture
                            # do_bench_cudagraph launches on a fresh side stream that does not wait for
                            # this one: without the sync, this launch and its first ones overlap and
                            # share the Stream-K / split-K counters (seen on the H200: counters left at
                            # 108 instead of 0, and tiles never written, 2026-11-30)
                            torch.cuda.synchronize()
                            t = triton.testing.do_bench_cudagraph(fn, rep=args.rep_ms, return_mode="median")
                        else:
                            t = triton.testing.do_bench(fn, warmup=args.warmup_ms, rep=args.rep_ms, return_mode="median")
                        if not t > 0:
                            raise RuntimeError(f"the timer returned {t} ms (the launch was not measured)")
                        check_result(c_out, ref, p)  # what the timed launches (graph replays) left in out
                        if cfg.kind in (Kind.STREAMK, Kind.SPLITK):
                            check_counters(device)
                        ms = f"{t:.6f}"
                    except Exception as e:  # noqa: BLE001 - recorded per config
                        err = f"{type(e).__name__}: {e}".splitlines()[0][:300]
                row.update(median_ms=ms, error=err or "", predicted_ns=f"{pred:.1f}")
                rows_out.append(row)
            if not all(same_bits(x, y) for x, y in kept):
                # something wrote into the inputs: no row of this shape can be trusted
                for row in rows_out:
                    row.update(median_ms="", error="RuntimeError: the shape's inputs changed during the sweep")
            for row in rows_out:
                w.writerow(row)
            f.flush()
            print(f"[{device}] {p.describe()}: {len(todo)} configs, compile {t1 - t0:.1f}s, time {time.time() - t1:.1f}s",
                  flush=True)
    return True


# relative Frobenius error allowed of a timed config's output against the fp32 product of the same
# inputs: output rounding (bf16 2^-9 per element), fp32 accumulation order, TF32 / fp8 operand rounding
_REL_TOL = {"fp32": 1e-4, "tf32": 1e-2, "fp16": 1e-2, "bf16": 2e-2, "fp8_e4m3": 5e-2, "fp8_e5m2": 1e-1}


_FLUSH_BYTES = 256 * 1024 * 1024  # what triton.testing.do_bench zeroes before every call (Triton 3.6)


def cold_graph_ms(fn, rep_ms: float, inner: int = 8) -> float:
    """Median GPU time (ms) of ``fn`` run right after an L2 flush, with no host cost in it.

    ``do_bench`` flushes L2 before every call (the project's timing rule, DESIGN.md §8) but its
    events also take in the host's launch cost whenever that exceeds the flush (measured on the H200,
    2026-11-30, benchmarks/diag_forced.py: a 3 us kernel read 51 us through Triton's JIT launch and
    8 us through the dispatcher's fast path). Here two CUDA graphs are captured: ``inner`` x (zero a
    256 MiB buffer, then ``fn``) and ``inner`` x (zero the buffer) alone; their replays are timed in
    alternation with events, and the result is the median over pairs of the difference / ``inner``.
    That is the kernel's cold-L2 time as do_bench defines it (the write-back of the flush's dirty
    lines included), free of host launch cost. Synchronises before capturing: the capture stream
    must not overlap a launch still in flight on this one (Stream-K / split-K counters)."""
    import torch

    cache = torch.empty(_FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")
    fn()
    torch.cuda.synchronize()
    with_fn, flush_only = torch.cuda.CUDAGraph(), torch.cuda.CUDAGraph()
    with torch.cuda.graph(with_fn):
        for _ in range(inner):
            cache.zero_()
            fn()
    with torch.cuda.graph(flush_only):
        for _ in range(inner):
            cache.zero_()
    with_fn.replay()
    flush_only.replay()
    torch.cuda.synchronize()

    def pair():
        ev = [torch.cuda.Event(enable_timing=True) for _ in range(4)]
        ev[0].record()
        with_fn.replay()
        ev[1].record()
        ev[2].record()
        flush_only.replay()
        ev[3].record()
        return ev

    first = pair()
    torch.cuda.synchronize()
    pair_ms = first[0].elapsed_time(first[1]) + first[2].elapsed_time(first[3])
    events = [pair() for _ in range(max(5, min(100, int(rep_ms / max(pair_ms, 1e-3)))))]
    torch.cuda.synchronize()
    diffs = sorted((e[0].elapsed_time(e[1]) - e[2].elapsed_time(e[3])) / inner for e in events)
    del with_fn, flush_only, cache
    return diffs[len(diffs) // 2]


def check_result(out, ref, p) -> None:
    """Raise if ``out`` (what the timed launches left) is not ``ref`` within the dtype's tolerance: a
    config that computes a wrong result must not be recorded as fast (NaN-filled before timing, so an
    output the kernel never wrote fails too)."""
    err = float((out.float() - ref).norm() / ref.norm().clamp_min(1e-30))
    tol = _REL_TOL.get(p.a_dtype.value, 5e-2)
    if not err <= tol:  # NaN fails too
        raise RuntimeError(f"wrong result: relative error {err:.3g} > {tol:g} after timing")


def same_bits(x, y) -> bool:
    """Bitwise equality of two same-shaped tensors of any dtype (torch.equal has no fp8 kernels)."""
    import torch

    return torch.equal(x.contiguous().view(torch.uint8), y.contiguous().view(torch.uint8))


def check_counters(device) -> None:
    """Raise (after re-zeroing them) if the cached Stream-K / split-K counters of this device's current
    stream are not all zero: every launch must leave them zero (``plan._workspace``'s contract), and
    a launch after one that did not would mis-count its contributors."""
    import torch

    from tritonblas import plan as planmod

    _, counters = planmod._workspace(torch.device(device), 1, 1)
    left = int(torch.count_nonzero(counters))
    if left:
        counters.zero_()
        raise RuntimeError(f"{left} Stream-K/split-K counters left non-zero after timing")


def add_shape_args(ap: argparse.ArgumentParser) -> None:
    """The shape-set options shared by sweep.py and compare.py (see :func:`shape_set`)."""
    ap.add_argument("--set", help="shape set name under benchmarks/shapes/")
    ap.add_argument("--shapes", help="path to a shapes YAML file (instead of --set)")
    ap.add_argument("--profile", default="h200")
    ap.add_argument("--dtype", default=None, help="override every shape's dtype (bf16 fp16 tf32 fp8_e4m3)")
    ap.add_argument("--limit", type=int, default=0, help="only the first N shapes")


def shape_set(args) -> tuple[str, Path, list]:
    """(set name, shapes file, problems) for :func:`add_shape_args`' options: ``--dtype`` applied
    (at the alignment contiguous tensors of that dtype have), then ``--limit``."""
    src = Path(args.shapes) if args.shapes else ROOT / "benchmarks" / "shapes" / f"{args.set}.yaml"
    shapes = load_shapes(src)
    if args.dtype:
        shapes = [problem_with_dtype(p, args.dtype) for p in shapes]
    if args.limit:
        shapes = shapes[: args.limit]
    return args.set or src.stem, src, shapes


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_shape_args(ap)
    ap.add_argument("--max-configs", type=int, default=0, help="0 = every candidate")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None)
    ap.add_argument("--budget-s", type=float, default=1e9)
    ap.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2) - 2))
    ap.add_argument("--warmup-ms", type=float, default=5)
    ap.add_argument("--rep-ms", type=float, default=25)
    ap.add_argument("--no-tma", dest="tma", action="store_false",
                    help="time dp/persistent configs with the pointer kernel even where TMA is legal "
                         "(default: as the dispatcher runs them, TMA where aligned on Hopper)")
    ap.add_argument("--timer", choices=("graph", "eager", "cold"), default="graph",
                    help="graph (default): launches replayed from a CUDA graph, warm L2, the kernel's own time; "
                         "cold: the kernel's time right after an L2 flush, host cost excluded (cold_graph_ms: "
                         "do_bench's definition minus the launch cost); eager: do_bench of Python launches, "
                         "which includes host launch cost — on the H200 that dominated below ~60 us "
                         "(TMA descriptors, 2026-11-30)")
    ap.add_argument("--gpus", default="0", help="'all', or a comma list of GPU indices")
    ap.add_argument("--jobs", nargs="+", default=None, metavar="SET[:DTYPE[:LIMIT]]",
                    help="several shape sets in one run (one CSV each; --set/--shapes/--dtype/--limit/--out unused)")
    ap.add_argument("--out-dir", default=None, help="where --jobs write (default benchmarks/data/<profile>/)")
    ap.add_argument("--shard", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if not (args.set or args.shapes or args.jobs):
        ap.error("give --set NAME, --shapes FILE or --jobs SPEC ...")
    jobs = [_job(args, spec) for spec in args.jobs] if args.jobs else [_job(args, None)]

    import torch

    if args.shard is not None:
        i, n = map(int, args.shard.split("/"))
        gpu = int(os.environ.get("TRITONBLAS_SWEEP_GPU", i))
        run_shard(args, [(shapes[i::n], out.with_suffix(f".shard{i}.csv")) for shapes, out in jobs], f"cuda:{gpu}")
        return 0
    gpus = list(range(torch.cuda.device_count())) if args.gpus == "all" else [int(g) for g in args.gpus.split(",")]
    if len(gpus) <= 1:
        run_shard(args, jobs, f"cuda:{gpus[0] if gpus else 0}")
        return 0
    procs = []
    for i, g in enumerate(gpus):
        cmd = [sys.executable, __file__, *(argv if argv is not None else sys.argv[1:]), "--shard", f"{i}/{len(gpus)}"]
        env = dict(os.environ, TRITONBLAS_SWEEP_GPU=str(g))
        procs.append(subprocess.Popen(cmd, env=env))
    rc = max(p.wait() for p in procs)
    for _, out in jobs:
        merge(out, [out.with_suffix(f".shard{i}.csv") for i in range(len(gpus))])
    return rc


def _job(args, spec: str | None) -> tuple[list, Path]:
    """(shapes, output CSV) for ``--jobs``' ``SET[:DTYPE[:LIMIT]]`` (None: the single-set options)."""
    if spec is not None:
        name, dtype, limit = (spec.split(":") + ["", ""])[:3]
        if not name or not limit.isdigit() and limit:
            raise SystemExit(f"--jobs: expected SET[:DTYPE[:LIMIT]], got {spec!r}")
        args = argparse.Namespace(**{**vars(args), "set": name, "shapes": None, "dtype": dtype or None,
                                     "limit": int(limit or 0), "out": None})
    name, _, shapes = shape_set(args)
    fname = f"{name}.csv" if not args.dtype else f"{name}_{args.dtype}.csv"
    if args.out:
        return shapes, Path(args.out)
    base = Path(args.out_dir) if getattr(args, "out_dir", None) else ROOT / "benchmarks" / "data" / args.profile
    return shapes, base / fname


def merge(out: Path, shards: list[Path]) -> None:
    """Merge shard CSVs into ``out`` (rows appended after those already there; shards removed)."""
    existing = read_rows(out)
    keys = {row_key(r) for r in existing}
    header = []
    rows = list(existing)
    for s in shards:
        if not s.exists():
            continue
        header += [line for line in s.read_text().splitlines() if line.startswith("#") and line not in header]
        for r in read_rows(s):
            if row_key(r) not in keys:
                keys.add(row_key(r))
                rows.append(r)
    tmp = out.with_suffix(".tmp")
    with tmp.open("w", newline="") as f:
        for line in header:
            f.write(line + "\n")
        w = csv.DictWriter(f, fieldnames=COLS)
        w.writeheader()
        w.writerows(rows)
    os.replace(tmp, out)
    for s in shards:
        s.unlink(missing_ok=True)


if __name__ == "__main__":
    sys.exit(main())

"""Exhaustive (or sampled) timing of our own candidate space per shape: the oracle.

    python benchmarks/sweep.py --set square [--profile h200] [--max-configs 0] [--dtype bf16]
                               [--out benchmarks/data/h200/square.csv] [--budget-s 500] [--gpu 0]

For each shape: every config of ``origami.candidates(problem, profile)`` (or a seeded sample of
``--max-configs`` that always contains the model's top 16), compiled ahead of time in parallel
processes, then timed with ``triton.testing.do_bench(return_mode="median")`` on random inputs.
One CSV row per shape × config in the contract format (DESIGN.md §8): problem columns, one column
per TileConfig field, ``median_ms`` (empty on failure, reason in ``error``), ``predicted_ns``;
provenance in ``#`` header lines. Resumable: rows already in the output are skipped.

    torchrun --nproc-per-node gpu benchmarks/sweep.py ...          # every GPU of this host
    torchrun --nnodes H --nproc-per-node 8 --rdzv-backend c10d --rdzv-endpoint HOST0:29500 \
             benchmarks/sweep.py ...                                # H hosts (benchmarks/_dist.py)

shards the shapes over the ranks (shape i on rank i mod world size, on the rank's local GPU), each
rank writing ``OUT.rank<i>.csv`` on its own host (resumable there); at the end rank 0 gathers every
rank's rows through torch.distributed (NCCL; gloo on CPU) and merges them into ``OUT`` in shape
order, the rows the single-process run writes, then each rank removes its shard file. Rows already
in rank 0's ``OUT`` are skipped on every rank. Without torchrun it is one process on ``--gpu``.
Without a GPU the kernels run under Triton's interpreter and are timed with ``time.perf_counter``
(``--timer cpu``): a check that the script works, the numbers mean nothing.

    python benchmarks/sweep.py --jobs llm dlrm grid:fp16:40 ... [--out-dir DIR] [--budget-s 480]

runs several sets in one go (``SET[:DTYPE[:LIMIT]]`` each, one CSV per job named as above, under
``--out-dir`` or benchmarks/data/<profile>/), with one compile pool and one time budget for all:
the spawned compile workers import torch and Triton once (~10 s) instead of once per set.

Sampling (``--max-configs N``): ``--sample uniform`` (default) times the model's pick
(``origami.select()``) plus N - 1 configs drawn uniformly from the whole space (a stable hash of the
config orders it, so the same configs recur across shapes and compiled kernels are reused); the
legacy ``--sample top16`` (the model's top 16 plus a hashed sample: an oracle biased to the model)
only reproduces the sweeps recorded that way. ``--also-pick K=V[,K=V] ...`` puts the picks of those
model-parameter variants of the profile at the sample's head too (one config each, the same uniform
draw after them): a candidate term fitted on the new sweep then has its moved picks timed already.

    torchrun --nproc-per-node gpu benchmarks/sweep.py --heldout [--jobs STEM ...] [--estimate]

times EVERY candidate of ``origami.candidates(problem, profile)`` (plus nvMatmulHeuristics' top-1
where nvMMH is installed, marked ``nvmmh_rank`` = 1) for the committed held-out split
(benchmarks/shapes/heldout/STEM.yaml, all files by default) into benchmarks/data/<profile>_heldout/
STEM.csv. ``--estimate`` prints the candidate counts and the GPU time they imply, and exits (CPU).
``--screen F`` (the runbook's held-out step passes 1.5) spends the full timing only where it can
matter: a config at least 0.2 ms long and over F x the shape's best so far is recorded at its quick
time (3 queued launches between events), but never the profile's own pick; configs go in predicted order
(``SCREEN_MIN_MS``).

    torchrun --nproc-per-node gpu benchmarks/sweep.py --rows JOBS.csv

times exactly the (shape, config) rows of a job file (problem columns, config columns and ``out``,
the CSV to append to; benchmarks/missing_picks.py writes one for the picks a sweep lacks).
"""

from __future__ import annotations

import argparse
import csv
import os
import platform
import statistics
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
    from _harness import provenance as run_provenance

    p = run_provenance(short_sha=True)
    return [f"{k}={p[k]}" for k in ("git_sha", "gpu", "torch", "triton", "date")]


def cell(v) -> str:
    if v is None:
        return ""
    return v.value if hasattr(v, "value") else str(v)


def row_key(row: dict) -> tuple:
    return tuple(row.get(c) or "" for c in PROBLEM_COLS + CONFIG_COLS)  # rows of older files lack align_bytes


def file_columns(path: Path) -> list[str]:
    """The header of an existing sweep CSV (rows are appended under the file's own columns)."""
    with path.open() as f:
        return next(csv.reader(line for line in f if not line.startswith("#")), None) or COLS


REQUIRED_COLS = [c for c in PROBLEM_COLS if c != "align_bytes"] + CONFIG_COLS[:6] + ["median_ms"]


def prepare_resume(path: Path) -> bool:
    """Make an existing sweep CSV safe to append to; True when it must be written as a new file
    (absent, empty, or only ``#`` lines: no column header yet). A last line without its newline is
    a row a killed run was writing: it is cut off (its config is timed again), else the next row
    would be appended onto it and a half-written time read as the config's. A header without the
    sweep's columns (a CSV of another schema) is a SystemExit naming the file and the columns."""
    if not path.exists():
        return True
    if path.is_dir():
        raise SystemExit(f"--out {path}: is a directory, not a sweep CSV")
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        with path.open("r+b") as f:
            f.truncate(data.rfind(b"\n") + 1)
    try:
        with path.open(newline="") as f:
            header = next(csv.reader(line for line in f if not line.startswith("#")), None)
    except (UnicodeDecodeError, csv.Error) as e:
        raise SystemExit(f"--out {path}: not a sweep CSV ({type(e).__name__}: {e})") from None
    if not header:
        return True
    missing = [c for c in REQUIRED_COLS if c not in header]
    if missing:
        raise SystemExit(f"--out {path}: not a sweep CSV (missing column(s) {', '.join(missing)}); "
                         "resume needs a file this script wrote, or a new path")
    return False


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


def _scored(p, hw) -> list[tuple[TileConfig, float]]:
    """Every config the model scores finite for ``p``, with its predicted ns, best first (ties in
    enumeration order)."""
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
    return cands


def configs_for(p, hw, max_configs: int, seed: int, sample: str = "uniform",
                also: tuple = ()) -> list[tuple[TileConfig, float]]:
    """Every candidate (max_configs = 0), or a sample of ``max_configs``: ``uniform`` = the model's
    pick (``origami.select``) plus configs in stable-hash order over the whole space; ``top16`` (legacy)
    = the model's top 16 plus configs in stable-hash order. The hash makes the same configs recur
    across shapes, so their compiled kernels are reused from Triton's cache.

    ``also`` (profiles: model-parameter variants of ``hw``, ``--also-pick``): each one's pick joins the
    uniform sample's head beside ``hw``'s own (the sample stays ``max_configs`` long), so a term fitted on
    this sweep can ship without a second call to time the picks it moves. Never the variants' top-k: the
    rest of the sample is the same uniform draw."""
    cands = _scored(p, hw)
    if not max_configs or len(cands) <= max_configs:
        return cands
    if sample == "top16":
        n_top = min(16, max_configs)
        top, rest = cands[:n_top], cands[n_top:]
    elif sample == "uniform":
        picks = list(dict.fromkeys([origami.select(p, hw).config] + [origami.select(p, v).config for v in also]))
        pred = dict(cands)
        top = [(c, pred.get(c, float("nan"))) for c in picks][:max_configs]
        rest = [cp for cp in cands if cp[0] not in picks]
    else:
        raise SystemExit(f"--sample: expected uniform or top16, got {sample!r}")
    rest.sort(key=lambda cp: (_stable_hash(cp[0]) ^ seed) % 1_000_003)
    return top + rest[: max_configs - len(top)]


def also_profiles(hw, specs) -> tuple:
    """``--also-pick``'s ``K=V[,K=V]`` specs as model-parameter variants of ``hw`` (missing_picks'
    :func:`~benchmarks.missing_picks.variant_profiles` parses them: a bad key or value is a SystemExit naming
    the spec)."""
    from benchmarks.missing_picks import variant_profiles  # imported here: missing_picks imports this module

    return tuple(variant_profiles(hw, specs, "--also-pick"))


def exhaustive_configs(p, hw, extra: tuple = ()) -> list[tuple[TileConfig, float]]:
    """Every config of ``origami.candidates(p, hw)`` (the held-out oracle), with its prediction (nan
    where the model scores it infinite), plus ``extra`` configs not among them."""
    pred = dict(_scored(p, hw))
    cfgs = list(dict.fromkeys(list(origami.candidates(p, hw)) + list(extra)))
    return [(c, pred.get(c, float("nan"))) for c in cfgs]


def nvmmh_top1(p, hw):
    """nvMatmulHeuristics' top-1 config on our space, or None where nvMMH is not installed / has none."""
    try:
        from benchmarks import nvmmh

        if not nvmmh.available():
            return None
        top = nvmmh.top_configs(p, 1, hw)
        return top[0] if top else None
    except Exception as e:  # noqa: BLE001 - a baseline only; the sweep goes on without it
        print(f"nvmmh: {p.describe()}: {type(e).__name__}: {str(e)[:120]}", flush=True)
        return None


def heldout_files(stems=None) -> list[Path]:
    d = ROOT / "benchmarks" / "shapes" / "heldout"
    files = sorted(d.glob("*.yaml")) if not stems else [d / f"{s}.yaml" for s in stems]
    missing = [str(f) for f in files if not f.exists()]
    if missing or not files:
        raise SystemExit(f"--heldout: no held-out shapes file {missing or d}")
    return files


SECONDS_PER_SHAPE = 16.0  # H200.md, 2026-12-01: exhaustive sweep, 24 shapes in 392 s incl. compiles
CONFIGS_PER_SHAPE = 370  # that run timed 131-608 configs a shape (issue4's exhaustive sweep: 369)


def estimate(jobs, hw) -> list[str]:
    """Candidate counts per job and the GPU time they imply at H200.md's measured rate."""
    lines, total_cfgs, total_shapes = [], 0, 0
    for shapes, out, configs_of in jobs:
        n = [len(configs_of(p, hw)) for p in shapes]
        total_cfgs += sum(n)
        total_shapes += len(n)
        lines.append(f"{out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}: {len(n)} shapes, "
                     f"{sum(n)} configs ({min(n)}-{max(n)} a shape)")
    per_cfg = SECONDS_PER_SHAPE / CONFIGS_PER_SHAPE
    lines.append(f"total: {total_shapes} shapes, {total_cfgs} configs: ~{total_cfgs * per_cfg / 60:.0f} GPU-minutes at "
                 f"{SECONDS_PER_SHAPE:.0f} s per {CONFIGS_PER_SHAPE}-config shape (H200.md; "
                 f"{total_shapes * SECONDS_PER_SHAPE / 60:.0f} min at {SECONDS_PER_SHAPE:.0f} s a shape); "
                 f"divide by the ranks of torchrun")
    return lines


def run_shard(args, jobs: list[tuple[list, Path]], device: str, skip: list[set] | None = None,
              header: tuple = ()) -> None:
    """Sweep each job's (shapes, output CSV) in turn on ``device``, with one compile pool and one
    time budget (``args.budget_s``, counted from the shard's start) for all of them. Rows already in a
    job's CSV, or in its set of ``skip`` (row keys), are not timed again; ``header`` lines go on top
    of a new CSV after the provenance."""
    import torch

    from tritonblas.plan import compile_pool

    if device.startswith("cuda"):
        # the timers (CUDA graphs, events) work on the current device: make it the shard's GPU, else a
        # capture on cuda:0 records nothing of a launch on cuda:1 (it measured 0.0 ms, 2026-11-30)
        # ("cuda" alone names the current device: nothing to set)
        if torch.device(device).index is not None:
            torch.cuda.set_device(torch.device(device))
    hw = origami.load_profile(args.profile)
    t_start = time.time()
    # one set of compile workers for every shape (none under the interpreter: nothing is compiled)
    pool = [compile_pool(args.workers) if args.workers and device != "cpu" else None]
    try:
        for j, (shapes, out, configs_of) in enumerate(jobs):
            new_file = prepare_resume(out)
            done = {row_key(r) for r in read_rows(out)} | (skip[j] if skip else set())
            out.parent.mkdir(parents=True, exist_ok=True)
            if not _sweep_shapes(args, shapes, out, device, hw, done, new_file, t_start, pool, configs_of, header):
                break
    finally:
        if pool[0] is not None:
            pool[0].shutdown(cancel_futures=True)


def _sweep_shapes(args, shapes, out: Path, device: str, hw, done: set, new_file: bool, t_start: float,
                  pool: list, configs_of, header: tuple = ()) -> bool:
    """Append ``shapes``' rows (the configs ``configs_of(p, hw)`` lists) to ``out``; False when the
    time budget ran out. ``pool`` is a one-element list holding the compile pool (replaced there when
    a worker dies). An existing file keeps its own columns; a new held-out file gets ``nvmmh_rank``."""
    import torch

    from tritonblas.plan import _example_tensors, compile_pool, make_plan, precompile, prepare_launch

    cols = file_columns(out) if not new_file else COLS + (["nvmmh_rank"] if getattr(args, "heldout", False) else [])
    with out.open("a", newline="") as f:
        if new_file:
            for line in provenance() + [f"profile={hw.name} hash={hw.content_hash}", f"args={' '.join(sys.argv[1:])}",
                                        *header]:
                f.write(f"# {line}\n")
        w = csv.DictWriter(f, fieldnames=cols, extrasaction="ignore")
        if new_file:
            w.writeheader()
        for p in shapes:
            if time.time() - t_start > args.budget_s:
                print(f"[{device}] budget reached, stopping (resume later)", flush=True)
                return False
            todo = []
            nv1 = nvmmh_top1(p, hw) if "nvmmh_rank" in cols else None
            for cfg, pred in configs_of(p, hw, *([nv1] if nv1 is not None else [])):
                row = {c: cell(getattr(p, c)) for c in PROBLEM_COLS}
                row.update({c: cell(getattr(cfg, c)) for c in CONFIG_COLS})
                if "nvmmh_rank" in cols:
                    row["nvmmh_rank"] = "1" if cfg == nv1 else ""
                if row_key(row) in done:
                    continue
                todo.append((cfg, pred, row))
            if not todo:
                continue
            if getattr(args, "screen", 0):  # the likely-fast first: the screen's reference is found early
                todo.sort(key=lambda t: (t[1] != t[1], t[1]))
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
            # the variant the timing launches: TF32 inputs, fp8 with per-tensor scales (precompiled without
            # them, every tf32 / fp8 config compiled again, serially, in this process: ~0.3 s each)
            fp8 = p.a_dtype.value.startswith("fp8")
            comp = (precompile(ok, device, pool=pool[0], allow_tf32=p.a_dtype.value == "tf32",
                               scales="tensor" if fp8 else None)
                    if pool[0] is not None else [None] * len(ok))
            if pool[0] is not None and any(e and "BrokenProcessPool" in e for e in comp):
                pool[0].shutdown(cancel_futures=True)  # a worker died (it is reported per config): fresh workers
                pool[0] = compile_pool(args.workers)
            comp_iter = iter(comp)
            errors = [e if pl is None else next(comp_iter) for pl, e in zip(plans, errors)]
            t1 = time.time()
            a, b, c_out = _example_tensors(p, device)
            kw = {}
            if fp8:
                kw = dict(scale_a=torch.ones((), device=device), scale_b=torch.ones((), device=device))
            kw["allow_tf32"] = p.a_dtype.value == "tf32"
            ref = a.float() @ b.float()  # every timed config's last output is checked against it
            kept = [(x, x.clone()) for x in (a, b, ref)]  # must be unchanged after the shape (below)
            rows_out, best = [], None
            # the profile's own pick is always timed in full: the guard scores it (issue 19), and a quick time
            # is one queued sample (h100_heldout/llm.csv holds a 1.185 ms quick time of a pick whose twin ran
            # 0.230 ms in full)
            pick = origami.select(p, hw).config if getattr(args, "screen", 0) else None
            for (cfg, pred, row), pl, err in zip(todo, plans, errors):
                ms = ""
                if err is None:
                    try:
                        # bound once: the timing is the kernel's, not Python's argument checking
                        fn = prepare_launch(pl, a, b, c_out, **kw).run
                        c_out.fill_(float("nan"))
                        t, full = time_config(fn, args, None if cfg == pick else best)
                        if not t > 0:
                            raise RuntimeError(f"the timer returned {t} ms (the launch was not measured)")
                        check_result(c_out, ref, p)  # what the timed launches (graph replays) left in out
                        if cfg.kind in (Kind.STREAMK, Kind.SPLITK):
                            check_counters(device)
                        if full:  # the screen compares with configs timed in full and checked only
                            best = t if best is None else min(best, t)
                        ms = f"{t:.6f}"
                    except Exception as e:  # noqa: BLE001 - recorded per config
                        err = f"{type(e).__name__}: {e}".splitlines()[0][:300]
                row.update(median_ms=ms, error=err or "", predicted_ns="" if pred != pred else f"{pred:.1f}")
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


def cpu_ms(fn, reps: int = 1) -> float:
    """Median wall milliseconds of ``fn()`` after one untimed call (the interpreter lane: no GPU)."""
    fn()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ts)


_FLUSH_BYTES = 256 * 1024 * 1024  # what triton.testing.do_bench zeroes before every call (Triton 3.6)


# The screen (--screen F): a config whose quick time is over F x the shape's best full time so far,
# and at least SCREEN_MIN_MS, is recorded at that quick time instead of the full CUDA-graph timing. Every
# candidate is still timed and checked; every row within F x its shape's best was timed in full (a
# screened row is over F x a best-so-far, which is at least the final best). Below SCREEN_MIN_MS the
# quick time's launch latency (one host launch, ~10-20 us, over SCREEN_RUNS queued runs) could exceed
# a few percent, so short configs are always timed in full (their full timing is cheap anyway).
SCREEN_MIN_MS = 0.2
SCREEN_RUNS = 3


def screened(quick_ms: float, best_ms: float | None, factor: float) -> bool:
    """Whether a config whose quick time is ``quick_ms`` is recorded at that time (module comment
    above :data:`SCREEN_MIN_MS`): a screen is on (``factor`` > 0), a config of the shape was timed in full
    (``best_ms``), and ``quick_ms`` is at least :data:`SCREEN_MIN_MS` and over ``factor`` x ``best_ms``."""
    return factor > 0 and best_ms is not None and quick_ms >= SCREEN_MIN_MS and quick_ms > factor * best_ms


def time_config(fn, args, best_ms: float | None) -> tuple[float, bool]:
    """(milliseconds, timed in full) of one config's bound launch ``fn`` under ``args.timer``; with the
    graph timer and ``args.screen`` a slow config gets its quick time (:func:`screened`)."""
    import triton

    if args.timer == "cpu":
        return cpu_ms(fn), True
    if args.timer == "cold":
        return cold_graph_ms(fn, args.rep_ms), True
    if args.timer == "eager":
        return triton.testing.do_bench(fn, warmup=args.warmup_ms, rep=args.rep_ms, return_mode="median"), True
    warm_launch(fn)
    screen = getattr(args, "screen", 0)
    if screen:
        quick = queued_ms(fn, SCREEN_RUNS)
        if screened(quick, best_ms, screen):
            return quick, False
    return graph_ms(fn, args.rep_ms), True


def warm_launch(fn) -> None:
    """One launch (compile / load outside any capture), then a sync: do_bench_cudagraph launches on a
    fresh side stream that does not wait for this one; without the sync, this launch and its first
    ones overlap and share the Stream-K / split-K counters (seen on the H200: counters left at 108
    instead of 0, and tiles never written, 2026-11-30)."""
    import torch

    fn()
    torch.cuda.synchronize()


def queued_ms(fn, runs: int) -> float:
    """Mean GPU milliseconds of ``runs`` launches of ``fn`` queued back to back between two events
    (the screen's quick time: one launch's latency in it, the rest overlapped by the GPU's work)."""
    import torch

    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(runs):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / runs


def graph_ms(fn, rep_ms: float) -> float:
    """triton.testing.do_bench_cudagraph's median (ms): launches replayed from a CUDA graph, warm L2."""
    import triton

    return triton.testing.do_bench_cudagraph(fn, rep=rep_ms, return_mode="median")


def cold_graph_ms(fn, rep_ms: float, inner: int = 8) -> float:
    """Median GPU time (ms) of ``fn`` run right after an L2 flush, with no host cost in it.

    ``do_bench`` flushes L2 before every call (the project's timing rule, DESIGN.md §8) but its
    events also take in the host's launch cost whenever that exceeds the flush (measured on the H200,
    2026-11-30, benchmarks/results/diag_forced_h200.txt: a 3 us kernel read 51 us through Triton's JIT launch and
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
    stream are not all zero: every launch must leave them zero (``plan.workspace``'s contract), and
    a launch after one that did not would mis-count its contributors."""
    import torch

    from tritonblas import plan as planmod

    _, counters = planmod.workspace(torch.device(device), 1, 1)
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
    # compile workers per process: the host's cores shared by the ranks torchrun started on it
    ap.add_argument("--workers", type=int,
                    default=max(1, (os.cpu_count() or 2) // int(os.environ.get("LOCAL_WORLD_SIZE", 1)) - 2))
    ap.add_argument("--warmup-ms", type=float, default=5)
    ap.add_argument("--rep-ms", type=float, default=25)
    ap.add_argument("--no-tma", dest="tma", action="store_false",
                    help="time dp/persistent configs with the pointer kernel even where TMA is legal "
                         "(default: as the dispatcher runs them, TMA where aligned on Hopper)")
    ap.add_argument("--timer", choices=("graph", "eager", "cold", "cpu"), default=None,
                    help="graph (default with a GPU): launches replayed from a CUDA graph, warm L2, the kernel's "
                         "own time; "
                         "cold: the kernel's time right after an L2 flush, host cost excluded (cold_graph_ms: "
                         "do_bench's definition minus the launch cost); eager: do_bench of Python launches, "
                         "which includes host launch cost — on the H200 that dominated below ~60 us "
                         "(TMA descriptors, 2026-11-30); cpu (the default, and the only one, without a GPU): "
                         "perf_counter around interpreted launches")
    ap.add_argument("--gpu", type=int, default=0, help="the GPU of a single-process run (torchrun: the local rank's)")
    ap.add_argument("--any-gpu", action="store_true",
                    help="time a GPU the profile does not name (by default refused: its rows would land in "
                         "the profile's recorded data)")
    ap.add_argument("--gpus", default=None, help=argparse.SUPPRESS)  # the old launcher's option: points to torchrun
    ap.add_argument("--jobs", nargs="+", default=None, metavar="SET[:DTYPE[:LIMIT]]",
                    help="several shape sets in one run (one CSV each; --set/--shapes/--dtype/--limit/--out unused)")
    ap.add_argument("--out-dir", default=None, help="where --jobs write (default benchmarks/data/<profile>/)")
    ap.add_argument("--sample", choices=("uniform", "top16"), default="uniform",
                    help="with --max-configs N: uniform = the model's pick + a uniform sample (default); top16 = "
                         "the legacy sample (model's top 16 + hashed), only to reproduce old sweeps")
    ap.add_argument("--also-pick", nargs="+", default=None, metavar="K=V[,K=V]",
                    help="with --max-configs N (uniform): also time the pick of each of these model-parameter "
                         "variants of --profile (candidate terms a fit on this sweep may ship)")
    ap.add_argument("--heldout", action="store_true",
                    help="the committed held-out split, exhaustively (--jobs names its files; default all)")
    ap.add_argument("--rows", default=None, metavar="JOBS.csv",
                    help="time exactly the (shape, config) rows of a job file (benchmarks/missing_picks.py)")
    ap.add_argument("--retime", action="store_true",
                    help="with --rows: time the job file's rows again, replacing the rows already recorded under "
                         "the same (shape, config) (a suspect time, e.g. a screened quick time); others are kept")
    ap.add_argument("--screen", type=float, default=0, metavar="F",
                    help="graph timer: a config whose quick time (3 queued launches) is at least "
                         f"{SCREEN_MIN_MS} ms and over F x the shape's best full time so far is recorded at that "
                         "time instead of being timed in full (every candidate still timed and checked; every "
                         "row within F x its shape's best timed in full); configs go in predicted order. 0 = off")
    ap.add_argument("--estimate", action="store_true", help="print candidate counts and estimated GPU time; exit")
    args = ap.parse_args(argv)
    if args.screen and not args.screen > 1:
        ap.error(f"--screen {args.screen:g}: the factor must be over 1 (or 0: off)")
    if args.screen and args.timer not in (None, "graph"):
        ap.error(f"--screen applies to the graph timer only, not --timer {args.timer}")
    if args.gpus is not None:
        if not args.gpus.isdigit():
            ap.error(f"--gpus {args.gpus}: multi-GPU sweeps run under torchrun, one rank per GPU: "
                     f"torchrun --nproc-per-node gpu benchmarks/sweep.py ... (benchmarks/_dist.py)")
        args.gpu = int(args.gpus)
    if args.heldout and (args.max_configs or args.set or args.shapes or args.rows or args.dtype):
        ap.error("--heldout is exhaustive over the committed split: no --max-configs/--set/--shapes/--rows/--dtype")
    if args.rows and (args.jobs or args.set or args.shapes):
        ap.error("--rows takes its shapes and configs from the job file: no --jobs/--set/--shapes")
    if args.also_pick and (not args.max_configs or args.sample != "uniform" or args.heldout or args.rows):
        ap.error("--also-pick adds picks to a uniform sample: give --max-configs N (without --heldout/--rows)")
    if args.also_pick:
        also_profiles(origami.load_profile(args.profile), args.also_pick)  # a bad spec fails before any GPU work
    if args.retime and not args.rows:
        ap.error("--retime replaces the rows of a --rows job file: give --rows JOBS.csv")
    if not (args.set or args.shapes or args.jobs or args.heldout or args.rows):
        ap.error("give --set NAME, --shapes FILE, --jobs SPEC ..., --heldout or --rows JOBS.csv")
    if args.heldout:
        jobs = [_heldout_job(args, f) for f in heldout_files(args.jobs)]
    elif args.rows:
        jobs = row_jobs(Path(args.rows))
    else:
        jobs = [_job(args, spec) for spec in args.jobs] if args.jobs else [_job(args, None)]
    if args.estimate:
        print("\n".join(estimate(jobs, origami.load_profile(args.profile))))
        return 0

    import torch

    from benchmarks._dist import world as torchrun_world

    cuda = torch.cuda.is_available()
    if not cuda:  # kernels under the interpreter (set before Triton is imported), timed by perf_counter
        os.environ["TRITON_INTERPRET"] = "1"
        if args.timer not in (None, "cpu"):
            ap.error(f"--timer {args.timer} needs a GPU")
    elif not args.any_gpu:
        from _harness import refuse_foreign_gpu

        refuse_foreign_gpu(ap, args.profile, args.gpu)
    args.timer = args.timer or ("graph" if cuda else "cpu")
    world = torchrun_world()
    if world is None:
        if args.retime:
            print(drop_recorded(Path(args.rows)))
        run_shard(args, jobs, f"cuda:{args.gpu}" if cuda else "cpu")
        return 0
    return run_ranks(args, jobs, world)


def drop_recorded(rows_path: Path) -> str:
    """``--retime``: remove from each ``out`` CSV of the job file the rows it lists (same shape and config),
    atomically, so the sweep times them again; every other row, the columns and the ``#`` lines stay. One line
    saying what went."""
    keys: dict[Path, set] = {}
    for r in read_rows(rows_path):
        keys.setdefault(ROOT / r["out"], set()).add(row_key(r))
    said = []
    for out, drop in keys.items():
        header, cols, rows = shard_contents(out)
        kept = [r for r in rows if row_key(r) not in drop]
        if len(kept) < len(rows):
            write_rows(out, header, cols, kept)
        said.append(f"{out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}: {len(rows) - len(kept)} rows to retime")
    return "--retime: " + "; ".join(said)


def run_ranks(args, jobs, world) -> int:
    """This rank's part of a torchrun sweep (module docstring): its shapes into ``OUT.rank<i>.csv``,
    then every rank's rows merged into ``OUT`` on rank 0, then the shard files removed."""
    world.init()
    try:
        if world.is_root:
            if getattr(args, "retime", False):
                print(drop_recorded(Path(args.rows)))
            for _, out, _ in jobs:
                prepare_resume(out)  # a half-written last row is cut, not merged as done
        skip = world.broadcast([{row_key(r) for r in read_rows(out)} for _, out, _ in jobs] if world.is_root else None)
        mine = [(world.shard(shapes), shard_path(out, world.rank), c) for shapes, out, c in jobs]
        run_shard(args, mine, world.device(), skip,
                  header=(f"rank={world.rank}/{world.size} host={platform.node()} device={world.device()}",))
        parts = world.gather([shard_contents(out) for _, out, _ in mine])
        if world.is_root:
            for j, (shapes, out, _) in enumerate(jobs):
                merge_rows(out, [part[j] for part in parts], shapes)
        world.broadcast(True)  # OUT is written: the shards may go
        for _, out, _ in mine:
            out.unlink(missing_ok=True)
    finally:
        world.close()
    return 0


def _job(args, spec: str | None) -> tuple[list, Path]:
    """(shapes, output CSV, configs_of) for ``--jobs``' ``SET[:DTYPE[:LIMIT]]`` (None: the single-set options)."""
    if spec is not None:
        name, dtype, limit = (spec.split(":") + ["", ""])[:3]
        if not name or not limit.isdigit() and limit:
            raise SystemExit(f"--jobs: expected SET[:DTYPE[:LIMIT]], got {spec!r}")
        args = argparse.Namespace(**{**vars(args), "set": name, "shapes": None, "dtype": dtype or None,
                                     "limit": int(limit or 0), "out": None})
    name, src, shapes = shape_set(args)
    if Path(src).resolve().parent == (ROOT / "benchmarks" / "shapes" / "heldout").resolve():
        raise SystemExit(f"{src}: a held-out shapes file; sweep it with --heldout (exhaustive, to <profile>_heldout/)")
    fname = f"{name}.csv" if not args.dtype else f"{name}_{args.dtype}.csv"

    variants: dict = {}  # hw -> its --also-pick variants (built once a profile)

    def configs_of(p, hw, *extra):
        if hw not in variants:
            variants[hw] = also_profiles(hw, getattr(args, "also_pick", None))
        return configs_for(p, hw, args.max_configs, args.seed, args.sample, variants[hw])

    if args.out:
        return shapes, Path(args.out), configs_of
    base = Path(args.out_dir) if getattr(args, "out_dir", None) else ROOT / "benchmarks" / "data" / _profile_name(args)
    return shapes, base / fname, configs_of


def _profile_name(args) -> str:
    """The --profile's own name (a YAML path names its profile inside: benchmarks/data/<name>/)."""
    return origami.load_profile(args.profile).name


def _heldout_job(args, path: Path) -> tuple[list, Path, object]:
    """(shapes, output CSV, configs_of) of one held-out split file: every candidate."""
    shapes = load_shapes(path)
    base = Path(args.out_dir) if args.out_dir else ROOT / "benchmarks" / "data" / f"{_profile_name(args)}_heldout"
    return shapes, base / f"{path.stem}.csv", lambda p, hw, *extra: exhaustive_configs(p, hw, extra)


def row_jobs(path: Path) -> list[tuple[list, Path, object]]:
    """Jobs of a ``--rows`` file: per ``out`` CSV, its shapes in file order and exactly their listed
    configs (with the model's prediction, blank where it has none). A bad row is one error naming it."""
    from origami.fit import _config
    from origami.problem import GemmProblem

    if not path.is_file():
        raise SystemExit(f"--rows {path}: no such file")
    by_out: dict[Path, dict] = {}
    for i, r in enumerate(read_rows(path), start=2):
        try:
            kw = {c: r[c] for c in PROBLEM_COLS}
            for c in ("m", "n", "k", "batch", "align_bytes"):
                kw[c] = int(kw[c])
            prob, cfg = GemmProblem(**kw), _config(r)
            out = ROOT / r["out"]
        except (KeyError, TypeError, ValueError) as e:
            raise SystemExit(f"--rows {path}: data row {i}: {type(e).__name__}: {e}") from None
        by_out.setdefault(out, {}).setdefault(prob, []).append(cfg)

    def job(table):
        def configs_of(p, hw, *extra):
            pred = dict(_scored(p, hw))
            return [(c, pred.get(c, float("nan"))) for c in table[p]]
        return configs_of

    return [(list(t), out, job(t)) for out, t in by_out.items()]





def shard_path(out: Path, rank: int) -> Path:
    return out.with_suffix(f".rank{rank}.csv")


def shard_contents(path: Path) -> tuple[list[str], list[str], list[dict]]:
    """(``#`` header lines, columns, rows) of a sweep CSV; empty when it does not exist (a rank
    whose shapes were all done, or that stopped at its budget before the first)."""
    if not path.exists():
        return [], [], []
    header = [line for line in path.read_text().splitlines() if line.startswith("#")]
    return header, file_columns(path), read_rows(path)


def merge_rows(out: Path, parts: list[tuple[list[str], list[str], list[dict]]], shapes: list = ()) -> None:
    """Write ``out`` atomically: its own header lines, rows and columns (if it exists), then each
    part's new header lines and the rows whose key is not there yet, ordered by ``shapes`` (the
    job's shape order, as a single process appends them; rows of other shapes after, in part order).
    Columns: ``out``'s own, else the first part's (a held-out file's ``nvmmh_rank`` included)."""
    header, cols, rows = shard_contents(out)
    keys = {row_key(r) for r in rows}
    order = {tuple(cell(getattr(p, c)) for c in PROBLEM_COLS): i for i, p in enumerate(shapes)}
    new = []
    for part_header, part_cols, part_rows in parts:
        header += [line for line in part_header if line not in header]
        cols = cols or part_cols
        for r in part_rows:
            if row_key(r) not in keys:
                keys.add(row_key(r))
                new.append(r)
    new.sort(key=lambda r: order.get(tuple(r.get(c) or "" for c in PROBLEM_COLS), len(order)))
    out.parent.mkdir(parents=True, exist_ok=True)
    write_rows(out, header, cols or COLS, rows + new)


def write_rows(path: Path, header: list[str], cols: list[str], rows: list[dict]) -> None:
    """Replace ``path`` atomically (``tritonblas.tables.AtomicFile``): the ``#`` ``header`` lines, the column
    line, ``rows`` under ``cols`` (cells of other columns dropped)."""
    import io

    from tritonblas.tables import AtomicFile

    buf = io.StringIO()
    for line in header:
        buf.write(line + "\n")
    w = csv.DictWriter(buf, fieldnames=cols, extrasaction="ignore")
    w.writeheader()
    w.writerows(rows)
    with AtomicFile(path) as f:
        f.write(buf.getvalue())


JOB_COLS = PROBLEM_COLS + CONFIG_COLS + ["out"]  # a --rows job file's columns (row_jobs reads them)


def job_row(problem, cfg, out: str) -> dict:
    """One row of a ``--rows`` job file: time ``cfg`` on ``problem`` and append it to ``out``."""
    r = {c: cell(getattr(problem, c)) for c in PROBLEM_COLS}
    r.update({c: cell(getattr(cfg, c)) for c in CONFIG_COLS})
    r["out"] = out
    return r


if __name__ == "__main__":
    from benchmarks._dist import exit_process

    exit_process(main())

"""Per shape, in one process on one GPU: our pick vs the exhaustive best, torch.matmul and nvMMH.

    python benchmarks/compare.py --set calib [--dtype bf16] [--sweep benchmarks/data/h200/calib.csv]
                                 [--limit N] [--budget-s 900] [--out benchmarks/results/compare_calib.csv]

For every shape of ``benchmarks/shapes/<set>.yaml`` (or ``--shapes FILE``), on random contiguous
inputs of the shape's dtypes and layouts:

- ``ours_ms``: ``tritonblas.matmul(a, b)``, the real drop-in path (dispatcher, plan cache, the model's
  pick or the active tile table), warmed once, then timed. ``our_config`` is the plan it runs.
  fp8 has no torch-level drop-in (the dispatcher hands fp8 to torch), so for fp8 it is the model's
  pick launched through ``tritonblas.plan`` with unit scales;
- ``select_us``: host time of one *uncached* ``origami.select`` (median of ``--select-reps`` calls of
  the scorer without select's LRU, as benchmarks/bench_select.py measures it), and ``predicted_ms``,
  the model's estimate for its pick;
- ``oracle_sweep_ms``: the best median over the configs recorded for this shape in the sweep CSV
  (``--sweep``; by default ``benchmarks/data/<profile>/<set>[_<dtype>].csv`` when it exists), and
  ``oracle_ms``: that config re-timed in this run, so that ``pct_of_oracle`` compares two timings of
  the same run (it can exceed 100 when our pick beats the sweep's best, e.g. a config outside a
  sampled sweep, or noise);
- ``torch_ms``: ``torch.matmul`` (cuBLAS / hipBLASLt) on the same tensors (empty for fp8);
- every time above is the minimum over ``--rounds`` (2) passes, the second in reverse order, so no
  contender is always timed first;
- ``nvmmh1_ms`` / ``nvmmh8_ms``: nvMatmulHeuristics' top-1 and the best of its top ``--nvmmh-k`` (8),
  restricted to and mapped onto our config space (benchmarks/nvmmh.py), each launched on our kernels
  like the oracle: ``tritonblas.matmul(a, b, out=, config=)`` (the dispatcher's fast path, as ours;
  fp8: ``make_plan(..., tma=True)`` + ``prepare_launch(...).run``); skipped with a message when
  nvMMH is not installed (``pip install 'tritonblas[nvmmh]'``);
- ``gluon_ms`` / ``gluon_config`` (``--gluon``): the warp-specialised Gluon kernel
  (tritonblas/kernels/gluon_hopper.py, origami's kind 'ws'), the better of its two tiles
  (``gluon_hopper.VARIANTS``) through its warm raw launch, on the shapes
  ``dispatch.gluon_eligible`` accepts (bf16/fp16, sm_90, 16-byte aligned, output tiles filling
  ``gluon_route.GLUON_FILL`` of the SMs): the kernel alone, beside the space's best (``oracle_ms``) and torch.

Timing (``--timer``): ``eager`` (default, the project's rule for reported ratios) is
``triton.testing.do_bench(return_mode="median")``: L2 flushed before every call. Its events also
take in the host's launch cost wherever that exceeds the flush's GPU time (~20 us on the H200):
measured there (benchmarks/results/diag_forced_h200.txt, 2026-11-30) a call reads about max(kernel, host - 20 us),
so a contender's host path counts on small shapes (``tritonblas.matmul`` 15-28 us, torch.matmul
14-17 us, a forced config with ``out=`` 24-52 us). ``cold`` (sweep.cold_graph_ms) is the same
flushed-L2 kernel time without the host: CUDA graphs of flush + call minus flush alone; the
difference between the two is what the host path costs. ``graph`` is
``triton.testing.do_bench_cudagraph(return_mode="median")``: warm L2, host cost excluded.
Without a GPU the script runs the kernels under
Triton's interpreter on CPU tensors (``TRITON_INTERPRET=1`` is set for you) and times with
``time.perf_counter`` medians (``cpu``): only a check that the script works, the numbers mean nothing.

Derived columns: ``ours_tflops``; ``pct_of_oracle`` = 100·oracle_ms/ours_ms; ``ratio_to_torch`` =
torch_ms/ours_ms (> 1: ours faster). Each row carries its provenance (git sha from ``$GIT_SHA`` or
git, GPU, torch, triton, Python, date). The CSV (default ``benchmarks/results/compare_<set>[_<dtype>].csv``)
is rewritten atomically after every shape; a re-run skips the shapes already in it (``--fresh``
starts over), and ``--budget-s`` stops before a shape that would start past the budget. A summary
closes the run: geomean and p10 of pct_of_oracle, geomean ratio_to_torch, and how often ours beats
nvMMH's top-1 and best-of-top-k (ours_ms < nvmmh*_ms).

    torchrun --nproc-per-node gpu benchmarks/compare.py --set calib ...   # one rank per GPU, any hosts

shards the shapes over the ranks (shape i on rank i mod world size, on its local GPU; gloo and the
interpreter on CPU); each rank keeps its rows in ``OUT.rank<i>.csv`` on its own host (resumable
there), and at the end rank 0 gathers them through torch.distributed, writes ``OUT`` in shape
order (the rows a single process writes) and prints the summary over all of them. Shapes already
in rank 0's ``OUT`` are skipped on every rank (benchmarks/_dist.py).
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import statistics
import sys
import time
from dataclasses import fields
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PROBLEM_COLS = ["m", "n", "k", "batch", "a_dtype", "b_dtype", "c_dtype", "a_layout", "b_layout"]
COLUMNS = PROBLEM_COLS + [
    "align_bytes", "dtype", "our_config", "our_kernel", "ours_ms", "oracle_ms", "oracle_sweep_ms", "oracle_config",
    "torch_ms", "nvmmh1_ms", "nvmmh8_ms", "nvmmh1_config", "nvmmh8_config", "nvmmh_n", "gluon_ms", "gluon_config",
    "ours_tflops",
    "pct_of_oracle", "ratio_to_torch", "predicted_ms", "select_us", "rel_err_vs_torch", "timer", "note",
    "git_sha", "gpu", "torch", "triton", "python", "date",
]


# --- small helpers (CPU-only, importable by tests and plots.py) --------------------------------
def cell(v) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.6g}" if math.isfinite(v) else ""
    return v.value if hasattr(v, "value") else str(v)


def problem_key(row_or_problem) -> tuple:
    if isinstance(row_or_problem, dict):
        return tuple(str(row_or_problem[c]) for c in PROBLEM_COLS)
    return tuple(cell(getattr(row_or_problem, c)) for c in PROBLEM_COLS)


def read_csv(path: Path) -> list[dict]:
    if not path.exists():
        return []
    with path.open() as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def resume_rows(path: Path, fresh: bool = False) -> list[dict]:
    """The rows of an existing ``--out`` a re-run keeps (none with ``fresh``): whole rows of this
    schema only. A short or long row (a file cut or edited mid-row) is dropped, so its shape is
    measured again instead of a half-written time being kept. A file that is not a compare CSV
    (no problem or ``ours_ms`` column, undecodable) is a SystemExit naming it: it would be
    overwritten by the first shape's write."""
    if not path.exists():
        return []
    try:
        with path.open(newline="") as f:
            header = next(csv.reader(line for line in f if not line.startswith("#")), None)
            rows = [] if fresh or not header else read_csv(path)
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise SystemExit(f"compare: --out {path}: not a compare CSV ({type(e).__name__}: {e})") from None
    missing = [c for c in [*PROBLEM_COLS, "ours_ms"] if header and c not in header]
    if missing:
        raise SystemExit(f"compare: --out {path}: not a compare CSV (missing column(s) {', '.join(missing)}); "
                         "it would be overwritten: name a new --out")
    return [r for r in rows if set(COLUMNS) <= set(r) and None not in r and None not in r.values()]


def write_csv_atomic(path: Path, rows: list[dict]) -> None:
    """Write the rows atomically (``tritonblas.tables.AtomicFile``)."""
    import io

    from tritonblas.tables import AtomicFile

    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=COLUMNS, extrasaction="ignore")
    w.writeheader()
    w.writerows(rows)
    path.parent.mkdir(parents=True, exist_ok=True)
    with AtomicFile(path) as f:
        f.write(buf.getvalue())


def fnum(x) -> float | None:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def geomean(xs) -> float:
    xs = [x for x in xs if x is not None and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def percentile(xs, q: float) -> float:
    """Linear-interpolation percentile (numpy's default), without numpy."""
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return float("nan")
    pos = (len(xs) - 1) * q / 100
    lo, hi = math.floor(pos), math.ceil(pos)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def summarize(rows: list[dict]) -> dict:
    pct = [fnum(r.get("pct_of_oracle")) for r in rows]
    pct = [p for p in pct if p is not None]
    rt = [fnum(r.get("ratio_to_torch")) for r in rows]
    out = {"shapes": len(rows), "oracle_shapes": len(pct), "geomean_pct_of_oracle": geomean(pct),
           "p10_pct_of_oracle": percentile(pct, 10), "geomean_ratio_to_torch": geomean(rt),
           "torch_shapes": sum(x is not None for x in rt)}
    g = [(fnum(r.get("gluon_ms")), fnum(r.get("oracle_ms")), fnum(r.get("torch_ms"))) for r in rows]
    out["gluon_shapes"] = sum(x[0] is not None for x in g)
    out["geomean_oracle_over_gluon"] = geomean([o / t for t, o, _ in g if t and o])
    out["geomean_torch_over_gluon"] = geomean([c / t for t, _, c in g if t and c])
    for col in ("nvmmh1_ms", "nvmmh8_ms"):
        pairs = [(fnum(r.get("ours_ms")), fnum(r.get(col))) for r in rows]
        pairs = [(o, t) for o, t in pairs if o is not None and t is not None]
        out[f"beats_{col[:-3]}"] = (sum(o < t for o, t in pairs) / len(pairs)) if pairs else float("nan")
        out[f"{col[:-3]}_shapes"] = len(pairs)
    return out


def summary_text(s: dict) -> str:
    return "\n".join([
        f"summary over {s['shapes']} shapes:",
        f"  % of oracle (re-timed best of the sweep; {s['oracle_shapes']} shapes): geomean "
        f"{s['geomean_pct_of_oracle']:.1f}, p10 {s['p10_pct_of_oracle']:.1f}",
        f"  speed vs torch.matmul (torch_ms / ours_ms; {s['torch_shapes']} shapes): geomean "
        f"{s['geomean_ratio_to_torch']:.3f}",
        f"  ours faster than nvMMH top-1 on {100 * s['beats_nvmmh1']:.0f}% of {s['nvmmh1_shapes']} shapes, "
        f"than nvMMH best-of-top-k on {100 * s['beats_nvmmh8']:.0f}% of {s['nvmmh8_shapes']}",
        *([f"  Gluon kernel ({s['gluon_shapes']} shapes): geomean oracle_ms / gluon_ms "
           f"{s['geomean_oracle_over_gluon']:.3f}, torch_ms / gluon_ms {s['geomean_torch_over_gluon']:.3f}"]
          if s.get("gluon_shapes") else []),
    ])


def provenance(torch, triton) -> dict:
    """benchmarks/_harness.provenance (torch and triton are passed for the caller's imports)."""
    from _harness import provenance as run_provenance

    return run_provenance()


def sweep_best(path: Path | None) -> dict[tuple, list[tuple[float, object]]]:
    """problem key → [(median_ms, TileConfig)] of the recorded sweep, fastest first (failed rows skipped)."""
    from origami.config import TileConfig

    if path is None or not path.exists():
        return {}
    ints = {f.name for f in fields(TileConfig)} - {"kind"}
    by: dict[tuple, list] = {}
    for r in read_csv(path):
        ms = fnum(r.get("median_ms"))
        if ms is None:
            continue
        kw = {"kind": r["kind"]}
        for name in ints:
            v = r.get(name, "")
            kw[name] = None if v in ("", None) else int(v)
        by.setdefault(problem_key(r), []).append((ms, TileConfig(**kw)))
    for v in by.values():
        v.sort(key=lambda t: t[0])
    return by


# --- timing ------------------------------------------------------------------------------------
class Timer:
    def __init__(self, mode: str, rep_ms: float, warmup_ms: float, cpu_reps: int):
        self.mode, self.rep_ms, self.warmup_ms, self.cpu_reps = mode, rep_ms, warmup_ms, cpu_reps

    def __call__(self, fn) -> float:
        """Median milliseconds of ``fn()`` (called once first, outside the measurement)."""
        if self.mode == "cpu":
            fn()
            ts = []
            for _ in range(self.cpu_reps):
                t0 = time.perf_counter()
                fn()
                ts.append((time.perf_counter() - t0) * 1e3)
            return statistics.median(ts)
        import triton

        fn()  # compile / load / plan outside the capture
        if self.mode == "cold":
            from benchmarks.sweep import cold_graph_ms

            return cold_graph_ms(fn, self.rep_ms)
        if self.mode == "graph":
            return triton.testing.do_bench_cudagraph(fn, rep=self.rep_ms, return_mode="median")
        return triton.testing.do_bench(fn, warmup=self.warmup_ms, rep=self.rep_ms, return_mode="median")


def select_time_us(problem, hw, reps: int) -> float:
    """Median host time of one uncached ``origami.select``, measured as benchmarks/bench_select.py
    does: the scorer without select's LRU cache (``origami.select._select_uncached``; the candidate
    space of the dtype/layout class stays built, as it does in a running process). Falls back to
    clearing every model cache before each call if that function is gone."""
    import origami

    mod = sys.modules["origami.select"]  # the module (origami.select is the function)
    uncached = getattr(mod, "_select_uncached", None)
    if uncached is None:
        def uncached(p, h):
            origami.clear_cache()
            return origami.select(p, h)
    uncached(problem, hw)  # the class's candidate space built once, outside the timing
    ts = []
    for _ in range(max(1, reps)):
        t0 = time.perf_counter_ns()
        uncached(problem, hw)
        ts.append((time.perf_counter_ns() - t0) / 1e3)
    return statistics.median(ts)


# --- one shape ---------------------------------------------------------------------------------
def run_shape(p, args, ctx) -> dict:
    import torch

    import origami
    import tritonblas
    from origami.problem import DType
    from tritonblas import dispatch
    from benchmarks.sweep import check_result
    from tritonblas.plan import (_example_tensors, make_plan, precompile, prepare_launch, resolve_kernel_name,
                                 staging_copy_ns)

    hw, device, timer = ctx["hw"], ctx["device"], ctx["timer"]
    notes = []
    row = {c: cell(getattr(p, c)) for c in PROBLEM_COLS}
    row.update(align_bytes=p.align_bytes, dtype=p.a_dtype.value, timer=timer.mode)
    tf32 = p.a_dtype is DType.TF32
    fp8 = p.a_dtype.bytes == 1
    torch.backends.cuda.matmul.allow_tf32 = tf32  # read by torch.matmul and by our dispatcher
    torch.manual_seed(0)
    a, b, out = _example_tensors(p, device)
    # the problem exactly as the dispatcher derives it from the tensors (alignment class included)
    dp = dispatch.GemmKey.from_tensors(a, b, out, profile=hw, tf32=tf32).problem()
    kw = {"allow_tf32": tf32}
    if fp8:
        kw.update(scale_a=torch.ones((), device=device), scale_b=torch.ones((), device=device))

    # model: selection time (uncached) and prediction
    row["select_us"] = cell(select_time_us(dp, hw, args.select_reps))
    est = origami.select(dp, hw)
    row["predicted_ms"] = cell(est.latency_ns / 1e6)

    # configs to time on our kernels through the plan path: oracle, nvMMH
    def plan_or_note(cfg, what):
        try:
            return make_plan(cfg, dp, hw, tma=True)
        except ValueError as e:
            notes.append(f"{what} {cfg.short()}: {str(e)[:120]}")
            return None

    oracle_plan = None
    for ms, cfg in ctx["sweep"].get(problem_key(p), []):
        oracle_plan = plan_or_note(cfg, "oracle")
        if oracle_plan is not None:
            row.update(oracle_sweep_ms=cell(ms), oracle_config=cfg.short())
            break
    nv_plans = []
    if ctx["nvmmh"] is not None:
        try:
            nv_cfgs = ctx["nvmmh"].top_configs(dp, args.nvmmh_k, hw)
        except (ValueError, RuntimeError) as e:
            nv_cfgs = []
            notes.append(f"nvmmh: {str(e)[:120]}")
        nv_plans = [pl for c in nv_cfgs if (pl := plan_or_note(c, "nvmmh")) is not None]
        row["nvmmh_n"] = len(nv_plans)

    # ours: the drop-in path (fp8: the model's pick through the plan path)
    if fp8:
        our_plan = make_plan(est.config, dp, hw, tma=True)
        ours_fn = prepare_launch(our_plan, a, b, out, **kw).run
    else:
        our_plan = dispatch.plan_for(a, b)
        ours_fn = lambda: tritonblas.matmul(a, b)  # noqa: E731
    if our_plan is not None and our_plan.problem != dp:  # alignment staging: the kernel runs the aligned problem
        staged = "+".join(n for n, s in (("a", our_plan.stage_a), ("b", our_plan.stage_b)) if s)
        row.update(our_config=our_plan.config.short(), our_kernel=f"{our_plan.kernel_name} (staged {staged})",
                   predicted_ms=cell((origami.select(our_plan.problem, hw).latency_ns + staging_copy_ns(
                       dp, hw, (our_plan.stage_a, our_plan.stage_b))) / 1e6))
    elif our_plan is not None:
        row.update(our_config=our_plan.config.short(), our_kernel=resolve_kernel_name(our_plan, a, b))
    else:
        row.update(our_config="torch fallback")

    if device != "cpu" and args.workers > 0:  # compile everything of this shape in parallel first
        todo = list(dict.fromkeys(pl for pl in [our_plan, oracle_plan, *nv_plans] if pl is not None))
        # the variant launched below: TF32 inputs, fp8 with per-tensor unit scales
        for pl, err in zip(todo, precompile(todo, device, pool=ctx["pool"], allow_tf32=tf32,
                                            scales="tensor" if fp8 else None)):
            if err:
                notes.append(f"compile {pl.config.short()}: {err[:120]}")

    ref = a.float() @ b.float() if device != "cpu" else None

    def time_plan(pl, what):
        if pl is None:
            return None
        try:
            out.fill_(float("nan"))
            if fp8:  # no torch-level fp8 drop-in: the prepared launch
                fn = prepare_launch(pl, a, b, out, **kw).run
            else:  # the dispatcher's fast path, as ours: the same host cost for every contender
                fn = lambda: tritonblas.matmul(a, b, out=out, config=pl.config)  # noqa: E731
            t = timer(fn)
            if ref is not None:
                check_result(out, ref, p)  # what the timed launches left in out
            return t
        except Exception as e:  # noqa: BLE001 - recorded, never fatal
            notes.append(f"{what} {pl.config.short()}: {type(e).__name__}: {str(e).splitlines()[0][:120]}")
            return None

    def time_ours():
        try:
            return timer(ours_fn)
        except Exception as e:  # noqa: BLE001
            notes.append(f"ours: {type(e).__name__}: {str(e).splitlines()[0][:160]}")
            return None

    torch_fn = (lambda: torch.matmul(a, b)) if not fp8 else None  # noqa: E731
    jobs = [("ours", time_ours), ("oracle", lambda: time_plan(oracle_plan, "oracle"))]
    if torch_fn is not None:
        jobs.append(("torch", lambda: timer(torch_fn)))
    else:
        notes.append("torch: no plain fp8 matmul")
    jobs += [(f"nvmmh{i}", lambda pl=pl: time_plan(pl, "nvmmh")) for i, pl in enumerate(nv_plans)]
    gluon = _gluon_variants(a, b, out, notes) if getattr(args, "gluon", False) and device != "cpu" else []
    jobs += [(f"gluon{i}", lambda v=v: _time_gluon(v, a, b, out, ref, p, timer, notes)) for i, v in enumerate(gluon)]
    # --rounds passes, every other one in reverse order, each time the minimum: no contender is
    # always timed first (a GPU that drifts over the few seconds of a shape favours none of them)
    times: dict[str, list] = {name: [] for name, _ in jobs}
    for r in range(max(1, args.rounds)):
        for name, fn in (jobs if r % 2 == 0 else jobs[::-1]):
            times[name].append(fn())
    best = {name: min((t for t in ts if t is not None), default=None) for name, ts in times.items()}
    ours_ms, oracle_ms, torch_ms = best["ours"], best["oracle"], best.get("torch")
    if torch_fn is not None and ours_ms is not None:
        torch_out = torch_fn().float()
        got = ours_fn().float()
        row["rel_err_vs_torch"] = cell(float((got - torch_out).norm() / torch_out.norm().clamp_min(1e-30)))
    nv_ms = [best[f"nvmmh{i}"] for i in range(len(nv_plans))]
    if nv_plans:
        row.update(nvmmh1_ms=cell(nv_ms[0]), nvmmh1_config=nv_plans[0].config.short())
        ok = [(t, pl) for t, pl in zip(nv_ms, nv_plans) if t is not None]
        if ok:
            t8, pl8 = min(ok, key=lambda x: x[0])
            row.update(nvmmh8_ms=cell(t8), nvmmh8_config=pl8.config.short())

    g_ok = [(best[f"gluon{i}"], v) for i, v in enumerate(gluon) if best[f"gluon{i}"] is not None]
    if g_ok:
        tg, (bm, bn, bk, st) = min(g_ok, key=lambda x: x[0])
        row.update(gluon_ms=cell(tg), gluon_config=f"gluon {bm}x{bn}x{bk} s{st}")
    row.update(ours_ms=cell(ours_ms), oracle_ms=cell(oracle_ms), torch_ms=cell(torch_ms))
    if ours_ms:
        row["ours_tflops"] = cell(p.flops / ours_ms / 1e9)
        if oracle_ms:
            row["pct_of_oracle"] = cell(100 * oracle_ms / ours_ms)
        if torch_ms:
            row["ratio_to_torch"] = cell(torch_ms / ours_ms)
    row["note"] = "; ".join(dict.fromkeys(notes))[:600]  # a failure repeats once per --rounds pass
    return row


def _gluon_variants(a, b, out, notes: list) -> list[tuple]:
    """The Gluon kernel's tiles for this call, or none (with the reason in ``notes``)."""
    from tritonblas import dispatch
    from tritonblas.kernels import gluon_hopper

    why = dispatch.gluon_eligible(a, b, out) if gluon_hopper.HAS_GLUON else "this Triton has no Gluon"
    if why is not None:
        notes.append(f"gluon: {why}")
        return []
    return list(gluon_hopper.VARIANTS)


def _time_gluon(variant, a, b, out, ref, p, timer, notes: list):
    """One Gluon tile's time (its first call binds the warm raw launch), the output checked."""
    from benchmarks.sweep import check_result
    from tritonblas.kernels import gluon_hopper

    bm, bn, bk, st = variant
    try:
        out.fill_(float("nan"))
        fn = lambda: gluon_hopper.gluon_matmul(a, b, out, block_m=bm, block_n=bn, block_k=bk, stages=st)  # noqa: E731
        t = timer(fn)
        if ref is not None:
            check_result(out, ref, p)
        return t
    except Exception as e:  # noqa: BLE001 - recorded, never fatal
        notes.append(f"gluon {bm}x{bn}x{bk} s{st}: {type(e).__name__}: {str(e).splitlines()[0][:120]}")
        return None


def main(argv=None) -> int:
    from benchmarks.sweep import add_shape_args, shape_set

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_shape_args(ap)
    ap.add_argument("--sweep", default=None,
                    help="sweep CSV with the exhaustive timings (default: benchmarks/data/<profile>/<set>"
                         "[_<dtype>].csv if present; 'none' to skip the oracle)")
    ap.add_argument("--out", default=None)
    ap.add_argument("--fresh", action="store_true", help="ignore shapes already in --out")
    ap.add_argument("--budget-s", type=float, default=1e9, help="start no shape after this many seconds")
    ap.add_argument("--timer", choices=("graph", "eager", "cold"), default="eager",
                    help="eager (default): do_bench, L2 flushed between calls; cold: flushed L2, host cost excluded "
                         "(CUDA graphs); graph: do_bench_cudagraph (warm L2)")
    ap.add_argument("--rep-ms", type=float, default=25)
    ap.add_argument("--warm-gpu-s", type=float, default=1.0,
                    help="seconds of bf16 matmuls before the first shape (clocks up from idle; 0 = none)")
    ap.add_argument("--rounds", type=int, default=2,
                    help="timing passes per shape, alternately forward and reversed; each time is the minimum")
    ap.add_argument("--warmup-ms", type=float, default=5)
    ap.add_argument("--cpu-reps", type=int, default=3, help="timed calls per measurement without a GPU")
    ap.add_argument("--select-reps", type=int, default=20, help="uncached origami.select calls timed (median)")
    ap.add_argument("--nvmmh-k", type=int, default=8, help="nvMMH configs to time (best-of)")
    ap.add_argument("--no-nvmmh", action="store_true", help="skip nvMMH even when it is installed")
    ap.add_argument("--gluon", action="store_true",
                    help="also time the experimental Gluon kernel (gluon_ms; bf16/fp16 on an sm_90 GPU)")
    ap.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2) - 2),
                    help="parallel compile processes per shape on the GPU (0: compile on first launch)")
    args = ap.parse_args(argv)
    if not (args.set or args.shapes):
        ap.error("give --set NAME or --shapes FILE")

    import torch

    from benchmarks._dist import world as torchrun_world

    world = torchrun_world()
    if world is not None:
        world.init()  # makes the local rank's GPU current: "cuda" below is that one
        if args.workers == ap.get_default("workers"):  # the host's cores shared by its ranks
            args.workers = max(1, (os.cpu_count() or 2) // world.local_size - 2)
    cuda = torch.cuda.is_available()
    if not cuda:  # kernels under the interpreter; the dispatcher needs a named profile on CPU
        os.environ["TRITON_INTERPRET"] = "1"
        os.environ.setdefault("TRITONBLAS_PROFILE", args.profile)
    import triton

    import origami

    hw = origami.load_profile(args.profile)
    name, src, shapes = shape_set(args)
    suffix = f"_{args.dtype}" if args.dtype else ""
    out = Path(args.out) if args.out else ROOT / "benchmarks" / "results" / f"compare_{name}{suffix}.csv"
    if args.sweep and args.sweep.lower() == "none":
        sweep_path = None
    elif args.sweep:
        sweep_path = Path(args.sweep)
        if not sweep_path.exists():
            ap.error(f"--sweep {sweep_path}: no such file")
    else:
        sweep_path = ROOT / "benchmarks" / "data" / hw.name / f"{name}{suffix}.csv"
        sweep_path = sweep_path if sweep_path.exists() else None
    sweep = sweep_best(sweep_path)
    print(f"compare: {len(shapes)} shapes from {src}, profile {hw.name}, oracle from "
          f"{sweep_path or 'nowhere (no sweep CSV: oracle columns stay empty)'}", flush=True)

    nv = None
    if not args.no_nvmmh:
        from benchmarks import nvmmh

        if nvmmh.available() and hw.name in nvmmh.GPU_OF_PROFILE:
            nv = nvmmh
        else:
            print(f"compare: nvMMH skipped: {nvmmh.unavailable_reason() or f'no nvMMH GPU for {hw.name}'}",
                  flush=True)

    device = "cuda" if cuda else "cpu"
    if cuda:
        from tritonblas import dispatch

        dev_hw = dispatch.device_info(torch.device("cuda")).profile
        if dev_hw.content_hash != hw.content_hash:
            print(f"compare: warning: tritonblas.matmul uses profile {dev_hw.name} on this device, "
                  f"the comparison profile is {hw.name}", flush=True)
    timer = Timer("cpu" if not cuda else args.timer, args.rep_ms, args.warmup_ms, args.cpu_reps)
    origami.warmup()
    if cuda and args.warm_gpu_s > 0:  # an idle H200 sits at 345 MHz: bring the clocks up before the first shape
        x = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
        t_end = time.perf_counter() + args.warm_gpu_s
        while time.perf_counter() < t_end:
            for _ in range(20):
                x @ x
            torch.cuda.synchronize()
        del x
    prov = provenance(torch, triton)
    rows = resume_rows(out, args.fresh)
    done = {problem_key(r) for r in rows}
    from tritonblas.plan import compile_pool

    pool = compile_pool(args.workers) if device != "cpu" and args.workers > 0 else None  # one for all shapes
    ctx = {"hw": hw, "device": device, "timer": timer, "sweep": sweep, "nvmmh": nv, "pool": pool}
    try:
        if world is None:
            return _run_shapes(args, shapes, out, rows, done, prov, ctx)
        return _run_ranks(args, world, shapes, out, rows, prov, ctx)
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)
        if world is not None:
            world.close()


def _run_ranks(args, world, shapes, out, rows, prov, ctx) -> int:
    """This rank's shapes into ``OUT.rank<i>.csv``; then rank 0 writes every rank's rows, after the
    ones ``OUT`` had, in shape order, and prints the summary over all of them (module docstring)."""
    done = world.broadcast({problem_key(r) for r in rows} if world.is_root else None)
    mine = out.with_suffix(f".rank{world.rank}.csv")
    own = resume_rows(mine, args.fresh)
    _run_shapes(args, world.shard(shapes), mine, own, done | {problem_key(r) for r in own}, prov, ctx,
                report=False)
    parts = world.gather(read_csv(mine))
    rc = 0
    if world.is_root:
        order = {problem_key(p): i for i, p in enumerate(shapes)}
        have = {problem_key(r) for r in rows}
        new = {problem_key(r): r for part in parts for r in part if problem_key(r) not in have}
        rows = rows + sorted(new.values(), key=lambda r: order.get(problem_key(r), len(order)))
        write_csv_atomic(out, rows)
        rc = _report(rows, out)
    world.broadcast(True)  # OUT is written: the shards may go
    mine.unlink(missing_ok=True)
    return rc


def _run_shapes(args, shapes, out, rows, done, prov, ctx, report: bool = True) -> int:
    t_start = time.time()
    for i, p in enumerate(shapes):
        if problem_key(p) in done:
            continue
        if time.time() - t_start > args.budget_s:
            print(f"compare: budget of {args.budget_s:.0f}s reached after {i} shapes; re-run to resume", flush=True)
            break
        t0 = time.time()
        row = run_shape(p, args, ctx)
        row.update(prov)
        rows.append(row)
        done.add(problem_key(p))
        write_csv_atomic(out, rows)
        print(f"[{i + 1}/{len(shapes)}] {p.describe():34s} ours {row.get('ours_ms') or '-':>9} ms "
              f"({row.get('our_config', '')}) oracle {row.get('oracle_ms') or '-':>9} torch "
              f"{row.get('torch_ms') or '-':>9} nvmmh1 {row.get('nvmmh1_ms') or '-':>9} nvmmh8 "
              f"{row.get('nvmmh8_ms') or '-':>9} pct {row.get('pct_of_oracle') or '-':>6} "
              f"select {float(row['select_us']):.0f} us  [{time.time() - t0:.1f}s]"
              + (f"\n    note: {row['note']}" if row.get("note") else ""), flush=True)
    return _report(rows, out) if report else 0


def _report(rows, out) -> int:
    if not rows:
        print("compare: no rows", flush=True)
        return 1
    print(summary_text(summarize(rows)))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    from benchmarks._dist import exit_process

    exit_process(main())

"""Per-call overhead of a warm ``tritonblas.matmul`` vs ``torch.matmul``.

    python benchmarks/bench_dispatch.py [--calls 1000] [--repeats 5] [--out benchmarks/results/bench_dispatch.csv]

On a CUDA device: bf16 shapes 64×64×64, 16×4096×4096, 1×8192×8192 and 128×128×128; per shape and mode, after a
warm-up, ``torch.cuda.synchronize()``, then ``--calls`` back-to-back calls: ``cpu_us`` is the time to
issue one call (perf_counter around the loop, before the closing synchronize), ``wall_us`` includes
it (what a dependent consumer sees). Modes: ``torch`` (torch.matmul), ``fast`` (tritonblas, the
default warm path) and ``checked`` (tritonblas with the fast path and the direct call disabled:
the dispatcher as it was before, GemmKey → _PLANS → prepare_launch → kernel[grid] through the
custom op). Best of ``--repeats``. Then the plan-cache miss rows (:func:`miss_rows`): ``miss``, the
first call of a new key (select + plan + checked launch, Triton compile excluded: a compiled kernel
of the same config exists); ``miss_triton``, the same with the compiled-kernel sharing off (each
miss through Triton's JIT dispatch and a fresh fast-launch binding, as before issue 5);
``miss_plan``, the select + plan part alone (``dispatch._plan_of`` on a miss: GemmKey, the model's
select, make_plan), which is the issue's definition of the miss cost.

On CPU (no GPU): the dispatcher overhead alone, every kernel launch stubbed to a no-op (the
interpreter's own cost would drown it), for contiguous 2-D, transposed-B, batched and
batch-broadcast bf16 inputs, with and without ``torch.no_grad``; ``torch`` rows are torch.matmul
on the same shapes, for scale (they include the CPU GEMM itself). Then the same miss rows (no
``miss_triton``: on CPU there is no compiled kernel to share, so ``miss`` is the path without it).

Every CSV row carries its provenance (git sha, device, torch/triton/Python versions, date).
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import datetime
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")
    os.environ.setdefault("TRITONBLAS_PROFILE", "h200")

import triton  # noqa: E402

import tritonblas  # noqa: E402
from tritonblas import dispatch, launchcache, ops  # noqa: E402

GPU_SHAPES = [(64, 64, 64), (16, 4096, 4096), (1, 8192, 8192), (128, 128, 128)]
MISS_SHAPES = [(m, 4096, 4096) for m in range(1000, 1032)]  # new keys, (nearly) one compiled kernel
FIELDS = ["mode", "case", "m", "n", "k", "batch", "grad", "calls", "cpu_us", "wall_us", "note",
          "device", "git_sha", "torch", "triton", "python", "cpu", "date"]


def _git_sha() -> str:
    if os.environ.get("GIT_SHA"):  # the device machine gets the tree without .git
        return os.environ["GIT_SHA"]
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               capture_output=True, text=True).stdout.strip()
        return sha + ("-dirty" if dirty else "")
    except OSError:
        return "unknown"


@contextlib.contextmanager
def checked_path():
    """The dispatcher without its fast path and without the ops' direct call (the old warm path)."""
    hit, remember, reuse, direct = launchcache.hit, launchcache.remember, launchcache.reuse, ops._direct
    launchcache.hit = lambda key: None
    launchcache.remember = lambda *a, **k: None
    launchcache.reuse = lambda *a, **k: False
    ops._direct = lambda *t: False
    try:
        yield
    finally:
        launchcache.hit, launchcache.remember, launchcache.reuse, ops._direct = hit, remember, reuse, direct


@contextlib.contextmanager
def no_reuse():
    """Misses launch through Triton's JIT dispatch and bind afresh (no compiled kernel shared across keys)."""
    reuse = launchcache.reuse
    launchcache.reuse = lambda *a, **k: False
    try:
        yield
    finally:
        launchcache.reuse = reuse


class _NoLaunch:
    """Stands in for a kernel: ``kernel[grid](*args, **kwargs)`` does nothing."""

    def __getitem__(self, grid):
        return self

    def __call__(self, *args, **kwargs):
        return None


def stub_kernels() -> None:
    import tritonblas.kernels as kernels

    for name in kernels.__all__:
        setattr(kernels, name, _NoLaunch())


def time_loop(fn, calls: int, repeats: int, cuda: bool) -> tuple[float, float]:
    for _ in range(20):
        fn()
    best_cpu = best_wall = float("inf")
    for _ in range(repeats):
        if cuda:
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        t1 = time.perf_counter()
        if cuda:
            torch.cuda.synchronize()
        t2 = time.perf_counter()
        best_cpu = min(best_cpu, (t1 - t0) / calls * 1e6)
        best_wall = min(best_wall, (t2 - t0) / calls * 1e6)
    return best_cpu, best_wall


def gpu_rows(calls: int, repeats: int) -> list[dict]:
    rows = []
    dt = torch.bfloat16
    for m, n, k in GPU_SHAPES:
        a = torch.randn(m, k, device="cuda", dtype=dt)
        b = torch.randn(k, n, device="cuda", dtype=dt)
        torch.testing.assert_close(tritonblas.matmul(a, b).float(), (a @ b).float(), rtol=2e-2, atol=2e-1)
        for mode in ("torch", "fast", "checked"):
            fn = (lambda: torch.matmul(a, b)) if mode == "torch" else (lambda: tritonblas.matmul(a, b))
            ctx = checked_path() if mode == "checked" else contextlib.nullcontext()
            with ctx, torch.no_grad():
                cpu_us, wall_us = time_loop(fn, calls, repeats, cuda=True)
            rows.append(dict(mode=mode, case="2d", m=m, n=n, k=k, batch=1, grad=False, calls=calls,
                             cpu_us=round(cpu_us, 2), wall_us=round(wall_us, 2), note=""))
    rows += miss_rows(cuda=True)
    return rows


def _clear_plans() -> None:
    """Forget plans, fast entries and the model's memoised selections (not the candidate spaces,
    the device → profile mapping, or Triton's compiled kernels)."""
    import importlib

    _select = importlib.import_module("origami.select")  # the module (origami.select is also the function)

    dispatch._PLANS.clear()
    launchcache.FAST.clear()
    _select._rank_cached.cache_clear()
    _select._select_cached.cache_clear()


def miss_rows(cuda: bool, passes: int = 5) -> list[dict]:
    """Plan-cache misses: the first call of each new key, Triton compile excluded. Every shape of
    MISS_SHAPES is run once first (compiling each config and binding each specialisation), then
    ``passes`` times the plans, fast entries and memoised selections are forgotten
    (:func:`_clear_plans`; compiled kernels and the bindings shared across keys stay) and the first
    call of each shape is timed. ``cpu_us`` is the median over all first calls (p20/p80 in the
    note). Rows: ``miss`` (the whole call), ``miss_triton`` (GPU: the same without sharing compiled
    kernels across keys), ``miss_plan`` (``dispatch._plan_of`` alone: GemmKey + select + make_plan)."""
    import statistics

    dt = torch.bfloat16
    dev = "cuda" if cuda else "cpu"
    make = (lambda *s: torch.randn(*s, device=dev, dtype=dt)) if cuda else (lambda *s: torch.empty(*s, dtype=dt))
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    b = make(4096, 4096)
    inputs = [make(m, k) for m, _, k in MISS_SHAPES]
    outs = [torch.empty(m, n, device=dev, dtype=dt) for m, n, _ in MISS_SHAPES]

    def first_calls(fn, args) -> list[float]:
        times = []
        for _ in range(passes):
            _clear_plans()
            sync()
            for x in args:
                t0 = time.perf_counter()
                fn(x)
                times.append((time.perf_counter() - t0) * 1e6)
            sync()
        return times

    with torch.no_grad():
        for a in inputs:
            tritonblas.matmul(a, b)
        sync()
        runs = {"miss": first_calls(lambda a: tritonblas.matmul(a, b), inputs)}
        if cuda:
            with no_reuse():
                runs["miss_triton"] = first_calls(lambda a: tritonblas.matmul(a, b), inputs)
        runs["miss_plan"] = first_calls(lambda ao: dispatch._plan_of(ao[0], b, ao[1], None, None, None, "mm")[2],
                                        list(zip(inputs, outs)))
        warm = time_loop(lambda: tritonblas.matmul(inputs[0], b), 1000, 3, cuda=cuda)[0]
    rows = []
    what = {"miss": "first call of a new key (select + plan + checked launch)",
            "miss_triton": "first call of a new key, no compiled kernel shared across keys",
            "miss_plan": "dispatch._plan_of on a miss (GemmKey + select + make_plan)"}
    for mode, times in runs.items():
        q = statistics.quantiles(times, n=5)
        med = statistics.median(times)
        note = (f"{what[mode]}, compile excluded; p20 {q[0]:.1f} p80 {q[3]:.1f} us; warm call {warm:.1f} us"
                + ("" if cuda else "; kernel launch stubbed"))
        rows.append(dict(mode=mode, case="2d", m=f"{MISS_SHAPES[0][0]}..{MISS_SHAPES[-1][0]}", n=4096, k=4096,
                         batch=1, grad=False, calls=len(times), cpu_us=round(med, 2), wall_us="", note=note))
    return rows


def cpu_rows(calls: int, repeats: int) -> list[dict]:
    stub_kernels()
    dt = torch.bfloat16
    b_big = torch.randn(4096, 4096, dtype=dt)
    cases = {
        "2d": (torch.randn(16, 4096, dtype=dt), b_big),
        "2d_bT": (torch.randn(16, 4096, dtype=dt), b_big.t()),
        "batched": (torch.randn(4, 16, 64, dtype=dt), torch.randn(4, 64, 32, dtype=dt)),
        "batch_broadcast": (torch.randn(1, 16, 64, dtype=dt), torch.randn(4, 64, 32, dtype=dt)),
    }
    rows = []
    for case, (a, b) in cases.items():
        m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
        batch = max(a.shape[0] if a.dim() == 3 else 1, b.shape[0] if b.dim() == 3 else 1)
        for grad in (False, True):
            for mode in ("fast", "checked", "torch"):
                if mode == "torch" and (grad or case == "2d_bT"):
                    continue
                fn = (lambda: torch.matmul(a, b)) if mode == "torch" else (lambda: tritonblas.matmul(a, b))
                ctx = checked_path() if mode == "checked" else contextlib.nullcontext()
                with ctx, (contextlib.nullcontext() if grad else torch.no_grad()):
                    cpu_us, wall_us = time_loop(fn, calls if mode != "torch" else max(10, calls // 50), repeats,
                                                cuda=False)
                note = "CPU GEMM included" if mode == "torch" else "kernel launch stubbed"
                rows.append(dict(mode=mode, case=case, m=m, n=n, k=k, batch=batch, grad=grad, calls=calls,
                                 cpu_us=round(cpu_us, 2), wall_us=round(wall_us, 2), note=note))
    rows += miss_rows(cuda=False)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--calls", type=int, default=10000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "bench_dispatch.csv"))
    args = ap.parse_args()
    cuda = torch.cuda.is_available()
    rows = gpu_rows(args.calls, args.repeats) if cuda else cpu_rows(args.calls, args.repeats)
    prov = dict(device=torch.cuda.get_device_name() if cuda else f"cpu (TRITON_INTERPRET={os.environ.get('TRITON_INTERPRET')})",
                git_sha=_git_sha(), torch=torch.__version__, triton=triton.__version__,
                python=platform.python_version(), cpu=platform.processor() or platform.machine(),
                date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    import io

    from tritonblas.tables import AtomicFile

    fh = io.StringIO()
    w = csv.DictWriter(fh, fieldnames=FIELDS)
    w.writeheader()
    for r in rows:
        w.writerow({**r, **prov})
    with AtomicFile(out) as f:
        f.write(fh.getvalue())
    for r in rows:
        print(f"{r['mode']:8s} {r['case']:16s} {r['m']}x{r['n']}x{r['k']} b{r['batch']} grad={r['grad']!s:5s} "
              f"cpu {r['cpu_us']:9.2f} us  wall {r['wall_us'] or float('nan'):9.2f} us  {r['note']}")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python
"""One-shot check of our kernels against torch.matmul (cuBLAS) on the H200: time, error, provenance.

    OUT=/some/dir python benchmarks/kernel_check.py            # from the repository root, ≤ ~2 min

For six bf16 row-major shapes (4096³, 8192³, 4096×1000×7000, 16×4096×4096, 1×8192×8192 and
1536×3584×8192, whose best 128×256 DP tiling is 168 tiles = 1.27 waves on 132 SMs) it times
torch.matmul and ≤ 8 hand-picked configs of ours (DP / persistent / TMA / the flattened TMA kernel
with a TMA-store epilogue — ``flat-``, ``make_plan(..., flat=True)`` —, split-K and split-K TMA for the
skinny shapes, Stream-K and Stream-K TMA for the wave-quantised one), each with ``triton.testing.do_bench(...,
return_mode="median")`` on random inputs, checks every result against torch (max |diff|) and
against an fp32 reference (relative Frobenius error, next to torch's own), and writes
``$OUT/kernel_check.csv`` (default ``benchmarks/results``) with ``#`` provenance lines (git sha, GPU,
torch/triton versions, date). Configs are compiled first, in parallel spawned processes
(``tritonblas.plan.precompile``); a config that fails to compile or run is recorded with its error,
never fatal. A time budget (``--budget-s``) skips what is left rather than overrunning.

The N = 1000 shape also runs an ablation: the same config with the alignment hints forced off
(``*_ALIGN = 1``), which measures what the hints are worth.

``--smoke`` runs tiny shapes under the CPU interpreter (no timing), to check the script itself.
"""

from __future__ import annotations

import argparse
import csv
import os
import platform
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SHAPES = [  # (name, M, N, K)
    ("square-4096", 4096, 4096, 4096),
    ("square-8192", 8192, 8192, 8192),
    ("n1000", 4096, 1000, 7000),
    ("skinny-16", 16, 4096, 4096),
    ("gemv-1", 1, 8192, 8192),
    ("waves-1.27", 1536, 3584, 8192),
]
SMOKE_SHAPES = [("square", 96, 96, 96), ("n1000", 64, 40, 100), ("skinny", 4, 96, 256), ("waves", 64, 96, 128)]


@dataclass(frozen=True)
class Variant:
    label: str
    kind: str
    bm: int
    bn: int
    bk: int
    warps: int
    stages: int
    group_m: int = 8
    grid: int = 0
    split_k: int = 1
    tma: bool = False
    no_hints: bool = False
    flat: bool = False


def _v(kind, bm, bn, bk, warps, stages, *, grid=0, split=1, tma=False, no_hints=False, group_m=8, flat=False):
    tma = tma or flat
    label = f"{'flat-' if flat else 'tma-' if tma else ''}{kind} {bm}x{bn}x{bk} w{warps} s{stages}"
    label += f" grid{grid}" if grid else ""
    label += f" split{split}" if split > 1 else ""
    label += " no-hints" if no_hints else ""
    return Variant(label, kind, bm, bn, bk, warps, stages, group_m, grid, split, tma, no_hints, flat)


SQUARE = [
    _v("dp", 128, 256, 64, 8, 3), _v("dp", 128, 256, 64, 8, 3, tma=True), _v("dp", 128, 256, 64, 8, 4, tma=True),
    _v("dp", 256, 128, 64, 8, 3, tma=True), _v("persistent", 128, 256, 64, 8, 3, grid=132, tma=True),
    _v("dp", 128, 256, 64, 8, 3, flat=True), _v("persistent", 128, 256, 64, 8, 3, grid=132, flat=True),
]
VARIANTS = {
    "square-4096": SQUARE,
    "square-8192": SQUARE,
    "n1000": [
        _v("dp", 128, 256, 64, 8, 3), _v("dp", 128, 256, 64, 8, 3, tma=True), _v("dp", 128, 256, 64, 8, 3, flat=True),
        _v("persistent", 128, 256, 64, 8, 3, grid=132, flat=True),
        _v("streamk", 128, 256, 64, 8, 3, grid=132, tma=True), _v("dp", 128, 128, 64, 4, 4, no_hints=True),
        _v("dp", 256, 128, 64, 8, 4, tma=True, group_m=1),  # the exhaustive sweep's best (issue4.csv)
    ],
    "skinny-16": [
        _v("dp", 16, 64, 128, 4, 5), _v("dp", 16, 64, 128, 4, 5, tma=True),
        _v("splitk", 16, 64, 128, 4, 4, split=4), _v("splitk", 16, 64, 128, 4, 4, split=4, tma=True),
        _v("splitk", 16, 64, 128, 4, 4, split=2, tma=True), _v("splitk", 16, 64, 256, 4, 3, split=4, tma=True),
        _v("splitk", 16, 128, 64, 4, 4, split=4, tma=True), _v("splitk", 16, 64, 64, 4, 6, split=4, tma=True),
    ],
    "gemv-1": [
        _v("dp", 16, 64, 128, 4, 5), _v("dp", 16, 64, 128, 4, 5, tma=True), _v("dp", 16, 64, 256, 4, 4, tma=True),
        _v("splitk", 16, 64, 128, 4, 4, split=2), _v("splitk", 16, 64, 128, 4, 4, split=2, tma=True),
        _v("splitk", 16, 64, 128, 4, 5, split=4, tma=True),
        _v("dp", 16, 64, 128, 4, 4, tma=True, group_m=1), _v("dp", 16, 64, 128, 4, 6, tma=True, group_m=1),
        _v("dp", 16, 64, 128, 4, 8, tma=True, group_m=1), _v("dp", 16, 128, 128, 4, 6, tma=True, group_m=1),
    ],
    "waves-1.27": [
        _v("dp", 128, 256, 64, 8, 3, tma=True), _v("dp", 128, 128, 64, 4, 4),
        _v("persistent", 128, 256, 64, 8, 3, grid=132, flat=True),
        _v("streamk", 128, 256, 64, 8, 3, grid=132), _v("streamk", 128, 256, 64, 8, 3, grid=132, tma=True),
        _v("streamk", 128, 256, 64, 8, 4, grid=132, tma=True), _v("streamk", 128, 128, 64, 4, 4, grid=132, tma=True),
        _v("streamk", 128, 128, 64, 8, 3, grid=264, tma=True),
    ],
}
COLUMNS = ["shape", "m", "n", "k", "dtype", "variant", "kind", "tma", "kernel", "block_m", "block_n", "block_k",
           "num_warps", "num_stages", "group_m", "grid", "split_k", "median_ms", "tflops", "torch_ms",
           "ratio_vs_torch", "max_abs_diff_vs_torch", "rel_err_vs_fp32", "torch_rel_err_vs_fp32", "error"]


def _provenance(torch, triton) -> dict:
    from _harness import provenance as run_provenance

    return run_provenance(host=platform.node())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.environ.get("OUT", str(ROOT / "benchmarks" / "results")))
    ap.add_argument("--budget-s", type=float, default=110.0, help="stop starting new configs after this (s)")
    ap.add_argument("--workers", type=int, default=min(16, os.cpu_count() or 1), help="parallel compile processes")
    ap.add_argument("--shapes", default="", help="comma-separated subset of shape names")
    ap.add_argument("--smoke", action="store_true", help="tiny shapes under the CPU interpreter (checks the script)")
    args = ap.parse_args(argv)
    if args.smoke:
        os.environ["TRITON_INTERPRET"] = "1"
    t_start = time.time()

    import torch
    import triton

    import origami
    from tritonblas.plan import make_plan, precompile, prepare_launch, resolve_kernel_name

    device = "cpu" if args.smoke else "cuda"
    if device == "cuda" and not torch.cuda.is_available():
        print("kernel_check: no CUDA GPU (use --smoke on CPU)", file=sys.stderr)
        return 2
    hw = origami.load_profile("h200")
    prov = _provenance(torch, triton)
    shapes = SMOKE_SHAPES if args.smoke else SHAPES
    if args.shapes:
        keep = set(args.shapes.split(","))
        shapes = [s for s in shapes if s[0] in keep]
    torch.backends.cuda.matmul.allow_tf32 = False

    def variants_for(name):
        if not args.smoke:
            return VARIANTS[name]
        small = [_v("dp", 32, 32, 32, 4, 2), _v("persistent", 32, 32, 32, 4, 2, grid=3),
                 _v("streamk", 32, 32, 32, 4, 2, grid=5), _v("splitk", 32, 32, 32, 4, 2, split=2),
                 _v("dp", 32, 32, 32, 4, 2, tma=True), _v("dp", 32, 32, 32, 4, 2, no_hints=True),
                 _v("streamk", 32, 32, 32, 4, 2, grid=5, tma=True), _v("splitk", 32, 32, 32, 4, 2, split=2, tma=True),
                 _v("persistent", 32, 32, 32, 4, 2, grid=3, flat=True)]
        return small

    # 1. plans (invalid ones are recorded now) -------------------------------------------------
    rows, jobs = [], []
    for name, m, n, k in shapes:
        p = origami.GemmProblem(m, n, k, a_dtype="bf16", b_dtype="bf16", c_dtype="bf16")
        for var in variants_for(name):
            row = dict(shape=name, m=m, n=n, k=k, dtype="bf16", variant=var.label, kind=var.kind, tma=var.tma,
                       block_m=var.bm, block_n=var.bn, block_k=var.bk, num_warps=var.warps, num_stages=var.stages,
                       group_m=var.group_m, grid=var.grid, split_k=var.split_k, error="")
            try:
                cfg = origami.TileConfig(kind=var.kind, block_m=var.bm, block_n=var.bn, block_k=var.bk,
                                         num_warps=var.warps, num_stages=var.stages, group_m=var.group_m,
                                         grid=var.grid, split_k=var.split_k)
                plan = make_plan(cfg, p, hw, tma=var.tma, flat=var.flat)
                jobs.append((row, var, plan))
            except Exception as e:  # noqa: BLE001 - recorded, not fatal
                row["error"] = f"plan: {type(e).__name__}: {e}"
            rows.append(row)

    # 2. compile in parallel (library path), ablations in-process later -------------------------
    t0 = time.time()
    to_compile = [plan for _, var, plan in jobs if not var.no_hints]
    results = precompile(to_compile, device, workers=0 if args.smoke else args.workers)
    errors = {id(pl): err for pl, err in zip(to_compile, results)}
    print(f"compiled {len(to_compile)} plans in {time.time() - t0:.1f}s ({0 if args.smoke else args.workers} workers); "
          f"{sum(e is not None for e in results)} failed", flush=True)

    # 3. time and check, shape by shape ---------------------------------------------------------
    def bench(fn):
        if args.smoke:
            t = time.perf_counter()
            fn()
            return (time.perf_counter() - t) * 1e3
        return triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")

    summary = []
    for name, m, n, k in shapes:
        if time.time() - t_start > args.budget_s:
            for row in rows:
                if row["shape"] == name and not row["error"]:
                    row["error"] = "skipped: time budget"
            continue
        gen = torch.Generator(device=device).manual_seed(0)
        a = torch.randn(m, k, device=device, generator=gen).bfloat16()
        b = torch.randn(k, n, device=device, generator=gen).bfloat16()
        ref32 = torch.matmul(a.float(), b.float())
        torch_out = torch.matmul(a, b)
        torch_ms = bench(lambda: torch.matmul(a, b))
        flop = 2.0 * m * n * k

        def rel_err(x):
            return ((x.float() - ref32).norm() / ref32.norm()).item()

        torch_err = rel_err(torch_out)
        rows.append(dict(shape=name, m=m, n=n, k=k, dtype="bf16", variant="torch.matmul", kind="torch",
                         median_ms=torch_ms, tflops=flop / torch_ms / 1e9, torch_ms=torch_ms, ratio_vs_torch=1.0,
                         rel_err_vs_fp32=torch_err, torch_rel_err_vs_fp32=torch_err, error=""))
        best = None
        for row, var, plan in [j for j in jobs if j[0]["shape"] == name]:
            if errors.get(id(plan)):
                row["error"] = f"compile: {errors[id(plan)]}"
                continue
            if time.time() - t_start > args.budget_s:
                row["error"] = "skipped: time budget"
                continue
            try:
                out = torch.empty(m, n, device=device, dtype=torch.bfloat16)
                prepared = prepare_launch(plan, a, b, out)
                if var.no_hints:
                    for key in ("A_ALIGN", "B_ALIGN", "OUT_ALIGN"):
                        prepared.kwargs[key] = 1
                row["kernel"] = resolve_kernel_name(plan, a, b) + (" (hints off)" if var.no_hints else "")
                prepared.run()
                if device == "cuda":
                    torch.cuda.synchronize()
                row["max_abs_diff_vs_torch"] = (out.float() - torch_out.float()).abs().max().item()
                row["rel_err_vs_fp32"] = rel_err(out)
                row["torch_rel_err_vs_fp32"] = torch_err
                ms = bench(prepared.run)
                row.update(median_ms=ms, tflops=flop / ms / 1e9, torch_ms=torch_ms, ratio_vs_torch=torch_ms / ms)
                if not var.no_hints and (best is None or ms < best[0]):
                    best = (ms, var.label)
            except Exception as e:  # noqa: BLE001 - recorded, not fatal
                row["error"] = f"run: {type(e).__name__}: {e}".splitlines()[0][:300]
        summary.append((name, m, n, k, torch_ms, best))
        print(f"{name}: torch {torch_ms:.4f} ms" + (f", best ours {best[0]:.4f} ms ({best[1]}), "
                                                    f"ratio {torch_ms / best[0]:.2f}" if best else ", no result"),
              flush=True)

    # 4. write ---------------------------------------------------------------------------------
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "kernel_check.csv"
    write_rows(path, prov,
               f"triton.testing.do_bench(warmup=25, rep=100, return_mode='median'), random bf16 inputs; "
               f"ratio_vs_torch = torch_ms / median_ms (> 1: faster than torch); wall {time.time() - t_start:.0f}s",
               COLUMNS, rows)

    print(f"\n{'shape':<14}{'M x N x K':>22}{'torch ms':>11}{'TFLOP/s':>9}{'ours ms':>11}{'ratio':>7}  best config")
    for name, m, n, k, torch_ms, best in summary:
        flop = 2.0 * m * n * k
        line = f"{name:<14}{f'{m}x{n}x{k}':>22}{torch_ms:>11.4f}{flop / torch_ms / 1e9:>9.1f}"
        line += f"{best[0]:>11.4f}{torch_ms / best[0]:>7.2f}  {best[1]}" if best else "          -      -  (none)"
        print(line)
    failed = [r for r in rows if r.get("error")]
    for r in failed:
        print(f"  {r['shape']} {r['variant']}: {r['error']}")
    print(f"\nwrote {path} ({len(rows)} rows, {len(failed)} with errors) in {time.time() - t_start:.0f}s")
    return 0


def _fmt(v):
    if isinstance(v, float):
        return f"{v:.6g}"
    return v


def write_rows(path: Path, prov: dict, timing: str, columns, rows: list[dict]) -> None:
    """``rows`` under ``columns`` (floats to 6 significant digits), after one ``# key: value`` line per provenance
    item and a ``# timing:`` line, written atomically (``tritonblas.tables.AtomicFile``); kernel_probe.py's too."""
    import io

    from tritonblas.tables import AtomicFile

    f = io.StringIO()
    for key, value in prov.items():
        f.write(f"# {key}: {value}\n")
    f.write(f"# timing: {timing}\n")
    w = csv.DictWriter(f, fieldnames=columns, extrasaction="ignore")
    w.writeheader()
    for row in rows:
        w.writerow({c: _fmt(row.get(c, "")) for c in columns})
    with AtomicFile(path) as out:
        out.write(f.getvalue())


if __name__ == "__main__":
    sys.exit(main())

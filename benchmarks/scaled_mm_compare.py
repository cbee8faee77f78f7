#!/usr/bin/env python
"""fp8 ``tritonblas.scaled_mm`` against ``torch._scaled_mm`` (cuBLASLt) on one GPU, one run.

    PYTHONPATH=$PWD python3 benchmarks/scaled_mm_compare.py [--set llm] [--limit 40] [--recipe row]
        [--fast-accum] [--rep-ms 20] [--out benchmarks/results/scaled_mm_h200.csv]

Per shape of a shapes file (bf16 sets reused as fp8 sizes; K and N rounded up to multiples of 16,
which torch's kernel requires): e4m3 operands in torch's layout (a row-major, b column-major), fp32
scales (``--recipe row``: scale_a (M, 1), scale_b (1, N); ``tensor``: one each), bf16 output. Both
outputs are checked against a float64 product of the same fp8 values (relative Frobenius error
≤ 5e-2, the sweep's fp8 bar); a failing row records its error and no time. Times are
``triton.testing.do_bench`` medians (L2 flushed), torch and ours alternating per shape. Writes CSV
rows (``m, n, k, recipe, ours_us, torch_us, ratio, ours_tflops, torch_tflops, ours_err, torch_err,
error``) with ``#`` provenance lines, rewritten atomically after every shape. Prints the geometric
mean of ours/torch and the 8192³ TFLOP/s (issue 18's targets: ≥ 0.95, ≥ 1150).

``--variant K=V[,K=V]``: ours also on this GPU's profile with those model parameters replaced
(``tritonblas.scaled_mm(profile=...)``), in the same alternation: the A/B of a model term on scaled_mm's
picks, which two runs cannot give (session 44: unmoved small-shape picks moved 0.4-0.6x between two H100
runs). The rows then carry both picks (``ours_config``, ``variant_config``).

``--promote-k N`` (a question for issue 18, not a user setting): run origami's Triton fp8 kernel
with its reduced-precision wgmma sum promoted every N of K (capped at each tile's BLOCK_K) instead of
``plan._FP8_PROMOTE_K`` (128, CUTLASS's interval; 32 is one wgmma). The provenance records it.

Runs: 36cc947 (origami's pick), a8a7db8 (``TRITONBLAS_GLUON=1``, with and without ``--fast-accum``):
``benchmarks/results/scaled_mm_h200_*.csv``.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _harness import provenance, write_csv  # noqa: E402

FIELDS = ("m", "n", "k", "recipe", "ours_us", "torch_us", "ratio", "ours_tflops", "torch_tflops",
          "ours_err", "torch_err", "error", "ours_config", "variant_config", "variant_us", "variant_ratio",
          "variant_err")


def rel_error(x, ref) -> float:
    """Relative Frobenius error of ``x`` against the float64 ``ref``."""
    import torch

    return (torch.linalg.vector_norm(x.double() - ref) / torch.linalg.vector_norm(ref).clamp_min(1e-30)).item()


def _round16(x: int) -> int:
    return max(16, -(-x // 16) * 16)


def fp8_operands(m: int, n: int, k: int, recipe: str, device: str = "cuda") -> tuple:
    """(a, b, scale_a, scale_b) of one shape, seeded by it: e4m3 a (M, K) row-major and b (K, N) column-major
    (torch's layout), values of magnitude ~2; fp32 scales in [0.5, 1.5), (M, 1) and (1, N) for ``row``, scalars
    for ``tensor``."""
    import torch

    g = torch.Generator(device=device).manual_seed(m * 131 + n * 7 + k)
    a = (torch.randn(m, k, device=device, generator=g) * 2).to(torch.float8_e4m3fn)
    b = (torch.randn(n, k, device=device, generator=g) * 2).to(torch.float8_e4m3fn).t()
    if recipe == "row":
        return a, b, torch.rand(m, 1, device=device, generator=g) + 0.5, torch.rand(1, n, device=device, generator=g) + 0.5
    return a, b, torch.rand((), device=device, generator=g) + 0.5, torch.rand((), device=device, generator=g) + 0.5


def one(m: int, n: int, k: int, recipe: str, fast: bool, rep_ms: int, variant=None) -> dict:
    """One shape: torch and ours (and, with ``variant``, a HardwareProfile, ours on it), alternating."""
    import torch
    import triton

    import tritonblas

    a, b, sa, sb = fp8_operands(m, n, k, recipe)
    row = {"m": m, "n": n, "k": k, "recipe": recipe, "error": ""}
    ours = lambda: tritonblas.scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16, use_fast_accum=fast)  # noqa: E731
    theirs = lambda: torch._scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16, use_fast_accum=fast)  # noqa: E731
    alt = lambda: tritonblas.scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16, use_fast_accum=fast,  # noqa: E731
                                       profile=variant)
    try:
        ref = (sa.double().reshape(-1, 1) if recipe == "row" else sa.double()) * (a.double() @ b.double())
        ref = ref * (sb.double().reshape(1, -1) if recipe == "row" else sb.double())
        row["ours_err"], row["torch_err"] = rel_error(ours(), ref), rel_error(theirs(), ref)
        if variant is not None:
            row["variant_err"] = rel_error(alt(), ref)
        for side in ("ours", "variant"):
            if row.get(f"{side}_err", 0.0) > 5e-2:
                row["error"] = f"{side}: relative error {row[side + '_err']:.3g} > 5e-2"
                return row
        flops = 2.0 * m * n * k
        t_ours, t_torch, t_alt = [], [], []
        for _ in range(2):  # alternating
            t_torch.append(triton.testing.do_bench(theirs, rep=rep_ms, return_mode="median"))
            t_ours.append(triton.testing.do_bench(ours, rep=rep_ms, return_mode="median"))
            if variant is not None:
                t_alt.append(triton.testing.do_bench(alt, rep=rep_ms, return_mode="median"))
        ours_ms, torch_ms = min(t_ours), min(t_torch)
        row.update(ours_us=ours_ms * 1e3, torch_us=torch_ms * 1e3, ratio=torch_ms / ours_ms,
                   ours_tflops=flops / ours_ms / 1e9, torch_tflops=flops / torch_ms / 1e9)
        if t_alt:
            row.update(variant_us=min(t_alt) * 1e3, variant_ratio=torch_ms / min(t_alt))
    except Exception as e:  # noqa: BLE001 - one shape's failure is a row
        row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
    return row


def picked(m: int, n: int, k: int, hw, fast: bool = False, align: int = 16) -> str:
    """origami's pick for this scaled_mm call on ``hw`` (a row-major e4m3 A, a column-major B, bf16 out, rows
    ``align`` bytes aligned); ``fast``: with fast accumulation, which selects without the promoted kernels' spill
    rule (as the dispatcher does)."""
    import origami
    from origami.space import without_promotion

    p = origami.GemmProblem(m, n, k, "fp8_e4m3", "fp8_e4m3", "bf16", "N", "T", 1, align)
    return origami.select(p, without_promotion(hw) if fast else hw).config.short()


def _gm(rows, key: str) -> float:
    return math.exp(sum(math.log(r[key]) for r in rows) / len(rows)) if rows else math.nan


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", default="llm")
    ap.add_argument("--limit", type=int, default=40)
    ap.add_argument("--recipe", choices=("row", "tensor"), default="row")
    ap.add_argument("--fast-accum", action="store_true")
    ap.add_argument("--rep-ms", type=int, default=20)
    ap.add_argument("--promote-k", type=int, default=None,
                    help="promote origami's Triton fp8 kernel every this many K (default: plan._FP8_PROMOTE_K)")
    ap.add_argument("--variant", default=None, metavar="K=V[,K=V]",
                    help="also time ours on this GPU's profile with these model parameters replaced, in the same "
                         "alternation (an A/B of a model term on scaled_mm's picks)")
    ap.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", ROOT / "benchmarks/results")) / "scaled_mm_h200.csv")
    args = ap.parse_args(argv)
    if args.promote_k is not None and (args.promote_k < 32 or args.promote_k & (args.promote_k - 1)):
        ap.error(f"--promote-k: {args.promote_k} is not a power of two of at least 32 (below 32 Triton leaves wgmma)")
    from missing_picks import variant_profiles

    if args.variant:
        variant_profiles("h200", [args.variant])  # the spec's keys and values, checked before any GPU work
    import torch

    if not torch.cuda.is_available():
        print("scaled_mm_compare.py: needs a CUDA GPU", file=sys.stderr)
        return 2
    from origami.shapes import load_shapes

    from tritonblas import dispatch

    base = dispatch.without_ws(dispatch.device_info(torch.device("cuda")).plan_profile)
    variant = variant_profiles(base, [args.variant])[0] if args.variant else None
    if args.promote_k is not None:
        from tritonblas import plan

        plan._FP8_PROMOTE_K = args.promote_k  # read at each launch's preparation (plan.prepare_launch)

    probs = load_shapes(ROOT / "benchmarks" / "shapes" / f"{args.set}.yaml")[: args.limit]
    dims = sorted({(p.m, _round16(p.n), _round16(p.k)) for p in probs} | {(8192, 8192, 8192)})
    from tritonblas import plan

    prov = provenance(set=args.set, recipe=args.recipe, fast_accum=args.fast_accum, rep_ms=args.rep_ms,
                      promote_k=plan._FP8_PROMOTE_K, variant=args.variant or "")
    rows = []
    for m, n, k in dims:
        r = one(m, n, k, args.recipe, args.fast_accum, args.rep_ms, variant)
        r["ours_config"] = picked(m, n, k, base, args.fast_accum)
        if variant is not None:
            r["variant_config"] = picked(m, n, k, variant, args.fast_accum)
        rows.append(r)
        print(f"{m}x{n}x{k}: ours {r.get('ours_us', math.nan):.1f} us torch {r.get('torch_us', math.nan):.1f} us "
              f"x{r.get('ratio', math.nan):.3f}"
              + (f" variant x{r.get('variant_ratio', math.nan):.3f}" if variant else "") + f" {r['error']}", flush=True)
        write_csv(args.out, rows, FIELDS, prov)
    ok = [r for r in rows if not r["error"]]
    if ok:
        gm = _gm(ok, "ratio")
        big = next((r for r in ok if (r["m"], r["n"], r["k"]) == (8192, 8192, 8192)), None)
        if variant is not None:
            gv = _gm(ok, "variant_ratio")
            moved = [r for r in ok if r["variant_config"] != r["ours_config"]]
            print(f"variant {args.variant}: geomean {gv:.3f} against ours {gm:.3f} (same run); {len(moved)} picks "
                  f"moved, on them ours {_gm(moved, 'ratio'):.3f} variant {_gm(moved, 'variant_ratio'):.3f}")
        print(f"geomean ours/torch over {len(ok)} shapes: {gm:.3f}; 8192^3: "
              f"{big['ours_tflops'] if big else math.nan:.0f} TFLOP/s ours, "
              f"{big['torch_tflops'] if big else math.nan:.0f} torch; failed rows: {len(rows) - len(ok)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python
"""The experimental Gluon warp-specialised GEMM (tritonblas/kernels/gluon_hopper.py) against
torch.matmul (cuBLAS) and tritonblas.matmul (the dispatcher's pick) on the H200.

    python benchmarks/gluon_probe.py --out benchmarks/results/gluon_probe.csv      # ≈ 2-4 min

Shapes (M, N, K): 4096³, 8192³, 8192x4096x4096, 4096x1024x4096 (BERT FFN-ish), 4096x4096x1024,
2048x6144x4096, 16x4096x4096; random bf16 row-major inputs (``--layouts NN,NT`` adds a
column-major B for the Gluon kernel only).

1. Trials: every (Gluon variant, shape) is first launched in a child process (this script with
   ``--trial``), one child per variant walking the shapes; a shape that gives no answer within
   ``--trial-timeout`` seconds (60) is recorded as a hang, the child is killed and a new one goes on
   with the next shape (``--after-hang continue``) or the variant's other shapes are skipped (the
   default). Nothing that failed or hung there is launched in this process.
2. Timing, in this process, same inputs for everyone: ``triton.testing.do_bench(warmup=25,
   rep=100, return_mode="median")`` of torch.matmul, tritonblas.matmul and each Gluon variant that
   passed its trial; every result is checked against the fp32 product (relative Frobenius error
   ≤ 2e-2, torch's own error recorded next to it) and a wrong one is recorded, not timed.

Writes ``--out`` (CSV, ``#`` provenance lines by ``_harness.write_csv``), rewritten after every shape.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import ROOT, provenance, watch_child, write_csv  # noqa: E402

SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192), (8192, 4096, 4096), (4096, 1024, 4096), (4096, 4096, 1024),
          (2048, 6144, 4096), (16, 4096, 4096)]
# label -> gluon_matmul keywords
VARIANTS = {
    "gluon-ws 128x256x64 s3": dict(block_m=128, block_n=256, block_k=64, stages=3, group_m=8),
    "gluon-ws 128x128x64 s4": dict(block_m=128, block_n=128, block_k=64, stages=4, group_m=8),
}
COLUMNS = ["m", "n", "k", "layout", "variant", "kind", "median_ms", "tflops", "torch_ms", "ratio_vs_torch",
           "rel_err_vs_fp32", "torch_rel_err_vs_fp32", "trial", "trial_s", "detail", "error"]
TOL = 2e-2
DEVICE = "cuda"  # (a test may point it elsewhere)


def _inputs(m, n, k, layout, seed=0):
    import torch

    gen = torch.Generator(device=DEVICE).manual_seed(seed)
    a = torch.randn(m, k, device=DEVICE, generator=gen).bfloat16()
    b = torch.randn(k, n, device=DEVICE, generator=gen).bfloat16()
    if layout == "NT":
        b = b.t().contiguous().t()  # same values, column-major
    return a, b


def _rel_err(x, ref32) -> float:
    return ((x.float() - ref32).norm() / ref32.norm()).item()


# --- 1. trials in a child process ------------------------------------------------------------------
def _trial_child(label: str, cases: list) -> int:
    """Run ``label`` once on each (m, n, k, layout); one JSON line before and after each."""
    os.environ.pop("TRITON_INTERPRET", None)
    import torch

    from tritonblas.kernels.gluon_hopper import gluon_matmul

    for m, n, k, layout in cases:
        print(json.dumps(dict(start=[m, n, k, layout])), flush=True)
        t0 = time.time()
        try:
            a, b = _inputs(m, n, k, layout)
            out = gluon_matmul(a, b, **VARIANTS[label])
            torch.cuda.synchronize()
            err = _rel_err(out, a.float() @ b.float())
            row = dict(ok=err <= TOL, rel_err=err, error="" if err <= TOL else f"wrong: rel err {err:.3g}")
        except Exception as e:  # noqa: BLE001 - reported to the parent
            row = dict(ok=False, error=f"{type(e).__name__}: {e}".splitlines()[0][:300])
        row.update(case=[m, n, k, layout], s=round(time.time() - t0, 2))
        print(json.dumps(row), flush=True)
    return 0


def run_trials(label: str, cases: list, timeout_s: float, *, after_hang: str = "skip") -> dict:
    """{case: result row} for ``label``; a case with no answer in ``timeout_s`` is a hang. After a
    hang the variant's remaining cases are skipped (``after_hang="skip"``, the default: a kernel
    that hangs once will most likely hang again, and each costs ``timeout_s`` of device time) or
    tried in a fresh child (``"continue"``)."""
    results, todo = {}, [tuple(c) for c in cases]
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    while todo:
        cmd = [sys.executable, str(Path(__file__).resolve()), "--trial", label, json.dumps(todo)]
        for event in watch_child(cmd, timeout_s=timeout_s, env=env):
            if event[0] == "row":
                msg = event[1]
                case = tuple(msg["case"])
                msg["trial"] = "ok" if msg["ok"] else "fail"
                results[case] = msg
                todo.remove(case)
                print(f"  {label} {case}: {msg['trial']} {msg.get('error', '')} ({msg['s']} s)", flush=True)
            elif event[0] == "hang":
                case = tuple(event[1]) if event[1] else todo[0]
                results[case] = dict(ok=False, trial="hang", error=f"no answer within {timeout_s:.0f} s (killed)")
                todo.remove(case)
                print(f"  {label} {case}: HANG (killed after {timeout_s:.0f} s)", flush=True)
                if after_hang == "skip":
                    for c in todo:
                        results[c] = dict(ok=False, trial="skipped", error=f"not tried: hung on {case}")
                    todo = []
            elif event[0] == "exit" and todo:  # died on the case it had started (or before the first)
                case = todo[0]
                tail = event[2][-300:].replace("\n", " | ")
                results[case] = dict(ok=False, trial="crash", error=f"child exited rc {event[1]}: {tail}")
                todo.remove(case)
    return results


# --- 2. timing ---------------------------------------------------------------------------------------
def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="CSV to write (required)")
    ap.add_argument("--shapes", default="", help="MxNxK,... (default: the seven of the module docstring)")
    ap.add_argument("--variants", default="", help="comma-separated labels of VARIANTS (default: all)")
    ap.add_argument("--layouts", default="NN", help="B layouts for the Gluon kernel: NN, NT or NN,NT")
    ap.add_argument("--trial-timeout", type=float, default=60.0)
    ap.add_argument("--after-hang", choices=["skip", "continue"], default="skip",
                    help="after a variant hangs: skip its other shapes (default) or try them in a new child")
    ap.add_argument("--trial", nargs=2, metavar=("LABEL", "CASES_JSON"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.trial:
        return _trial_child(args.trial[0], [tuple(c) for c in json.loads(args.trial[1])])
    if not args.out:
        ap.error("--out is required")

    import torch
    import triton

    if not torch.cuda.is_available():
        print("gluon_probe: needs a CUDA GPU (Hopper)", file=sys.stderr)
        return 2
    import tritonblas
    from tritonblas.kernels.gluon_hopper import HAS_GLUON, gluon_matmul

    shapes = [tuple(int(x) for x in s.split("x")) for s in args.shapes.split(",") if s] or SHAPES
    labels = [v.strip() for v in args.variants.split(",") if v.strip()] or list(VARIANTS)
    layouts = [x.strip() for x in args.layouts.split(",") if x.strip()]
    for label in labels:
        if label not in VARIANTS:
            ap.error(f"--variants: unknown {label!r}; known: {list(VARIANTS)}")
    t_start = time.time()
    prov = provenance(script="benchmarks/gluon_probe.py", device_capability=".".join(
        map(str, torch.cuda.get_device_capability())), sms=torch.cuda.get_device_properties(0).multi_processor_count,
        timing="triton.testing.do_bench(warmup=25, rep=100, return_mode='median'), random bf16 inputs; "
               "ratio_vs_torch = torch_ms / median_ms (> 1: faster than torch)",
        trial_timeout_s=args.trial_timeout)

    cases = [(m, n, k, lay) for m, n, k in shapes for lay in layouts]
    trials = {}
    if HAS_GLUON and torch.cuda.get_device_capability()[0] == 9:
        print(f"trials ({len(cases)} cases x {len(labels)} variants, {args.trial_timeout:.0f} s each at most)",
              flush=True)
        for label in labels:
            trials[label] = run_trials(label, cases, args.trial_timeout, after_hang=args.after_hang)
    else:
        reason = "no gluon in this triton" if not HAS_GLUON else "not a Hopper GPU"
        trials = {label: {c: dict(ok=False, trial="skipped", error=reason) for c in cases} for label in labels}

    def bench(fn):
        return triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")

    rows = []
    for m, n, k in shapes:
        flop = 2.0 * m * n * k
        a, b = _inputs(m, n, k, "NN")
        ref32 = a.float() @ b.float()
        torch_out = torch.matmul(a, b)
        torch_err = _rel_err(torch_out, ref32)
        torch_ms = bench(lambda: torch.matmul(a, b))
        base = dict(m=m, n=n, k=k, torch_ms=torch_ms, torch_rel_err_vs_fp32=torch_err)
        rows.append(dict(base, layout="NN", variant="torch.matmul", kind="torch", median_ms=torch_ms,
                         tflops=flop / torch_ms / 1e9, ratio_vs_torch=1.0, rel_err_vs_fp32=torch_err))
        row = dict(base, layout="NN", variant="tritonblas.matmul", kind="dispatcher")
        try:
            picked = [x.strip() for x in tritonblas.explain(a, b).splitlines() if x.strip().startswith("config:")]
            row["detail"] = (picked[0] if picked else "config: ?")[:200]
            out = tritonblas.matmul(a, b)
            torch.cuda.synchronize()
            row["rel_err_vs_fp32"] = err = _rel_err(out, ref32)
            if err > TOL:
                row["error"] = f"wrong: rel err {err:.3g}"
            else:
                ms = bench(lambda: tritonblas.matmul(a, b))
                row.update(median_ms=ms, tflops=flop / ms / 1e9, ratio_vs_torch=torch_ms / ms)
        except Exception as e:  # noqa: BLE001 - recorded, not fatal
            row["error"] = f"{type(e).__name__}: {e}".splitlines()[0][:300]
        rows.append(row)
        for layout in layouts:
            bl = b if layout == "NN" else b.t().contiguous().t()
            for label in labels:
                t = trials[label].get((m, n, k, layout), dict(ok=False, trial="missing", error="no trial"))
                row = dict(base, layout=layout, variant=label, kind="gluon", trial=t.get("trial"), trial_s=t.get("s"))
                if not t["ok"]:
                    row["error"] = f"trial: {t.get('error', '')}"
                    rows.append(row)
                    continue
                try:
                    kw = VARIANTS[label]
                    out = torch.empty(m, n, device=DEVICE, dtype=torch.bfloat16)
                    gluon_matmul(a, bl, out, **kw)
                    torch.cuda.synchronize()
                    row["rel_err_vs_fp32"] = err = _rel_err(out, ref32)
                    if err > TOL:
                        row["error"] = f"wrong: rel err {err:.3g}"
                    else:
                        ms = bench(lambda: gluon_matmul(a, bl, out, **kw))
                        row.update(median_ms=ms, tflops=flop / ms / 1e9, ratio_vs_torch=torch_ms / ms)
                except Exception as e:  # noqa: BLE001 - recorded, not fatal
                    row["error"] = f"{type(e).__name__}: {e}".splitlines()[0][:300]
                rows.append(row)
        shown = [r for r in rows if (r["m"], r["n"], r["k"]) == (m, n, k)]
        print(f"{m}x{n}x{k}: " + ", ".join(
            f"{r['variant']}{'/' + r['layout'] if r['kind'] == 'gluon' and len(layouts) > 1 else ''} "
            + (f"{r['median_ms']:.4f} ms" if r.get("median_ms") else f"ERR {r.get('error', '')[:60]}") for r in shown),
            flush=True)
        write_csv(args.out, rows, COLUMNS, dict(prov, wall_s=round(time.time() - t_start)))
        a = b = bl = out = ref32 = torch_out = None  # free before the next shape
        torch.cuda.empty_cache()
    print(f"wrote {args.out} ({len(rows)} rows, {time.time() - t_start:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The GPU half of ``python -m tritonblas demo``: run, check and time our matmul against torch's.

For each (label, m, n, k), bf16: ``tritonblas.matmul`` and ``torch.matmul`` on the same random
inputs, both checked against an fp32 reference (IEEE, TF32 off) by the relative Frobenius error;
ours fails when it is above ``2 × torch's + 1e-3`` (RELIABILITY.md §4.2 parity, with a floor for
bf16 output rounding). Both are timed with ``triton.testing.do_bench(return_mode="median")``
(which flushes L2 between runs); the table shows measured TFLOP/s of both, their ratio, and the
model's predicted TFLOP/s for the config it picked. Returns 0, or 1 if any shape failed.
"""

from __future__ import annotations

import sys
from typing import Any, Sequence

__all__ = ["run"]


def _rel_frobenius(x, ref) -> float:
    import torch

    diff = torch.linalg.vector_norm((x.float() - ref).double())
    return float(diff / max(torch.linalg.vector_norm(ref.double()).item(), 1e-300))


def run(shapes: Sequence[tuple[str, int, int, int]], profile: Any = None) -> int:
    import torch
    import triton.testing

    import origami
    from tritonblas import dispatch, ops

    dev = torch.device("cuda", torch.cuda.current_device())
    info = dispatch.device_info(dev, profile)
    hw = info.profile
    rows, failed = [], 0
    gen = torch.Generator(device=dev).manual_seed(0)
    for label, m, n, k in shapes:
        a = torch.randn(m, k, device=dev, dtype=torch.bfloat16, generator=gen)
        b = torch.randn(k, n, device=dev, dtype=torch.bfloat16, generator=gen)
        try:
            ours = ops.matmul(a, b, profile=profile)
            theirs = torch.matmul(a, b)
            old = torch.backends.cuda.matmul.allow_tf32
            try:
                torch.backends.cuda.matmul.allow_tf32 = False
                ref = torch.matmul(a.float(), b.float())
            finally:
                torch.backends.cuda.matmul.allow_tf32 = old
            err, err_torch = _rel_frobenius(ours, ref), _rel_frobenius(theirs, ref)
            ok = err <= 2 * err_torch + 1e-3
            lp = dispatch.plan_for(a, b, profile=profile)
            problem = lp.problem
            est = origami.select(problem, hw)
            t_ours = triton.testing.do_bench(lambda: ops.matmul(a, b, profile=profile), return_mode="median")
            t_torch = triton.testing.do_bench(lambda: torch.matmul(a, b), return_mode="median")
            flops = 2.0 * m * n * k
            tf_ours, tf_torch = flops / t_ours / 1e9, flops / t_torch / 1e9
            rows.append((label, f"{m}x{n}x{k}", lp.config.short(), f"{tf_ours:.0f}", f"{tf_torch:.0f}",
                         f"{tf_ours / tf_torch:.2f}", f"{est.tflops(problem):.0f}",
                         f"{err:.1e} / {err_torch:.1e}", "ok" if ok else "FAIL"))
        except Exception as e:  # noqa: BLE001 - one bad shape is reported, the others still run
            ok = False
            rows.append((label, f"{m}x{n}x{k}", f"{type(e).__name__}: {e}"[:60], "-", "-", "-", "-", "-", "FAIL"))
        failed += not ok
        del a, b
        torch.cuda.empty_cache()
    title = (f"{torch.cuda.get_device_name(dev)} with profile {hw.name} ({info.how}): bf16 tritonblas.matmul "
             "vs torch.matmul (do_bench median)")
    cols = ("shape", "MxNxK", "config", "ours TFLOP/s", "torch TFLOP/s", "ours/torch", "pred. TFLOP/s",
            "rel. err ours / torch", "check")
    _print(title, cols, rows)
    print(f"{len(rows) - failed}/{len(rows)} shapes passed the accuracy check")
    return 1 if failed else 0


def _print(title: str, cols: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:  # pragma: no cover - rich is a declared dependency of the kernels extra
        print(title)
        print(" | ".join(cols))
        for r in rows:
            print(" | ".join(r))
        return
    t = Table(title=title)
    for c in cols:
        t.add_column(c, justify="left" if c in ("shape", "MxNxK", "config", "check") else "right")
    for r in rows:
        t.add_row(*r, style="red" if r[-1] == "FAIL" else None)
    Console(highlight=False, width=None if sys.stdout.isatty() else 160).print(t)

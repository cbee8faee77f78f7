"""How a model's forward GEMMs spread over size: the calls and FLOP (2·M·N·K) under each threshold, for
choosing ``TRITONBLAS_EAGER_MIN_GFLOP`` (tritonblas.fastpath.small_eager: eager GEMMs under it run torch's op).

    python benchmarks/gemm_census.py gpt2-medium llama3.2-1b [--mode train] [--edges 1 5 10 20 50 100]

CPU, no weights: the model of benchmarks/models.py is built on the meta device and its forward runs there,
with a TorchFunctionMode counting the calls the warm path serves (F.linear, addmm, matmul/@, bmm; the
attention's fused kernel is not a GEMM call). A training step's backward runs two GEMMs of the same FLOP per
forward one, so the shares hold for it too.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for _p in (ROOT, ROOT / "benchmarks"):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))


def gemm_flops(name: str, mode: str = "train", tiny: bool = False) -> list[tuple[str, int]]:
    """(op, 2·M·N·K) of each GEMM call of one forward of ``name`` in ``mode`` (meta device)."""
    import torch
    import torch.nn.functional as F
    from torch.overrides import TorchFunctionMode

    import models

    rows: list[tuple[str, int]] = []

    class Census(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            op = getattr(func, "__name__", "")
            if func is F.linear and args[1].dim() == 2:
                rows.append(("linear", 2 * args[0].numel() * args[1].shape[0]))
            elif op == "addmm" and len(args) >= 3:
                rows.append(("addmm", 2 * args[1].numel() * args[2].shape[1]))
            elif op in ("matmul", "__matmul__", "bmm") and len(args) >= 2 and args[0].dim() >= 2 and args[1].dim() >= 2:
                a, b = args[0], args[1]
                rows.append((op, 2 * max(a.numel() * b.shape[-1], b.numel() * a.shape[-2])))
            return func(*args, **kwargs)

    model, inputs, _ = models.build(name, torch.bfloat16, "meta", tiny=tiny)
    kw = inputs(mode)
    with Census(), torch.no_grad():
        models._forward(model, kw)
    return rows


def table(name: str, rows: list[tuple[str, int]], edges: list[float]) -> list[str]:
    total = sum(f for _, f in rows) / 1e9
    out = [f"{name}: {len(rows)} forward GEMM calls, {total:.1f} GFLOP"]
    for edge in edges:
        below = [f / 1e9 for _, f in rows if f / 1e9 < edge]
        out.append(f"  under {edge:>6g} GFLOP: {len(below):4d} calls ({100 * len(below) / max(len(rows), 1):3.0f}%), "
                   f"{sum(below):9.1f} GFLOP ({100 * sum(below) / total if total else 0:3.0f}%)")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="+", metavar="MODEL", help="benchmarks/models.py names")
    ap.add_argument("--mode", default="train", help="the inputs of this models.py mode (default train)")
    ap.add_argument("--edges", nargs="+", type=float, default=[1, 5, 10, 20, 50, 100], metavar="GFLOP")
    args = ap.parse_args(argv)
    for name in args.models:
        print("\n".join(table(name, gemm_flops(name, args.mode), sorted(args.edges))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

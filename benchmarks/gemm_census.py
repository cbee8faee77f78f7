"""How a model's GEMMs spread over size and which problems they are, from the model code itself (CPU).

    python benchmarks/gemm_census.py gpt2-medium llama3.2-1b [--mode train] [--edges 1 5 10 20 50 100]
    python benchmarks/gemm_census.py gpt2-medium bert-large llama3.2-1b --problems [--write FILE]

CPU, no weights: the model of benchmarks/models.py is built on the meta device and its step runs there.
The first form counts, with a TorchFunctionMode, the forward calls the warm path serves (F.linear, addmm,
matmul/@, bmm; the attention's fused kernel is not a GEMM call) and their FLOP (2·M·N·K) under each threshold,
for choosing ``TRITONBLAS_EAGER_MIN_GFLOP`` (tritonblas.fastpath.small_eager). A training step's backward runs
two GEMMs of the same FLOP per forward one, so the shares hold for it too.
``--problems`` lists, per model, the distinct GEMM problems (sizes, dtypes, layouts) the aten layer runs in one
step, forward and, for ``--mode train``, backward (:func:`gemm_problems`), with calls and FLOP shares;
``--write FILE`` writes them, all models together and none of the held-out split, as a shapes file
(origami.shapes) that sweep.py and compare.py read: benchmarks/shapes/train.yaml is this command's output.
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
        models.model_forward(model, kw)
    return rows


def gemm_problems(name: str, mode: str = "train", tiny: bool = False) -> list[tuple[str, str, object]]:
    """(phase, aten op, GemmProblem or None) of each GEMM the aten layer runs in one step of ``name`` in
    ``mode`` on the meta device: ``forward``, then for ``train`` the ``backward`` of models.py's loss (what cuBLAS
    runs under torch, and our autograd Function's GEMMs compute: dX = dY·W, dW = dYᵀ·X). Read below autograd
    (a TorchDispatchMode), so F.linear's ``x @ W.T`` shows its K-major weight (b_layout T) and the backward its
    transposed views. None: an operand neither row- nor column-major (torch copies it first). The problem is
    ``tritonblas.plan.problem_from_tensors``' with a fresh contiguous out; a meta tensor's address is 0, so the
    alignment is that of its strides."""
    import torch
    from torch.overrides import TorchFunctionMode
    from torch.utils._python_dispatch import TorchDispatchMode

    import models
    from tritonblas.plan import FROM_TORCH, operand_order, problem_from_tensors

    aten = torch.ops.aten
    ops = {aten.mm: (0, 1), aten.addmm: (1, 2), aten.bmm: (0, 1), aten.baddbmm: (1, 2)}
    rows: list[tuple[str, str, object]] = []
    phase = ["forward"]

    def problem(a, b):
        if a.dtype not in FROM_TORCH or 2 in (operand_order(a), operand_order(b)):
            return None
        return problem_from_tensors(a, b, torch.empty(*a.shape[:-1], b.shape[-1], dtype=a.dtype, device="meta"))

    class Census(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            where = ops.get(func.overloadpacket)
            if where is not None and not in_sdpa[0]:
                a, b = args[where[0]], args[where[1]]
                if not (phase[0] == "backward" and a.dim() == 3 and a.dtype == torch.float32):
                    rows.append((phase[0], func.overloadpacket.__name__, problem(a, b)))
            return func(*args, **(kwargs or {}))

    # the meta device has no fused attention: its scaled_dot_product_attention decomposes into fp32 bmm's that a
    # GPU never runs (there: one flash / cuDNN kernel, no GEMM call), so GEMMs under it are not counted; autograd
    # keeps no such flag for the backward, where the math attention's bmm's are told apart by their dtype (fp32
    # batched operands in a bf16 model: the math path's upcast)
    in_sdpa = [False]
    sdpa = torch.nn.functional.scaled_dot_product_attention

    class Attention(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            if func is not sdpa:
                return func(*args, **(kwargs or {}))
            in_sdpa[0] = True
            try:
                return func(*args, **(kwargs or {}))
            finally:
                in_sdpa[0] = False

    model, inputs, _ = models.build(name, torch.bfloat16, "meta", tiny=tiny)
    kw = inputs(mode)
    if mode == "train":
        model.train()
        with Census(), Attention():
            loss = models.model_loss(model, kw, models.model_forward(model, kw))
            phase[0] = "backward"
            loss.backward()
    else:
        with Census(), Attention(), torch.no_grad():
            models.model_forward(model, kw)
    return rows


def problem_table(rows: list[tuple[str, str, object]]) -> list[tuple[object, int, str, float]]:
    """(problem, calls, phases, share of the step's GEMM FLOP) per distinct problem, largest share first;
    the calls whose operands are neither row- nor column-major are left out (their count: the caller's)."""
    calls: dict = {}
    for ph, _, p in rows:
        if p is not None:
            n, phases = calls.get(p, (0, set()))
            calls[p] = (n + 1, phases | {ph})
    total = sum(p.flops * n for p, (n, _) in calls.items()) or 1
    out = [(p, n, "+".join(sorted(phases, reverse=True)), p.flops * n / total) for p, (n, phases) in calls.items()]
    return sorted(out, key=lambda r: (-r[3], r[0].m, r[0].n, r[0].k))


def shape_entry(p) -> dict:
    """A shapes-file entry (origami.shapes) of ``p``: the defaults (bf16, N, batch 1, 16 bytes) left out."""
    e = {"m": p.m, "n": p.n, "k": p.k}
    if p.batch != 1:
        e["batch"] = p.batch
    for key in ("a_dtype", "b_dtype", "c_dtype"):
        if getattr(p, key).value != "bf16":
            e[key] = getattr(p, key).value
    for key in ("a_layout", "b_layout"):
        if getattr(p, key).value != "N":
            e[key] = getattr(p, key).value
    if p.align_bytes != 16:
        e["align_bytes"] = p.align_bytes
    return e


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
    ap.add_argument("--problems", action="store_true", help="the distinct GEMM problems of one step, per model")
    ap.add_argument("--write", type=Path, default=None, metavar="FILE",
                    help="with --problems: write them (all models, held-out shapes left out) as a shapes file")
    args = ap.parse_args(argv)
    import models

    unknown = [m for m in args.models if m not in models.MODELS]
    if unknown:
        ap.error(f"MODEL: unknown {', '.join(unknown)} (benchmarks/models.py has {', '.join(models.MODELS)})")
    if args.write is not None and not args.problems:
        ap.error("--write needs --problems")
    if args.write is not None and not args.write.parent.is_dir():
        ap.error(f"--write {args.write}: no such directory {args.write.parent}")
    if not args.problems:
        for name in args.models:
            print("\n".join(table(name, gemm_flops(name, args.mode), sorted(args.edges))))
        return 0
    tables = {name: problem_table(gemm_problems(name, args.mode)) for name in args.models}
    for name, rows in tables.items():
        print(f"{name} ({args.mode}): {sum(n for _, n, _, _ in rows)} GEMM calls, {len(rows)} problems")
        for p, n, phases, share in rows:
            print(f"  {p.describe():44s} {n:4d} calls  {phases:18s} {100 * share:5.1f}% of the FLOP")
    if args.write is not None:
        write_problems(args.write, tables, args.mode)
        print(f"wrote {args.write}")
    return 0


def write_problems(path: Path, tables: dict, mode: str) -> None:
    """The problems of ``tables`` (model -> :func:`problem_table` rows) as one shapes file, each problem once
    (in the first model's order), none of the held-out split; written atomically (``tritonblas.tables.AtomicFile``)."""
    import yaml

    from tritonblas.heldout import heldout_dims
    from tritonblas.tables import AtomicFile

    held = {d[:3] for d in heldout_dims()}
    seen, entries = set(), []
    for rows in tables.values():
        for p, _, _, _ in rows:
            if p in seen or (p.m, p.n, p.k) in held:
                continue
            seen.add(p)
            entries.append(shape_entry(p))
    head = (f"# {path.stem}: written by benchmarks/gemm_census.py {' '.join(tables)} --mode {mode} --problems "
            f"--write {path.as_posix()}\n# ({len(entries)} problems: each GEMM of one {mode} step of those "
            f"benchmarks/models.py models, forward and backward, as the aten layer runs it; bf16 N unless stated)\n")
    with AtomicFile(path) as f:
        f.write(head + yaml.safe_dump(entries, default_flow_style=None, sort_keys=False))


if __name__ == "__main__":
    raise SystemExit(main())

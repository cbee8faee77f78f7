"""Ours or torch's, measured: a tile table that sends a problem to the vendor GEMM where that is faster.

    from tritonblas import dispatch, tables, versus
    with tritonblas.enable():
        model(x)                                          # the shapes the model runs get planned
    table, rows = versus.measure_table(dispatch.planned_problems())
    tables.write_table(table, "versus_h200.json")         # later: TRITONBLAS_TABLE=versus_h200.json
    tables.set_table(table)                               # or in this process

Why (measured on the H200, 2026-12-02, benchmarks/data/h200_vendor/torch.csv beside the sweeps, CUDA
graphs, warm L2): on 402 training shapes origami's pick ran at a geometric mean of 0.955x cuBLAS's
time (torch.matmul), and on the 81 held-out shapes at 0.843x; even the best of our exhaustively
timed space was 0.93-1.06x cuBLAS per shape set. A rule fitted on the training shapes to predict
from the problem (sizes, alignment, the pick's kind and predicted time) where we win did no better
on the held-out shapes than "always torch" (benchmarks/vendor_gap.py). So the decision is measured,
per problem, on the device, as a one-off offline step, like a tile table: every problem timed with
both backends the way the dispatcher runs it (``tritonblas.matmul``, the model's pick, and
``torch.matmul``), and the table gets a :data:`~tritonblas.tables.VENDOR` entry where our pick is not
at least ``margin`` faster than torch (ties go to torch: a drop-in must not make a model slower).
Problems where our pick wins get no entry: the model decides them, as it did when they were timed
(an entry would bypass the model's alignment staging).

What is measured: ``triton.testing.do_bench_cudagraph`` medians (the sweeps' timer), ``rounds``
rounds alternating the two sides, the faster round of each. Without a GPU (the interpreter) the
same calls are timed by ``time.perf_counter``: a check that the code runs; the decisions mean nothing.
fp8 problems (``torch._scaled_mm``, another contract) and problems whose alignment contiguous tensors
cannot reproduce are skipped (no entry). Any active tile table is set aside while measuring, and
restored after.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Iterable

import torch

from origami.hardware import HardwareProfile
from origami.problem import DType, GemmProblem
from tritonblas import tables

__all__ = ["Measured", "measure", "measure_table", "decide"]


@dataclass(frozen=True)
class Measured:
    """One problem's times (ms; None where it was skipped, with the reason in ``note``)."""

    problem: GemmProblem
    ours_ms: float | None
    torch_ms: float | None
    vendor: bool
    note: str = ""


def decide(ours_ms: float, torch_ms: float, margin: float) -> bool:
    """True (torch runs it) unless our pick is at least ``margin`` (a fraction) faster than torch."""
    if not 0 <= margin < 1:
        raise ValueError(f"margin: expected a fraction in [0, 1), got {margin!r}")
    return not ours_ms < torch_ms * (1 - margin)


def _timer(rep_ms: float) -> Callable[[Callable[[], object]], float]:
    if torch.cuda.is_available():
        import triton

        def gpu(fn):
            fn()
            torch.cuda.synchronize()
            return float(triton.testing.do_bench_cudagraph(fn, rep=rep_ms, return_mode="median"))
        return gpu

    def cpu(fn):
        fn()
        t0 = time.perf_counter()
        fn()
        return (time.perf_counter() - t0) * 1e3
    return cpu


def _skip(p: GemmProblem) -> str:
    if p.a_dtype.value.startswith("fp8") or p.b_dtype.value.startswith("fp8"):
        return "fp8: torch._scaled_mm, not measured here"
    if p.b_dtype != p.a_dtype or p.c_dtype != (DType.FP32 if p.a_dtype is DType.TF32 else p.a_dtype):
        return "mixed dtypes: torch.matmul has no such call"  # (tf32: fp32 tensors, TF32 allowed)
    aligned = GemmProblem.contiguous_align_bytes(p.m, p.n, p.k, p.a_dtype, p.b_dtype, p.c_dtype, p.a_layout,
                                                 p.b_layout, p.batch)
    if aligned != p.align_bytes:
        return f"align_bytes {p.align_bytes}: contiguous operands give {aligned}"
    return ""


def measure(problems: Iterable[GemmProblem], *, profile: "HardwareProfile | str | None" = None,
            device: "str | torch.device | None" = None, margin: float = 0.02, rep_ms: float = 3.0,
            rounds: int = 2, timer: Callable | None = None) -> list[Measured]:
    """Time each distinct problem with our pick (``tritonblas.matmul``) and ``torch.matmul`` on fresh
    random operands of its dtypes and layouts, and decide it (:func:`decide`). ``timer(fn) -> ms``
    replaces the default (tests)."""
    import tritonblas
    from tritonblas.plan import example_tensors

    decide(1.0, 1.0, margin)  # the argument check, before any work
    if rounds < 1:
        raise ValueError(f"rounds: expected at least 1, got {rounds!r}")
    dev = str(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    clock = timer or _timer(rep_ms)
    # torch's own matmul, also inside an enable() block (whose wrapper keeps it as __wrapped__)
    torch_matmul = getattr(torch.matmul, "__wrapped__", torch.matmul)
    out: list[Measured] = []
    saved = tables.explicit_table()
    tables.set_table(tables.TileTable.empty())  # no entry of any table (set_table's or $TRITONBLAS_TABLE's) applies
    try:
        for p in dict.fromkeys(problems):
            why = _skip(p)
            if why:
                out.append(Measured(p, None, None, False, why))
                continue
            a, b, c = example_tensors(p, dev)
            tf32 = p.a_dtype.value == "tf32"
            prev = torch.backends.cuda.matmul.allow_tf32
            torch.backends.cuda.matmul.allow_tf32 = tf32
            try:
                def ours():
                    return tritonblas.matmul(a, b, out=c, profile=profile)

                def vendor():
                    return torch_matmul(a, b, out=c)

                t_ours, t_torch = [], []
                for _ in range(rounds):
                    t_ours.append(clock(ours))
                    t_torch.append(clock(vendor))
            finally:
                torch.backends.cuda.matmul.allow_tf32 = prev
            o, t = min(t_ours), min(t_torch)
            out.append(Measured(p, o, t, decide(o, t, margin)))
    finally:
        tables.set_table(saved)
    return out


def measure_table(problems: Iterable[GemmProblem], *, profile: "HardwareProfile | str | None" = None,
                  device: "str | torch.device | None" = None, margin: float = 0.02, rep_ms: float = 3.0,
                  rounds: int = 2, timer: Callable | None = None) -> "tuple[tables.TileTable, list[Measured]]":
    """:func:`measure`, and the table of its :data:`~tritonblas.tables.VENDOR` entries for the profile
    (``profile``, else the device's)."""
    from tritonblas import dispatch

    rows = measure(problems, profile=profile, device=device, margin=margin, rep_ms=rep_ms, rounds=rounds,
                   timer=timer)
    dev = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    hw = dispatch.device_info(dev, profile).plan_profile  # the profile the dispatcher looks tables up for
    return tables.table_of({r.problem: tables.VENDOR for r in rows if r.vendor}, hw), rows

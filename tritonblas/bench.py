"""``python -m tritonblas bench``: time ``tritonblas.matmul`` (the model's pick) and torch on random
inputs with ``do_bench`` medians, and print TFLOP/s, the ratio, and the model's predicted time for
the config that ran.

Bad input or a missing GPU raise :class:`CalibrationError` (the CLI prints one line and exits 2)
before anything is timed.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from origami.hardware import HardwareProfile, ProfileError
from origami.problem import DType, GemmProblem, Layout
from tritonblas import _measure
from tritonblas._measure import CalibrationError
from tritonblas.console import table

__all__ = ["CalibrationError", "BENCH_DTYPES", "bench", "bench_command"]

BENCH_DTYPES = (DType.FP32, DType.TF32, DType.FP16, DType.BF16, DType.FP8_E4M3, DType.FP8_E4M3_FNUZ)
_FP8_BENCH = (DType.FP8_E4M3, DType.FP8_E4M3_FNUZ)  # through torch._scaled_mm (fnuz: ROCm gfx942's own)


def _operand(torch, rows: int, cols: int, batch: int, transposed: bool, dtype, device, gen):
    shape = (cols, rows) if transposed else (rows, cols)
    if batch != 1:
        shape = (batch, *shape)
    src_dtype = torch.float32 if dtype.itemsize == 1 else dtype  # randn makes no 1-byte (fp8) floats: cast
    t = torch.randn(shape, device=device, dtype=src_dtype, generator=gen).to(dtype)
    return t.transpose(-1, -2) if transposed else t


def _bench_one(torch, p: GemmProblem, hw: HardwareProfile, profile: Any, device, rep_ms: int) -> tuple:
    """(problem, config, ours ms, torch ms, predicted ns or None, relative difference vs torch) of one
    problem on random inputs: fp8 through a prepared plan against ``torch._scaled_mm``, the rest
    through ``tritonblas.matmul`` against ``torch.matmul``."""
    import origami
    from tritonblas import dispatch, ops
    from tritonblas import plan as _plan

    gen = torch.Generator(device=device).manual_seed(0)
    dtype = _plan.TORCH_DTYPES[p.a_dtype]
    a = _operand(torch, p.m, p.k, p.batch, p.a_layout is Layout.T, dtype, device, gen)
    b = _operand(torch, p.k, p.n, p.batch, p.b_layout is Layout.T, dtype, device, gen)
    if p.a_dtype in _FP8_BENCH:
        out = torch.empty(p.m, p.n, dtype=_plan.TORCH_DTYPES[p.c_dtype], device=device)
        problem = _plan.problem_from_tensors(a, b, out)
        cfg = origami.select(problem, hw).config
        prepared = _plan.prepare_launch(_plan.make_plan(cfg, problem, hw, tma=True), a, b, out)
        a_t, b_t = a.contiguous(), b.t().contiguous().t()  # _scaled_mm: row-major a, column-major b
        one = torch.ones((), dtype=torch.float32, device=device)
        ours = prepared.run

        def theirs():
            return torch._scaled_mm(a_t, b_t, scale_a=one, scale_b=one, out_dtype=out.dtype)
    else:
        lp = dispatch.plan_for(a, b, profile=profile)
        if lp is None:
            raise CalibrationError(f"bench: tritonblas would run {p.describe()} on torch "
                                   f"({dispatch.fallback_reason(a, b) or 'no kernel plan'})")
        problem, cfg = lp.problem, lp.config

        def ours():
            return ops.matmul(a, b, profile=profile)

        def theirs():
            return torch.matmul(a, b)
    est = origami.select(problem, hw)
    pred_ns = est.latency_ns if est.config == cfg else None
    y_ours, y_torch = ours(), theirs()
    ref = y_torch.float()
    rel = float(torch.linalg.vector_norm(y_ours.float() - ref) / max(float(torch.linalg.vector_norm(ref)), 1e-30))
    t_ours, t_torch = _measure.do_bench(ours, rep_ms), _measure.do_bench(theirs, rep_ms)
    return problem, cfg, t_ours, t_torch, pred_ns, rel


def bench(problems: Sequence[GemmProblem], *, profile: Any = None, rep_ms: int = 100,
          print_table: Callable | None = None) -> list[dict]:
    """Time our pick and torch on each problem; returns one dict per problem and prints a table."""
    torch = _measure.require_gpu("bench")
    for p in problems:
        if p.a_dtype not in BENCH_DTYPES or p.b_dtype != p.a_dtype:
            raise CalibrationError(f"bench: {p.describe()}: supported input dtypes are "
                                   f"{', '.join(d.value for d in BENCH_DTYPES)} (a and b alike)")
        if p.a_dtype in _FP8_BENCH:
            if p.batch != 1:
                raise CalibrationError(f"bench: {p.describe()}: fp8 runs unbatched only (torch._scaled_mm)")
            if p.c_dtype not in (DType.BF16, DType.FP16, DType.FP32):
                raise CalibrationError(f"bench: {p.describe()}: fp8 output must be bf16, fp16 or fp32")
        if p.m == 0 or p.n == 0 or p.k == 0:
            raise CalibrationError(f"bench: {p.describe()}: M, N and K must be > 0")
    from tritonblas import _device, dispatch

    index = torch.cuda.current_device()
    device = torch.device("cuda", index)
    try:
        info = dispatch.device_info(device, profile)
    except (ProfileError, _device.DeviceError) as e:
        raise CalibrationError(f"bench: {_measure.one_line(e)}") from None
    hw = info.profile
    results, rows = [], []
    for p in problems:
        with _measure.with_tf32(torch, p.a_dtype is DType.TF32), torch.cuda.device(index):
            try:
                problem, cfg, t_o, t_t, pred_ns, rel = _bench_one(torch, p, hw, profile, device, rep_ms)
            except CalibrationError:
                raise
            except Exception as e:  # noqa: BLE001 - report the shape and go on
                rows.append((p.describe(), f"{type(e).__name__}: {' '.join(str(e).split())}"[:80],
                             *["-"] * 8))
                results.append({"problem": p, "error": f"{type(e).__name__}: {e}"})
                continue
        flops = problem.flops
        tf_o, tf_t = flops / t_o / 1e9, flops / t_t / 1e9
        pred = f"{pred_ns / 1e6:.4f}" if pred_ns else "-"
        rows.append((problem.describe(), cfg.short(), f"{t_o:.4f}", f"{tf_o:.1f}", f"{t_t:.4f}", f"{tf_t:.1f}",
                     f"{tf_o / tf_t:.2f}", pred, f"{t_o * 1e6 / pred_ns:.2f}" if pred_ns else "-", f"{rel:.1e}"))
        results.append({"problem": problem, "config": cfg, "ours_ms": t_o, "torch_ms": t_t,
                        "predicted_ms": pred_ns / 1e6 if pred_ns else None, "rel_diff": rel})
    title = (f"{torch.cuda.get_device_name(index)}, profile {hw.name} ({info.how}): tritonblas.matmul (model "
             f"pick) vs torch, random inputs, do_bench median of {rep_ms} ms")
    cols = ("problem", "config", "ours ms", "ours TFLOP/s", "torch ms", "torch TFLOP/s", "ours/torch",
            "pred. ms", "meas./pred.", "rel. diff vs torch")
    (print_table or table)(title, cols, rows)
    return results


def bench_command(args, problems: Sequence[GemmProblem]) -> int:
    """The ``bench`` subcommand (argparse namespace from ``tritonblas.cli``): exit code 1 when a
    problem failed, CalibrationError on bad input."""
    if args.rep < 1:
        raise CalibrationError(f"--rep: expected >= 1 ms, got {args.rep}")
    results = bench(problems, profile=args.profile, rep_ms=args.rep)
    return 1 if any("error" in r for r in results) else 0

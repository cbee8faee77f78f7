"""The one GEMM comparator (RELIABILITY.md §4.2) and the operand builders of the kernel tests.

Reference: float64 from the same rounded inputs (the exact fp16/bf16/fp8 values, times their
scales). Elementwise bound, for fp32 accumulation over K terms plus the epilogue's roundings:

    |C − C_ref| ≤ c·γ_{K+4}(2⁻²⁴)·mag + [TF32: 2·2⁻¹¹·mag] + [GPU fp8 MMA: c·2⁻⁹·mag]
                  + u_out·|C_ref| + η_out

with ``mag = |alpha|·(|A|·|B|) + |beta|·|C| + |bias|`` computed in float64, γ_n = n·u/(1 − n·u),
u_out the output format's unit roundoff (fp32 2⁻²⁴, fp16 2⁻¹¹, bf16 2⁻⁸) and η_out half its smallest
subnormal. The "+4" covers the scale, alpha, beta·C and bias operations; relu is 1-Lipschitz, the
tanh-GELU ≤ 1.13 (the bound is scaled by 1.2 and its own fp32 evaluation error added). NaN must
appear exactly where the reference has NaN, ±Inf must match exactly, and nothing else may be
non-finite. `test_check.py` proves this function fails on every fault injection of §4.6.
"""

from __future__ import annotations

import math

import torch

__all__ = ["U_OUT", "reference", "assert_gemm_close", "operand", "gelu_tanh64"]

U_ACC = 2.0 ** -24
U_OUT = {torch.float32: 2.0 ** -24, torch.float16: 2.0 ** -11, torch.bfloat16: 2.0 ** -8,
         torch.float8_e4m3fn: 2.0 ** -4, torch.float8_e5m2: 2.0 ** -3}
ETA_OUT = {torch.float32: 2.0 ** -150, torch.float16: 2.0 ** -25, torch.bfloat16: 2.0 ** -134,
           torch.float8_e4m3fn: 2.0 ** -10, torch.float8_e5m2: 2.0 ** -17}
FP8 = (torch.float8_e4m3fn, torch.float8_e5m2)


def gelu_tanh64(x: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.gelu(x, approximate="tanh")


def _per(s: torch.Tensor | None, n: int, axis: int) -> torch.Tensor | float:
    if s is None:
        return 1.0
    s = s.double().reshape(-1)
    if s.numel() == 1:
        return s.reshape(())
    return s.reshape(n, 1) if axis == 0 else s.reshape(1, n)


def reference(a, b, *, c=None, alpha=1.0, beta=0.0, bias=None, activation=None, scale_a=None, scale_b=None):
    """(ref, mag, pre): float64 result, the magnitude that bounds its rounding error, and the
    pre-activation value. a/b may be 2-D or batched 3-D (broadcast like torch.matmul)."""
    A = a.double() * _per(scale_a, a.shape[-2], 0)
    B = b.double() * _per(scale_b, b.shape[-1], 1)
    pre = alpha * torch.matmul(A, B)
    mag = abs(alpha) * torch.matmul(A.abs(), B.abs())
    if c is not None and beta != 0:
        pre = pre + beta * c.double()
        mag = mag + abs(beta) * c.double().abs()
    if bias is not None:
        pre = pre + bias.double().reshape(-1)
        mag = mag + bias.double().abs().reshape(-1)
    if activation == "relu":
        ref = torch.relu(pre)
    elif activation in ("gelu", "gelu_tanh"):
        ref = gelu_tanh64(pre)
    else:
        ref = pre
    return ref, mag, pre


def assert_gemm_close(out: torch.Tensor, ref: torch.Tensor, mag: torch.Tensor, k: int, *, tf32: bool = False,
                      fp8_mma: bool = False, activation: str | None = None, c: float = 4.0, what: str = "") -> None:
    """Raise AssertionError (with the worst element) unless ``out`` meets the §4.2 bound against ``ref``."""
    if tuple(out.shape) != tuple(ref.shape):
        raise AssertionError(f"{what}: shape {tuple(out.shape)} != reference {tuple(ref.shape)}")
    o = out.detach().to("cpu", torch.float64)
    ref = ref.to("cpu", torch.float64)
    mag = mag.to("cpu", torch.float64)
    n = k + 4
    gamma = n * U_ACC / (1 - n * U_ACC)
    bound = c * gamma * mag
    if tf32:
        bound = bound + 2 * 2.0 ** -11 * mag
    if fp8_mma:
        bound = bound + c * 2.0 ** -9 * mag
    if activation in ("gelu", "gelu_tanh"):
        bound = 1.2 * bound + 16 * U_ACC * mag
    bound = bound + U_OUT[out.dtype] * ref.abs() + ETA_OUT[out.dtype]

    ref_nan, out_nan = torch.isnan(ref), torch.isnan(o)
    if not torch.equal(ref_nan, out_nan):
        idx = (ref_nan != out_nan).nonzero()[0].tolist()
        raise AssertionError(f"{what}: NaN mismatch at {idx}: out {o[tuple(idx)].item()}, ref {ref[tuple(idx)].item()} "
                             f"({int((ref_nan != out_nan).sum())} elements)")
    ref_inf, out_inf = torch.isinf(ref), torch.isinf(o)
    if not torch.equal(ref_inf, out_inf) or not torch.equal(o[ref_inf], ref[ref_inf]):
        idx = ((ref_inf != out_inf) | (ref_inf & (o != ref))).nonzero()[0].tolist()
        raise AssertionError(f"{what}: Inf mismatch at {idx}: out {o[tuple(idx)].item()}, ref {ref[tuple(idx)].item()}")
    finite = torch.isfinite(ref)
    err = torch.where(finite, (o - ref).abs(), torch.zeros_like(o))
    excess = torch.where(finite, err - bound, torch.full_like(o, -math.inf))
    bad = excess > 0
    if bad.any():
        worst = torch.argmax(torch.where(bad, err / bound, torch.zeros_like(o)))
        idx = list(torch.unravel_index(worst, o.shape))
        idx = tuple(int(i) for i in idx)
        rel_f = (torch.linalg.vector_norm(torch.where(finite, o - ref, 0.0))
                 / max(torch.linalg.vector_norm(torch.where(finite, ref, 0.0)).item(), 1e-300)).item()
        raise AssertionError(
            f"{what}: {int(bad.sum())}/{o.numel()} elements exceed the bound; worst at {idx}: out {o[idx].item():.9g}, "
            f"ref {ref[idx].item():.9g}, |err| {err[idx].item():.3g} > bound {bound[idx].item():.3g}; "
            f"relative Frobenius error {rel_f:.3g}")


def operand(rows: int, cols: int, dtype: torch.dtype, transposed: bool = False, device: str = "cpu", *,
            batch: int | None = None, scale: float = 1.0, generator: torch.Generator | None = None) -> torch.Tensor:
    """Random (rows × cols) operand (batched if ``batch``), stored transposed if ``transposed``."""
    lead = (batch,) if batch is not None else ()
    shape = (*lead, cols, rows) if transposed else (*lead, rows, cols)
    if generator is None:
        t = (torch.randn(shape, device=device) * scale).to(dtype)
    else:
        t = (torch.randn(shape, generator=generator) * scale).to(dtype).to(device)
    return t.transpose(-1, -2) if transposed else t


# --- running a config through the library's own launch path ----------------------------------
def config(kind: str, bm: int = 32, bn: int = 32, bk: int = 32, *, grid: int = 0, split_k: int = 1, group_m: int = 2,
           num_warps: int = 4, num_stages: int = 2, amd: bool = False, num_chiplets: int = 1, chunk: int = 1):
    """A TileConfig with test defaults; ``amd`` adds the AMD-only knobs."""
    from origami import TileConfig

    extras = dict(waves_per_eu=0, matrix_instr_nonkdim=16, kpack=1) if amd else {}
    return TileConfig(kind=kind, block_m=bm, block_n=bn, block_k=bk, num_warps=num_warps, num_stages=num_stages,
                      group_m=group_m, grid=grid, split_k=split_k, num_chiplets=num_chiplets, chunk=chunk, **extras)


def run_gemm(cfg, a, b, hw, *, out=None, out_dtype=None, tma=False, **launch_kwargs):
    """NaN-prefilled out (unless given), make_plan + launch; returns (out, plan)."""
    from tritonblas.plan import launch, make_plan, problem_from_tensors

    if out is None:
        dtype = out_dtype or (a.dtype if a.dtype not in FP8 else torch.float32)
        batch = max(a.shape[0] if a.dim() == 3 else 1, b.shape[0] if b.dim() == 3 else 1)
        shape = (batch, a.shape[-2], b.shape[-1]) if max(a.dim(), b.dim()) == 3 else (a.shape[-2], b.shape[-1])
        out = torch.full(shape, float("nan"), dtype=dtype, device=a.device)
    plan = make_plan(cfg, problem_from_tensors(a, b, out), hw, tma=tma)
    launch(plan, a, b, out, **launch_kwargs)
    return out, plan


def check_gemm(out, a, b, *, what="", tf32=False, fp8_mma=False, **epilogue):
    """Reference from the same inputs + the §4.2 bound."""
    ref, mag, _ = reference(a, b, **epilogue)
    assert_gemm_close(out, ref, mag, a.shape[-1], tf32=tf32, fp8_mma=fp8_mma,
                      activation=epilogue.get("activation"), what=what)


def outcome(fn, *args):
    """("ok", result) or ("error", (type, message)) of ``fn(*args)``: what a drop-in test compares between torch
    alone and ``enable()`` (torch's error, whatever its type, is what ours must equal)."""
    try:
        return "ok", fn(*args)
    except Exception as e:  # noqa: BLE001 (the error itself is what is compared)
        return "error", (type(e), str(e))

"""A user's own Triton matmul, autotuned over its own configs, with origami choosing which to try.

    TRITON_INTERPRET=1 TRITONBLAS_PROFILE=h200 python examples/autotune_pruner.py   # CPU, interpreter
    python examples/autotune_pruner.py                                                # on a GPU

The kernel is Triton's tutorial 03 matmul. ``tritonblas.autotune.pruner`` ranks the six configs by
origami's prediction for the actual (M, N, K, dtypes) and keeps the best ``top_k``; Triton then
benchmarks only those. The printout shows the model's ranking and what autotune ran.
"""

from __future__ import annotations

import os

import torch
import triton
import triton.language as tl

from tritonblas.autotune import problem_of, pruner, rank_configs, run_once

INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"
PROFILE = os.environ.get("TRITONBLAS_PROFILE") or None

CONFIGS = [
    triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8}, num_warps=w, num_stages=s)
    for bm, bn, bk, w, s in [(128, 256, 64, 8, 3), (64, 256, 32, 4, 4), (128, 128, 32, 4, 4),
                             (128, 64, 32, 4, 4), (64, 128, 32, 4, 4), (32, 64, 32, 4, 5)]
]


@triton.autotune(configs=CONFIGS, key=["M", "N", "K"],
                 prune_configs_by={"early_config_prune": pruner(top_k=1 if INTERPRET else 2)},
                 do_bench=run_once if INTERPRET else None)  # the interpreter has no GPU timer
@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    group = GROUP_M * num_pid_n
    first_m = (pid // group) * GROUP_M
    size_m = min(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + ((pid % group) % size_m)
    pid_n = (pid % group) // size_m
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, tl.cdiv(K, BLOCK_K)):
        kk = k0 * BLOCK_K + rk
        a = tl.load(a_ptr + rm[:, None] * stride_am + kk[None, :] * stride_ak,
                    mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + kk[:, None] * stride_bk + rn[None, :] * stride_bn,
                    mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    c = acc.to(c_ptr.dtype.element_ty)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn, c, mask=(rm[:, None] < M) & (rn[None, :] < N))


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    (M, K), (_, N) = a.shape, b.shape
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)  # noqa: E731
    matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                        c.stride(0), c.stride(1))
    return c


def main() -> None:
    device = "cpu" if INTERPRET else "cuda"
    dtype = torch.float32 if INTERPRET else torch.bfloat16  # the interpreter's bf16 dot is wrong
    shape = (96, 80, 64) if INTERPRET else (4096, 4096, 4096)
    if INTERPRET and PROFILE is None:
        raise SystemExit("TRITON_INTERPRET=1 runs on CPU: set TRITONBLAS_PROFILE (e.g. h200) to pick a profile")
    m, n, k = shape
    a = torch.randn(m, k, device=device, dtype=dtype)
    b = torch.randn(k, n, device=device, dtype=dtype)
    problem = problem_of({"M": m, "N": n, "K": k, "a_ptr": a, "b_ptr": b, "c_ptr": a})
    from tritonblas._device import profile_for_device

    hw = profile_for_device(a.device, profile=PROFILE).profile
    print(f"{problem.describe()} on {hw.name}: the model's order of the kernel's configs")
    for cfg, est in rank_configs(CONFIGS, problem, hw):
        what = f"{est.latency_ns / 1e3:9.1f} us ({est.bound})" if not isinstance(est, str) else f"rejected: {est}"
        print(f"  {cfg}  {what}")
    c = matmul(a, b)
    torch.testing.assert_close(c, a @ b, rtol=1e-2, atol=1e-2)
    print(f"autotune ran {matmul_kernel.best_config}; result matches torch")


if __name__ == "__main__":
    main()

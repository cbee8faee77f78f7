"""Probe kernels of ``tritonblas calibrate`` (``tritonblas.calibrate``): not GEMMs, so not in this
package's ``__all__``.

- :func:`l2_read_kernel` reads blocks of a buffer over and over through L2 only (``.cg``, so L1
  does not serve them): the L2 bandwidth curve and its capacity knee.
- :func:`empty_kernel` does one store: the per-launch overhead, on the GPU (CUDA-graph replay) and
  on the host.
"""

import triton
import triton.language as tl

__all__ = ["l2_read_kernel", "empty_kernel"]


@triton.jit
def l2_read_kernel(x_ptr, out_ptr, n_blocks, iters, BLOCK: tl.constexpr):
    """Read ``iters`` blocks of BLOCK fp32 per program, block (pid + i·programs) mod n_blocks,
    through L2 only (``.cg``); one store per program keeps the loads alive."""
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for i in range(iters):
        blk = (pid + i * nprog) % n_blocks
        acc += tl.load(x_ptr + blk * BLOCK + offs, cache_modifier=".cg")
    tl.store(out_ptr + pid * BLOCK + offs, acc)


@triton.jit
def empty_kernel(x_ptr):
    tl.store(x_ptr + tl.program_id(0), 1.0)

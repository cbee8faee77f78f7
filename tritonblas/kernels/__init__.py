"""Triton GEMM kernels. Importing this package decorates the kernels, so ``TRITON_INTERPRET`` must
already be set when running on CPU (``tests/conftest.py`` does that)."""

from tritonblas.kernels.gemm import gemm_kernel, gemm_persistent_kernel, gemm_tma_flat_kernel, gemm_tma_kernel
from tritonblas.kernels.splitk import gemm_splitk_kernel, gemm_splitk_tma_kernel
from tritonblas.kernels.streamk import gemm_streamk_kernel, gemm_streamk_tma_kernel
from tritonblas.kernels.transpose import transpose_copy_kernel

__all__ = ["gemm_kernel", "gemm_persistent_kernel", "gemm_tma_kernel", "gemm_streamk_kernel", "gemm_splitk_kernel",
           "gemm_streamk_tma_kernel", "gemm_splitk_tma_kernel", "gemm_tma_flat_kernel", "transpose_copy_kernel"]

"""Test configuration shared by every test directory.

Without a CUDA GPU, kernels run through Triton's interpreter on CPU tensors. TRITON_INTERPRET is
read when a kernel is decorated, so it must be set before any tritonblas kernel module is imported.
"""

import os

import pytest

try:
    import torch

    HAS_CUDA = torch.cuda.is_available()
except ImportError:  # origami-only environments
    torch = None
    HAS_CUDA = False

if not HAS_CUDA:
    os.environ.setdefault("TRITON_INTERPRET", "1")
os.environ.setdefault("NUMBA_CACHE_DIR", os.path.join(os.path.dirname(__file__), "..", ".numba_cache"))


def pytest_collection_modifyitems(config, items):
    if HAS_CUDA:
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (run with `-m gpu` on the H200)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def device() -> str:
    """Where kernel tests put tensors: the GPU if present, else CPU under the interpreter."""
    return "cuda" if HAS_CUDA else "cpu"

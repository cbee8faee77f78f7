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
# the tests run tiny GEMMs through our kernels under autograd; by default the drop-in sends small aligned ones to
# torch (TRITONBLAS_GRAD_MIN_GFLOP, tritonblas.fastpath.small_grad), so it is off here: tests/dropin/test_small_grad.py
# checks the default and the threshold themselves
os.environ.setdefault("TRITONBLAS_GRAD_MIN_GFLOP", "0")
# likewise on an NVIDIA GPU the drop-in sends aligned bf16/fp16 GEMMs (decode-sized too) to torch by default
# (TRITONBLAS_VENDOR_ALIGNED, tritonblas.handover.vendor_aligned), so the GPU suite would test cuBLAS there: off
# here; tests/dropin/test_vendor_aligned.py checks the default and the switch themselves
os.environ.setdefault("TRITONBLAS_VENDOR_ALIGNED", "0")
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


# --- the profiles plans and kernels are made for -----------------------------------------------
@pytest.fixture(scope="session")
def h200():
    import origami

    return origami.load_profile("h200")


@pytest.fixture(scope="session")
def mi300x(tmp_path_factory):
    """The shipped MI300X profile, or (while it is not there) one derived from h200.yaml."""
    import origami

    if "mi300x" in origami.list_profiles():
        return origami.load_profile("mi300x")
    from importlib import resources

    text = resources.files("hwprofiles").joinpath("h200.yaml").read_text()
    for old, new in (("name: h200", "name: amdtest"), ("vendor: nvidia", "vendor: amd"),
                     ("arch: sm_90", "arch: gfx942"), ("compute_units: 132", "compute_units: 304"),
                     ("chiplets: 1", "chiplets: 8"),
                     ("dispatch: linear", "dispatch: round_robin"), ("warp_size: 32", "warp_size: 64")):
        text = text.replace(old, new)
    path = tmp_path_factory.mktemp("profiles") / "amdtest.yaml"
    path.write_text(text)
    return origami.load_profile(str(path))

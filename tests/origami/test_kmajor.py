"""origami.kmajor: which tf32/fp8 operands the launch stages K-major, and where the wide MMA reads an
operand through registers instead (torch-free; the launcher's use is tests/kernels/test_operand_staging.py)."""

from __future__ import annotations

import pytest

import origami
from origami import GemmProblem
from origami.kmajor import STAGING_MIN_DIM, kmajor_copy_ok, kmajor_staging, mma_reads_through_registers, tma_problem


def _p(m=128, n=4096, k=4096, dtype="tf32", layouts="NN", **kw):
    out = "fp32" if dtype in ("tf32", "fp32") else "bf16"
    return GemmProblem(m, n, k, a_dtype=dtype, b_dtype=dtype, c_dtype=out, a_layout=layouts[0], b_layout=layouts[1],
                       **kw)


@pytest.mark.parametrize("problem, want", [
    (_p(), True),                                       # N-major B, M under the staging threshold
    (_p(m=STAGING_MIN_DIM), False),                     # staged K-major: the wide MMA reads shared memory
    (_p(m=STAGING_MIN_DIM, align_bytes=4), True),       # no TMA, so no staging
    (_p(m=STAGING_MIN_DIM, k=1), True),                 # a K-major copy would not be TMA-legal
    (_p(layouts="NT"), False),                          # B already K-major, A K-major
    (_p(layouts="TT", n=128), True),                    # M-major A, N under the threshold
    (_p(layouts="TT", n=STAGING_MIN_DIM), False),
    (_p(dtype="fp8_e4m3"), True),
    (_p(dtype="fp8_e5m2", layouts="NT"), False),
    (_p(dtype="bf16"), False),                          # 16-bit wgmma reads either major
    (_p(dtype="fp32"), False),                          # IEEE fp32 does not use wgmma
])
def test_mma_reads_through_registers_on_h200(h200, problem, want):
    assert mma_reads_through_registers(problem, h200) is want


def test_only_hopper_profiles_read_through_registers():
    for name in origami.list_profiles():
        hw = origami.load_profile(name)
        want = not hw.is_amd and hw.arch == "sm_90"
        assert mma_reads_through_registers(_p(), hw) is want, name


def test_staging_rule_thresholds(h200):
    assert kmajor_staging(_p(m=STAGING_MIN_DIM), h200) == (False, True)
    assert kmajor_staging(_p(m=STAGING_MIN_DIM - 1), h200) == (False, False)
    assert kmajor_staging(_p(m=1024, n=512, layouts="TN"), h200) == (True, True)
    assert kmajor_copy_ok(8, origami.DType.TF32) and not kmajor_copy_ok(2, origami.DType.TF32)
    assert kmajor_copy_ok(16, origami.DType.FP8_E4M3) and not kmajor_copy_ok(8, origami.DType.FP8_E4M3)
    assert tma_problem(_p(), h200) and not tma_problem(_p(align_bytes=8), h200) and not tma_problem(_p(k=0), h200)

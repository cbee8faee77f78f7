"""benchmarks/sweep.py's result check: a timed config whose output is wrong (or was never written,
so still NaN) must be recorded as an error, never as a time (CPU)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import sweep  # noqa: E402
from benchmarks.sweep import _REL_TOL, check_result  # noqa: E402
from origami import GemmProblem  # noqa: E402


@pytest.mark.parametrize("dtype", ["bf16", "fp16", "tf32", "fp8_e4m3"])
def test_check_result_accepts_the_product_rounded_to_the_output(dtype):
    p = GemmProblem(64, 48, 96, a_dtype=dtype, b_dtype=dtype, c_dtype="fp32" if dtype == "tf32" else "bf16")
    a, b = torch.randn(64, 96), torch.randn(96, 48)
    ref = a @ b
    out = ref.to(torch.bfloat16 if dtype != "tf32" else torch.float32)
    check_result(out, ref, p)


def test_check_result_rejects_unwritten_partial_and_wrong_outputs():
    p = GemmProblem(64, 48, 96)
    ref = torch.randn(64, 96) @ torch.randn(96, 48)
    nan = torch.full((64, 48), float("nan"))
    half = ref.clone()
    half[32:] = float("nan")  # a kernel that wrote only some tiles
    off = ref * (1 + 3 * _REL_TOL["bf16"])  # every element wrong by three tolerances
    for bad in (nan, half, off, torch.zeros_like(ref)):
        with pytest.raises(RuntimeError, match="wrong result"):
            check_result(bad.to(torch.bfloat16), ref, p)


def test_same_bits_compares_fp8_and_fp32_bit_for_bit():
    import torch

    x = torch.randn(5, 7)
    for t in (x, x.to(torch.float8_e4m3fn), x.T):
        assert sweep.same_bits(t, t.clone())
        y = t.contiguous().clone()
        y.view(torch.uint8).view(-1)[3] ^= 1  # one flipped bit
        assert not sweep.same_bits(t, y)


def test_check_counters_rejects_and_rearms_counters_left_non_zero():
    import torch

    from tritonblas import plan as planmod

    planmod.clear_workspaces()
    _, counters = planmod._workspace(torch.device("cpu"), 1, 4)
    sweep.check_counters("cpu")  # fresh: zero
    counters[3] = 2
    with pytest.raises(RuntimeError, match="1 Stream-K/split-K counters left non-zero"):
        sweep.check_counters("cpu")
    assert int(torch.count_nonzero(counters)) == 0
    sweep.check_counters("cpu")
    planmod.clear_workspaces()

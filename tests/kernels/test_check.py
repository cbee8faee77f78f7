"""Test the tester (RELIABILITY.md §4.6): the comparator accepts a correctly rounded result and
rejects every injected fault — scale ×1.05, one sign flipped, one tile zeroed, the output
transposed, shifted by one row, and A and B swapped."""

from __future__ import annotations

import pytest
import torch

from _check import assert_gemm_close, operand, reference

N, K = 48, 40
FAULTS = {
    "scale x1.05": lambda out, a, b: out * 1.05,
    "flip one sign": None,  # needs the reference, see below
    "zero one tile": lambda out, a, b: _zero_tile(out),
    "transpose": lambda out, a, b: out.t().contiguous(),
    "shift one row": lambda out, a, b: torch.roll(out, 1, 0),
    "swap A and B": lambda out, a, b: (b.double() @ a.double()).to(out.dtype),
}


def _zero_tile(out):
    out = out.clone()
    out[16:32, 16:32] = 0
    return out


@pytest.mark.parametrize("in_dtype, out_dtype", [(torch.float32, torch.float32), (torch.float16, torch.float16),
                                                 (torch.bfloat16, torch.bfloat16), (torch.float16, torch.float32)])
def test_comparator_fails_on_every_fault(in_dtype, out_dtype):
    g = torch.Generator().manual_seed(7)
    a = operand(N, K, in_dtype, generator=g)
    b = operand(K, N, in_dtype, generator=g)
    ref, mag, _ = reference(a, b)
    good = ref.to(out_dtype)
    assert_gemm_close(good, ref, mag, K, what="correct result")
    for name, fault in FAULTS.items():
        if name == "flip one sign":
            bad = good.clone()
            i = torch.argmax(ref.abs())
            bad.view(-1)[i] = -bad.view(-1)[i]
        else:
            bad = fault(good, a, b)
        with pytest.raises(AssertionError):
            assert_gemm_close(bad, ref, mag, K, what=name)


def test_comparator_special_values():
    a = operand(8, 16, torch.float32)
    b = operand(16, 8, torch.float32)
    a[2, 3] = float("nan")
    b[5, 6] = float("inf")
    ref, mag, _ = reference(a, b)
    assert_gemm_close(ref.float(), ref, mag, 16)
    hidden = ref.float().clone()
    hidden[2, 0] = 0.0  # NaN row lost
    with pytest.raises(AssertionError, match="NaN"):
        assert_gemm_close(hidden, ref, mag, 16)
    spurious = ref.float().clone()
    spurious[0, 0] = float("nan")
    with pytest.raises(AssertionError, match="NaN"):
        assert_gemm_close(spurious, ref, mag, 16)


def test_comparator_bound_scales_with_k_and_tf32():
    """A relative error of 2^-12 passes at K=4096 with TF32 allowed (bound > 2^-10), fails for IEEE
    fp32 at K=8 (bound ~ 2^-18)."""
    ref = torch.ones(4, 4, dtype=torch.float64)
    mag = ref.clone()
    off = (ref * (1 + 2.0 ** -12)).float()
    assert_gemm_close(off, ref, mag, 4096, tf32=True)
    with pytest.raises(AssertionError):
        assert_gemm_close(off, ref, mag, 8)

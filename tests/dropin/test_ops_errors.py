"""Inputs torch rejects raise torch's exception type (RuntimeError) with a message naming the shapes,
dtypes or devices (RELIABILITY.md §6 item 24, §7), and nothing is launched."""

from __future__ import annotations

import pytest
import torch

import tritonblas
from tritonblas import dispatch


@pytest.fixture(autouse=True)
def _nothing_launched(cpu_profile):
    yield
    assert dispatch.stats()["launches"] == 0


def _both_raise(ours, theirs, *needles):
    with pytest.raises(Exception) as t:
        theirs()
    with pytest.raises(type(t.value)) as o:
        ours()
    assert isinstance(o.value, RuntimeError)
    for n in needles:
        assert n in str(o.value), f"{n!r} not in {str(o.value)!r}"
    return str(o.value)


def test_mismatched_inner_dims(device):
    a, b = torch.randn(3, 4, device=device), torch.randn(5, 6, device=device)
    _both_raise(lambda: tritonblas.matmul(a, b), lambda: torch.matmul(a, b), "(3, 4)", "(5, 6)")
    _both_raise(lambda: tritonblas.addmm(torch.zeros(3, 6, device=device), a, b),
                lambda: torch.addmm(torch.zeros(3, 6, device=device), a, b), "(3, 4)", "(5, 6)")
    v, w = torch.randn(3, device=device), torch.randn(4, device=device)
    _both_raise(lambda: tritonblas.matmul(v, w), lambda: torch.matmul(v, w), "(3,)", "(4,)")
    _both_raise(lambda: tritonblas.linear(a, torch.randn(2, 5, device=device)),
                lambda: torch.nn.functional.linear(a, torch.randn(2, 5, device=device)), "(3, 4)", "(2, 5)")


def test_mixed_dtypes(device):
    a, b = torch.randn(3, 4, device=device).half(), torch.randn(4, 5, device=device)
    _both_raise(lambda: tritonblas.matmul(a, b), lambda: torch.matmul(a, b), "torch.float16", "torch.float32")
    _both_raise(lambda: tritonblas.matmul(a, b.bfloat16()), lambda: torch.matmul(a, b.bfloat16()),
                "torch.float16", "torch.bfloat16")
    c = torch.randn(3, 5, device=device)
    _both_raise(lambda: tritonblas.addmm(c, a, b.half()), lambda: torch.addmm(c, a, b.half()),
                "torch.float32", "torch.float16")


def test_zero_dim_operands(device):
    s, v = torch.tensor(2.0, device=device), torch.randn(3, device=device)
    _both_raise(lambda: tritonblas.matmul(s, v), lambda: torch.matmul(s, v), "0-D", "1-D")
    _both_raise(lambda: tritonblas.matmul(v, s), lambda: torch.matmul(v, s), "0-D")


def test_batch_dims_that_do_not_broadcast(device):
    a, b = torch.randn(2, 3, 4, device=device), torch.randn(5, 4, 2, device=device)
    _both_raise(lambda: tritonblas.matmul(a, b), lambda: torch.matmul(a, b), "(2,)", "(5,)")


def test_bmm_checks(device):
    a = torch.randn(2, 3, 4, device=device)
    _both_raise(lambda: tritonblas.bmm(a, torch.randn(4, 5, device=device)),
                lambda: torch.bmm(a, torch.randn(4, 5, device=device)), "3-D", "(4, 5)")
    _both_raise(lambda: tritonblas.bmm(a, torch.randn(3, 4, 5, device=device)),
                lambda: torch.bmm(a, torch.randn(3, 4, 5, device=device)), "(2, 3, 4)", "(3, 4, 5)")


def test_addmm_checks(device):
    a, b = torch.randn(3, 4, device=device), torch.randn(4, 5, device=device)
    _both_raise(lambda: tritonblas.addmm(torch.randn(4, 5, device=device), a, b),
                lambda: torch.addmm(torch.randn(4, 5, device=device), a, b), "(4, 5)", "(3, 5)")
    _both_raise(lambda: tritonblas.addmm(torch.randn(5, device=device), a[0], b),
                lambda: torch.addmm(torch.randn(5, device=device), a[0], b), "matrix", "(4,)")


def test_linear_checks(device):
    x = torch.randn(3, 4, device=device)
    w3 = torch.randn(2, 3, 4, device=device)
    _both_raise(lambda: tritonblas.linear(x, w3), lambda: torch.nn.functional.linear(x, w3), "weight", "(2, 3, 4)")
    _both_raise(lambda: tritonblas.linear(x, torch.randn(5, 4, device=device), torch.randn(4, device=device)),
                lambda: torch.nn.functional.linear(x, torch.randn(5, 4, device=device), torch.randn(4, device=device)),
                "(4,)")


@pytest.mark.gpu
def test_cpu_and_cuda_mixed():
    a, b = torch.randn(3, 4), torch.randn(4, 5, device="cuda")
    _both_raise(lambda: tritonblas.matmul(a, b), lambda: torch.matmul(a, b), "cpu", "cuda:0")


def test_not_tensors(device):
    with pytest.raises(TypeError):
        tritonblas.matmul([[1.0]], torch.randn(1, 1, device=device))
    with pytest.raises(TypeError):
        tritonblas.matmul(torch.randn(2, 2, device=device), torch.randn(2, 2, device=device), profile=3)


def test_errors_launch_nothing(device):
    """The autouse fixture asserts no launch after every test in this file; this one is explicit."""
    with pytest.raises(RuntimeError):
        tritonblas.matmul(torch.randn(3, 4, device=device), torch.randn(5, 6, device=device))
    assert dispatch.stats() == {"launches": 0, "plans": 0, "empty": 0, "fallbacks": 0, "routed": 0, "table_hits": 0, "intercepted": 0, "fast_hits": 0, "ws": 0, "triton_launches": 0, "vendor": 0}


_BAD_SCALARS = {"str": "2", "none": None, "list": [2.0], "1d_tensor": [2.0],  # 1d_tensor: torch.tensor([2.0])
                "0d_requires_grad": 2.0}  # torch.tensor(2.0, requires_grad=True): torch's parser refuses it


@pytest.mark.parametrize("op", ["addmm", "baddbmm", "addbmm", "addmv"])
@pytest.mark.parametrize("bad", list(_BAD_SCALARS))
@pytest.mark.parametrize("arg", ["alpha", "beta"])
def test_alpha_beta_that_are_not_numbers(device, op, bad, arg):
    """torch takes a real Number (or a 0-D tensor) for alpha/beta and raises TypeError otherwise. Before,
    float() made beta="2" or a 1-element 1-D tensor a result (through enable() too: torch's error lost),
    and None an error naming neither the op nor the argument."""
    value = torch.tensor(_BAD_SCALARS[bad], device=device) if bad == "1d_tensor" else _BAD_SCALARS[bad]
    if bad == "0d_requires_grad":  # before: taken as 2.0 (a result, its gradient w.r.t. alpha silently lost)
        value = torch.tensor(2.0, device=device, requires_grad=True)
    args = {"addmm": lambda d: (torch.randn(3, 5, device=d), torch.randn(3, 4, device=d), torch.randn(4, 5, device=d)),
            "baddbmm": lambda d: (torch.randn(2, 3, 5, device=d), torch.randn(2, 3, 4, device=d),
                                  torch.randn(2, 4, 5, device=d)),
            "addbmm": lambda d: (torch.randn(3, 5, device=d), torch.randn(2, 3, 4, device=d),
                                 torch.randn(2, 4, 5, device=d)),
            "addmv": lambda d: (torch.randn(3, device=d), torch.randn(3, 4, device=d), torch.randn(4, device=d))}[op](device)
    with pytest.raises(TypeError):
        getattr(torch, op)(*args, **{arg: value})
    with pytest.raises(TypeError, match=f"argument '{arg}'"):
        getattr(tritonblas, op)(*args, **{arg: value})
    with tritonblas.enable():
        with pytest.raises(TypeError):  # routed: torch's own error
            getattr(torch, op)(*args, **{arg: value})
        with pytest.raises(TypeError):
            getattr(args[0], op)(*args[1:], **{arg: value})



@pytest.mark.parametrize("op", ["addmm", "baddbmm", "addmv"])
@pytest.mark.parametrize("value", [2 ** 64, -2 ** 63 - 1])
def test_alpha_beta_ints_out_of_torchs_range(device, op, value):
    """torch takes an int alpha/beta in [-2^63, 2^64) and raises OverflowError beyond; tritonblas (and
    enable()'s routes) took float(value) and returned a result."""
    args = {"addmm": lambda d: (torch.randn(3, 5, device=d), torch.randn(3, 4, device=d), torch.randn(4, 5, device=d)),
            "baddbmm": lambda d: (torch.randn(2, 3, 5, device=d), torch.randn(2, 3, 4, device=d),
                                  torch.randn(2, 4, 5, device=d)),
            "addmv": lambda d: (torch.randn(3, device=d), torch.randn(3, 4, device=d), torch.randn(4, device=d))}[op](device)
    for arg in ("alpha", "beta"):
        with pytest.raises(OverflowError):
            getattr(torch, op)(*args, **{arg: value})
        with pytest.raises(OverflowError, match=arg):
            getattr(tritonblas, op)(*args, **{arg: value})
        with tritonblas.enable():
            with pytest.raises(OverflowError):  # routed: torch's own error
                getattr(torch, op)(*args, **{arg: value})

"""What the tests of the rules that hand a GEMM to torch's op share (``tests/dropin/test_small_eager.py``,
``test_small_grad.py``, ``test_vendor_aligned.py``): one operand set per shape, and each op with a warm path called
on fresh copies of it, with the number of M x N x K GEMMs the call is and its float64 reference."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from _check import reference
from tritonblas import dispatch


def operands(m: int, n: int, k: int, dtype: torch.dtype = torch.float32, batch: int = 4) -> dict:
    """Random operands (seeded by the shape) for every call of :data:`CALLS`: x (m, k), w (n, k), b (n,),
    x3 (batch, m, k), w3 (batch, k, n)."""
    g = torch.Generator().manual_seed(m * 10007 + n * 101 + k)
    return {name: torch.randn(*shape, generator=g).to(dtype) for name, shape in
            {"x": (m, k), "w": (n, k), "b": (n,), "x3": (batch, m, k), "w3": (batch, k, n)}.items()}


def fresh(ops: dict, name: str, dev: str, grad: bool = False) -> torch.Tensor:
    """A fresh copy of one operand on ``dev`` (never the shared one: ``requires_grad_`` would stick)."""
    return ops[name].to(dev).clone().requires_grad_(grad)


def _batch(ops: dict) -> int:
    return ops["x3"].shape[0]


def _module(o: dict, d: str, g: bool, x: str, bias: bool) -> torch.Tensor:
    """An ``nn.Linear`` holding fresh copies of ``w`` (and ``b``) as its parameters, called on a fresh ``x``
    (what models call: ``enable()`` replaces ``nn.Linear.forward``)."""
    w = o["w"]
    lin = torch.nn.Linear(w.shape[1], w.shape[0], bias=bias, device=d, dtype=w.dtype)
    with torch.no_grad():
        lin.weight.copy_(w)
        if bias:
            lin.bias.copy_(o["b"])
    lin.requires_grad_(g)
    return lin(fresh(o, x, d, g))


# (name, call(operands, device, grad), how many M x N x K GEMMs the call is, its float64 reference): each op with a
# warm path, M, N and K as the rules read them; under autograd the first operand (and the weight) require grad
CALLS = [
    ("linear", lambda o, d, g: F.linear(fresh(o, "x", d, g), fresh(o, "w", d, g), fresh(o, "b", d)), lambda o: 1,
     lambda o: reference(o["x"], o["w"].t(), bias=o["b"])),
    ("linear_3d", lambda o, d, g: F.linear(fresh(o, "x3", d, g), fresh(o, "w", d, g)), _batch,
     lambda o: reference(o["x3"], o["w"].t())),
    ("nn_linear", lambda o, d, g: _module(o, d, g, "x", True), lambda o: 1,
     lambda o: reference(o["x"], o["w"].t(), bias=o["b"])),
    ("nn_linear_3d", lambda o, d, g: _module(o, d, g, "x3", False), _batch,
     lambda o: reference(o["x3"], o["w"].t())),
    ("matmul", lambda o, d, g: torch.matmul(fresh(o, "x", d, g), fresh(o, "w", d, g).t()), lambda o: 1,
     lambda o: reference(o["x"], o["w"].t())),
    ("matmul_broadcast", lambda o, d, g: fresh(o, "x", d, g) @ fresh(o, "w3", d), _batch,
     lambda o: reference(o["x"], o["w3"])),
    ("addmm", lambda o, d, g: torch.addmm(fresh(o, "b", d), fresh(o, "x", d, g), fresh(o, "w", d, g).t()),
     lambda o: 1, lambda o: reference(o["x"], o["w"].t(), bias=o["b"])),
    ("bmm", lambda o, d, g: torch.bmm(fresh(o, "x3", d, g), fresh(o, "w3", d)), _batch,
     lambda o: reference(o["x3"], o["w3"])),
]
IDS = [c[0] for c in CALLS]


def flop(ops: dict, batches) -> int:
    """2·M·N·K of a call of :data:`CALLS` on ``ops``, ``batches`` its third field."""
    (m, k), n = ops["x"].shape, ops["w"].shape[0]
    return 2 * batches(ops) * m * n * k


def counted(call, ops: dict, device: str, grad: bool):
    """``call(ops, device, grad)`` and the dispatcher's counters for it alone."""
    dispatch.reset_stats()
    out = call(ops, device, grad)
    return out, dispatch.stats()

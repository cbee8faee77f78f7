"""Every alignment hint a launch carries is a true fact about the value it is placed on.

The pointer kernels hint each operand's strides with its ``*_ALIGN`` class and the extent of its contiguous dim
with ``*_EDGE`` (``tl.multiple_of``, tritonblas/kernels/_tiles.py, _epilogue.py); a hint wider than the truth lets
the compiler emit vector accesses that read the wrong elements on a GPU, which the interpreter cannot show. So this
checks the hints themselves, on the dispatcher's own plans (alignment staging forced, so staged plans are among
them) for random layouts: offsets, padded rows, transposes, size-1 dims, batches with odd or broadcast strides, on
h200, h100 and mi300x. TMA launches are checked for what they need instead: both bound operands pass ``_tma_ok``.
Plans only (``prepare_launch``), nothing is launched. CPU.
"""

from __future__ import annotations

import random

import pytest
import torch

from origami import staging
from tritonblas import dispatch
from tritonblas import plan as P
from tritonblas._interpreter import interpreting


def _view(shape, dtype, off, trans, pad, batch=None, batch_pad=0, broadcast=False):
    rows, cols = (shape[1], shape[0]) if trans else shape
    ld = cols + pad
    count = 1 if batch is None or broadcast else batch
    per = rows * ld + batch_pad
    base = torch.zeros(off + count * per + 8, dtype=dtype)
    if batch is None:
        t = base.as_strided((rows, cols), (ld, 1), off)
    else:
        t = base.as_strided((batch, rows, cols), (0 if broadcast else per, ld, 1), off)
    return t.transpose(-1, -2) if trans else t


def _facts(args, kw):
    """(what, value, hint) for every value a pointer kernel passes through ``aligned(value, hint)``."""
    m, n, k = args[9], args[10], args[11]
    sab, sam, sak, sbb, sbk, sbn = args[14:20]
    sob, som, son = args[23:26]
    a, b, o = kw["A_ALIGN"], kw["B_ALIGN"], kw["OUT_ALIGN"]
    facts = [("a batch stride", sab, a), ("b batch stride", sbb, b), ("out batch stride", sob, o),
             ("a stride", sam if kw["A_ORDER"] == 0 else sak, a),
             ("b stride", sbn if kw["B_ORDER"] == 1 else sbk, b)]
    if kw["OUT_ORDER"] in (0, 1):
        facts.append(("out stride", som if kw["OUT_ORDER"] == 0 else son, o))
    if kw["A_ORDER"] == 1:
        facts.append(("M under A_EDGE", m, kw["A_EDGE"]))
    if kw["A_ORDER"] == 0:
        facts.append(("K under A_EDGE", k, kw["A_EDGE"]))
    if kw["B_ORDER"] == 0:
        facts.append(("N under B_EDGE", n, kw["B_EDGE"]))
    if kw["B_ORDER"] == 1 and kw["A_ORDER"] != 0:
        facts.append(("K under B_EDGE", k, kw["B_EDGE"]))
    if kw["OUT_ORDER"] == 1:
        facts.append(("M under OUT_EDGE", m, kw["OUT_EDGE"]))
    if kw["OUT_ORDER"] == 0:
        facts.append(("N under OUT_EDGE", n, kw["OUT_EDGE"]))
    return facts


@pytest.mark.skipif(not interpreting(), reason="plans CPU tensors for three profiles: needs the kernels decorated under "
                    "the interpreter (the CPU lane); on a GPU the dispatcher refuses CPU tensors")
@pytest.mark.timeout(300)
def test_every_hint_is_true(monkeypatch, h200, mi300x):
    import origami

    h100 = origami.load_profile("h100")
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setattr(staging, "STAGED_HOST_NS", 0.0)  # small problems: let origami's rule stage them
    monkeypatch.setattr(staging, "staging_copy_ns", lambda *args: 0.0)
    dispatch.clear_caches()
    rng = random.Random(25)
    checked = pointer = size_one = 0
    try:
        for _ in range(400):
            dtype = rng.choice([torch.float16, torch.bfloat16, torch.float32])
            m, n, k = rng.choice([1, 2, 5, 16]), rng.choice([1, 3, 8]), rng.choice([1, 2, 7, 16])
            batch = rng.choice([None, None, 1, 2])

            def make(shape, b):
                return _view(shape, dtype, rng.choice([0, 1, 2, 4, 8]), rng.random() < 0.4, rng.choice([0, 1, 3, 8]),
                             b, rng.choice([0, 1, 8]), rng.random() < 0.2)

            a = make((m, k), batch)
            b = make((k, n), batch if rng.random() < 0.7 else None)
            out_batch = batch if batch is not None else (b.shape[0] if b.dim() == 3 else None)
            out = _view((m, n), dtype, rng.choice([0, 1, 2, 8]), rng.random() < 0.4, rng.choice([0, 1, 8]), out_batch,
                        rng.choice([0, 1, 8]))
            try:
                P.problem_from_tensors(a, b, out)
            except ValueError:
                continue  # a layout the kernels refuse (the checked path sends it to torch)
            lp = dispatch.plan_for(a, b, out, profile=rng.choice([h200, h100, mi300x]))
            if lp is None:
                continue
            prepared = P.prepare_launch(lp, a, b, out)
            if prepared.kernel is None:
                continue
            checked += 1
            if prepared.kernel.fn.__name__ in P.TMA_KERNELS:
                for bound in (prepared.args[0].base, prepared.args[1].base):
                    assert P._tma_ok(bound, P.operand_order(bound))
                continue
            pointer += 1
            size_one += 1 in (m, n, k)
            for what, value, hint in _facts(prepared.args, prepared.kwargs):
                assert value % hint == 0, (
                    f"{what} {value} is not a multiple of its hint {hint}: a {tuple(a.shape)} {a.stride()}, "
                    f"b {tuple(b.shape)} {b.stride()}, out {tuple(out.shape)} {out.stride()}, {lp.kernel_name}")
    finally:
        dispatch.clear_caches()
    assert checked > 200 and pointer > 100 and size_one > 30, (checked, pointer, size_one)

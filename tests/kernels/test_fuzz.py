"""Kernel fuzz (RELIABILITY.md §6.1–6.4, 6.8): the public ``tritonblas.matmul`` / ``addmm`` / ``bmm``
with forced small configs (16/32 blocks: interpreter-fast), against float64 under the §4.2 bound.

Hypothesis draws, derandomized (the same cases every run, CI-stable): every kernel kind, fp16 /
bf16 / fp32, both transposes, sizes within one of a block multiple (and 1), storage offsets 0–7,
padded leading dims, a stride-0 (expanded) operand, batch broadcast (a 2-D or size-1-batch operand
against a batched one), addmm with alpha/beta (beta = 0 over a NaN input), and ``out=`` views with
NaN guard bands before, after and between rows, which must come back bit-identical.

Budget: ``FUZZ_EXAMPLES`` cases (300) in about a minute on one core.
"""

from __future__ import annotations

import math
import os

import pytest
import torch

from _check import assert_gemm_close, reference

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import origami  # noqa: E402
import tritonblas  # noqa: E402
from tritonblas._interpreter import interpreting  # noqa: E402

pytestmark = pytest.mark.skipif(not interpreting(), reason="the fuzz sizes are for the interpreter")

FUZZ_EXAMPLES = int(os.environ.get("TRITONBLAS_FUZZ_EXAMPLES", "300"))
DTYPES = (torch.float16, torch.bfloat16, torch.float32)
KINDS = ("dp", "persistent", "streamk", "splitk")
GUARD = 5


@st.composite
def cases(draw):
    op = draw(st.sampled_from(("matmul", "addmm", "bmm")))
    dtype = draw(st.sampled_from(DTYPES))
    kind = draw(st.sampled_from(KINDS))
    bm, bn, bk = (draw(st.sampled_from((16, 32))) for _ in range(3))

    def dim(block, upto=2):
        return max(1, block * draw(st.integers(0, upto)) + draw(st.integers(-1, 1)))

    m, n, k = dim(bm), dim(bn), dim(bk, 3)
    extra = {}
    if kind in ("persistent", "streamk"):
        extra["grid"] = draw(st.integers(1, 7))
    if kind == "splitk":
        iters = -(-k // bk)
        if iters < 2:
            k = bk + draw(st.integers(1, bk))  # split-K needs >= 2 K-iterations
            iters = 2
        extra["split_k"] = draw(st.integers(2, min(4, iters)))
    cfg = origami.TileConfig(kind=kind, block_m=bm, block_n=bn, block_k=bk, num_warps=4, num_stages=2,
                             group_m=draw(st.sampled_from((1, 2))), **extra)
    batch = draw(st.sampled_from((1, 2, 3))) if op != "addmm" else 1
    # matmul may broadcast: one operand 2-D or of batch 1 against a batched other
    bcast = draw(st.sampled_from(("none", "a2d", "b2d", "a1", "b1"))) if op == "matmul" and batch > 1 else "none"
    return dict(op=op, dtype=dtype, cfg=cfg, m=m, n=n, k=k, batch=batch, bcast=bcast,
                ta=draw(st.booleans()), tb=draw(st.booleans()),
                off_a=draw(st.integers(0, 7)), off_b=draw(st.integers(0, 7)),
                pad_a=draw(st.sampled_from((0, 0, 1, 3, 8))), pad_b=draw(st.sampled_from((0, 0, 1, 3, 8))),
                stride0=draw(st.sampled_from(("none",) * 4 + ("a_rows", "b_cols"))),
                out=draw(st.sampled_from(("none", "guarded", "padded"))), out_off=draw(st.integers(0, 7)),
                alpha=draw(st.sampled_from((1.0, -0.5, 2.0))), beta=draw(st.sampled_from((0.0, 1.0, 0.25))),
                c_shape=draw(st.sampled_from(("mn", "n", "1n"))), seed=draw(st.integers(0, 2**16)))


def _operand(rows, cols, batch, dtype, transposed, offset, pad, g):
    """A (batch?, rows, cols) view with a storage offset and a padded leading dim."""
    inner, outer = (rows, cols) if transposed else (cols, rows)  # contiguous dim first
    ld = inner + pad
    n = (batch or 1) * outer * ld
    flat = (torch.randn(offset + n, generator=g) / math.sqrt(max(cols, 1))).to(dtype)
    base = flat[offset:].view(batch or 1, outer, ld)[:, :, :inner]
    t = base.transpose(-1, -2) if transposed else base
    return t if batch else t[0]


def _run(case):
    g = torch.Generator().manual_seed(case["seed"])
    dtype, m, n, k, batch = case["dtype"], case["m"], case["n"], case["k"], case["batch"]
    op = case["op"]
    ba = None if op == "addmm" or case["bcast"] == "a2d" else (1 if case["bcast"] == "a1" else batch)
    bb = None if op == "addmm" or case["bcast"] == "b2d" else (1 if case["bcast"] == "b1" else batch)
    if op == "bmm":
        ba = bb = batch
    a = _operand(m, k, ba, dtype, case["ta"], case["off_a"], case["pad_a"], g)
    b = _operand(k, n, bb, dtype, case["tb"], case["off_b"], case["pad_b"], g)
    if case["stride0"] == "a_rows":  # every row of A the same (row stride 0)
        a = a[..., :1, :].expand(*a.shape[:-2], m, k)
    elif case["stride0"] == "b_cols":  # every column of B the same (column stride 0)
        b = b[..., :1].expand(*b.shape[:-1], n)
    out_batch = None if op == "addmm" or (ba is None and bb is None) else max(ba or 1, bb or 1)
    kw = dict(config=case["cfg"], profile="h200")
    store = out = None
    if case["out"] != "none":
        rows = (out_batch or 1) * m
        ld = n + (3 if case["out"] == "padded" else 0)
        store = torch.full((2 * GUARD + case["out_off"] + rows * ld,), float("nan"), dtype=dtype)
        body = store[GUARD + case["out_off"]: GUARD + case["out_off"] + rows * ld].view(rows, ld)[:, :n]
        out = body if out_batch is None else body.unflatten(0, (out_batch, m))
        kw["out"] = out
        before = store.clone()
    epi = {}
    from tritonblas import dispatch

    dispatch.reset_stats()
    if op == "matmul":
        res = tritonblas.matmul(a, b, **kw)
    elif op == "bmm":
        res = tritonblas.bmm(a, b, **kw)
    else:
        cs = {"mn": (m, n), "n": (n,), "1n": (1, n)}[case["c_shape"]]
        c = torch.randn(cs, generator=g).to(dtype)
        if case["beta"] == 0:
            c.fill_(float("nan"))  # beta = 0: c must not be read
        res = tritonblas.addmm(c, a, b, alpha=case["alpha"], beta=case["beta"], **kw)
        epi = dict(c=torch.broadcast_to(c, (m, n)), alpha=case["alpha"], beta=case["beta"])
    st_ = dispatch.stats()
    assert st_["fallbacks"] == 0 and st_["launches"] >= 1, f"{_describe(case)}: torch ran it ({st_})"
    if out is not None:
        assert res.data_ptr() == out.data_ptr(), "out= was not written in place"
        written = torch.zeros_like(store, dtype=torch.bool)
        idx = torch.arange(store.numel()).as_strided(out.shape, out.stride(), out.storage_offset())
        written[idx.reshape(-1)] = True
        same = store.view(torch.int16 if dtype != torch.float32 else torch.int32) \
            == before.view(torch.int16 if dtype != torch.float32 else torch.int32)
        assert same[~written].all(), f"stray write at {(~same & ~written).nonzero()[:3].reshape(-1).tolist()}"
    ref, mag, _ = reference(a, b, **epi)
    assert_gemm_close(res, ref, mag, k, what=_describe(case))


def _describe(case):
    c = case["cfg"]
    return (f"{case['op']} {str(case['dtype'])[6:]} {c.short()} b{case['batch']}x{case['m']}x{case['n']}x{case['k']} "
            f"bcast={case['bcast']} T={case['ta']:d}{case['tb']:d} off={case['off_a']},{case['off_b']} "
            f"pad={case['pad_a']},{case['pad_b']} s0={case['stride0']} out={case['out']}")


@pytest.mark.timeout(600)
@settings(max_examples=FUZZ_EXAMPLES, derandomize=True, deadline=None, database=None, print_blob=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(case=cases())
def test_fuzz_public_ops_against_float64(case):
    _run(case)

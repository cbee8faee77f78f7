"""Stream-K and split-K fix-ups under other program arrival orders (interpreter hook
``tritonblas._interpreter.program_order``), and the run-to-run determinism of every kind.

The interpreter runs programs one at a time in id order, so without the hook the highest contributor
of a split tile always arrives last. Here every split config also runs reversed, even-then-odd and
in two random orders: a fix-up that lets the owner finish before a later contributor's partial is
in (or that trusts a fixed finisher) gives a wrong tile, and one that sums in arrival order gives
different bits. Each order must meet the §4.2 bound, equal the id-order result bit for bit
(the kinds' determinism, DETERMINISTIC_KINDS in tritonblas.dispatch), and leave the counters at 0.
"""

from __future__ import annotations

import pytest
import torch

from _check import check_gemm, config, operand, run_gemm
from tritonblas._interpreter import interpreting, permutation, program_order

pytestmark = pytest.mark.skipif(not interpreting(), reason="the program-order hook is interpreter-only")

# 70 x 50 x 100 with 32-blocks: 3 x 2 = 6 tiles of 4 K-iterations (the last one a 4-element tail).
SHAPE = (70, 50, 100)
ORDERS = ["reversed", "even_odd", 1, 2]
SPLIT_CONFIGS = {
    "sk4": dict(kind="streamk", grid=4),    # 4 dp tiles, 2 split tiles over 4 programs
    "sk5": dict(kind="streamk", grid=5),    # 5 dp tiles, 1 tile over 5 programs (one iteration each, some 0)
    "sk7": dict(kind="streamk", grid=7),    # every tile split, 2-3 contributors each
    "sk16": dict(kind="streamk", grid=16),  # every tile split, up to 4 contributors
    "split2": dict(kind="splitk", split_k=2),
    "split4": dict(kind="splitk", split_k=4),
    "persistent4": dict(kind="persistent", grid=4),
    "dp": dict(kind="dp"),
}


def _counters_zero() -> bool:
    from tritonblas import plan

    _, counters = plan.workspace(torch.device("cpu"), 0, 0)
    return int(torch.count_nonzero(counters)) == 0


def test_permutations_are_permutations():
    for order in ["forward", *ORDERS]:
        for n in (1, 2, 7, 16):
            assert sorted(permutation(order, n)) == list(range(n))
    assert permutation("reversed", 4) == [3, 2, 1, 0]
    assert permutation(3, 16) != list(range(16))
    with pytest.raises(ValueError, match="program_order"):
        permutation("sideways", 4)


def test_the_hook_changes_the_arrival_order():
    """A kernel that takes a ticket from an atomic counter sees the arrival order: it must be the
    permutation's (the hook is not a no-op) and the id order outside the block."""
    import triton
    import triton.language as tl

    @triton.jit
    def ticket_kernel(Counter, Out):
        pid = tl.program_id(0)
        t = tl.atomic_add(Counter, 1)
        tl.store(Out + pid, t)

    def arrival(n):
        counter = torch.zeros(1, dtype=torch.int32)
        out = torch.full((n,), -1, dtype=torch.int32)
        ticket_kernel[(n,)](counter, out)
        return out.tolist()

    assert arrival(6) == list(range(6))
    with program_order("reversed"):
        assert arrival(6) == [5, 4, 3, 2, 1, 0]
    with program_order(7):
        perm = permutation(7, 9)
        got = arrival(9)
    assert [got[p] for p in perm] == list(range(9))  # program perm[i] arrived i-th
    assert arrival(6) == list(range(6))


CASES = [(name, torch.float32) for name in sorted(SPLIT_CONFIGS)] + [("sk7", torch.float16), ("split4", torch.float16)]


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name, dtype", CASES, ids=lambda v: str(v).replace("torch.", ""))
def test_fixup_under_other_arrival_orders(name, dtype, h200):
    m, n, k = SHAPE
    g = torch.Generator().manual_seed(hash((name, str(dtype))) % 2**31)
    a = operand(m, k, dtype, False, generator=g)
    b = operand(k, n, dtype, True, generator=g)
    kw = dict(SPLIT_CONFIGS[name])
    cfg = config(kw.pop("kind"), **kw)
    first, _ = run_gemm(cfg, a, b, h200)
    check_gemm(first, a, b, what=f"{name} id order")
    for order in ORDERS:
        with program_order(order):
            out, _ = run_gemm(cfg, a, b, h200)
        check_gemm(out, a, b, what=f"{name} order {order}")
        assert torch.equal(out.view(torch.int16 if dtype == torch.float16 else torch.int32),
                           first.view(torch.int16 if dtype == torch.float16 else torch.int32)), \
            f"{name}: order {order} changed the bits (the fix-up sums in arrival order?)"
        assert _counters_zero(), f"{name}: order {order} left a counter armed"


@pytest.mark.timeout(300)
def test_fixup_with_epilogue_under_reversed_order(h200):
    """The last arriver applies the epilogue (alpha, beta·C, bias) once, whoever it is."""
    m, n, k = SHAPE
    a = operand(m, k, torch.float32)
    b = operand(k, n, torch.float32)
    c = operand(m, n, torch.float32)
    bias = torch.randn(n)
    for cfg in (config("streamk", grid=7), config("splitk", split_k=3)):
        with program_order("reversed"):
            out, _ = run_gemm(cfg, a, b, h200, c=c, alpha=0.5, beta=-2.0, bias=bias)
        check_gemm(out, a, b, c=c, alpha=0.5, beta=-2.0, bias=bias, what=f"{cfg.kind.value} reversed")

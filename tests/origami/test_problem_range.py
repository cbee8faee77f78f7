"""The supported size range of a problem (RELIABILITY.md §7 "dims beyond the supported range"):
``GemmProblem`` refuses m, n, k or batch outside 0..2^31 − 1, and outputs over 2^39 elements, with a
``ValueError`` naming the dimension and the range, so every entry point (origami.select, the CLI,
the dispatcher) refuses them the same way. Before, ``select`` on 2^40 died with ZeroDivisionError
and 2^64 with a numba traceback. Inside the range the model's estimates are finite and positive at
the corners."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest

import origami
from origami.problem import MAX_DIM, MAX_OUTPUT_ELEMENTS, GemmProblem

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("dim", ["m", "n", "k", "batch"])
@pytest.mark.parametrize("value", [2**31, 2**40, 2**64, 2**403])
def test_dims_beyond_the_range_name_the_dim(dim, value):
    sizes = {"m": 16, "n": 16, "k": 16, "batch": 1, dim: value}
    with pytest.raises(ValueError) as ei:
        GemmProblem(**sizes)
    msg = str(ei.value)
    assert f"GemmProblem.{dim}" in msg and "0..2147483647" in msg and str(value) in msg, msg


def test_select_on_huge_dims_raises_value_error_not_zero_division():
    for v in (2**40, 2**64, 2**403):
        with pytest.raises(ValueError, match=r"GemmProblem\.m: must be in 0\.\.2147483647"):
            origami.select(GemmProblem(v, v, v), "h200")


def test_output_elements_bounded():
    m = n = 2**20  # 2^40 output elements, each dim in range
    with pytest.raises(ValueError, match=r"batch·m·n .* at most 2\^39"):
        GemmProblem(m, n, 64)
    assert GemmProblem(2**20, 2**19, 64).m == 2**20  # exactly 2^39 is allowed
    assert GemmProblem(2**20, 2**19, 64).batch * 2**20 * 2**19 == MAX_OUTPUT_ELEMENTS


CORNERS = [  # (m, n, k, batch) at the edges of the range
    (MAX_DIM, 256, MAX_DIM, 1),
    (2**20, 2**19, MAX_DIM, 1),
    (1, 1, MAX_DIM, MAX_DIM),
    (16, 16, 1, MAX_DIM),
    (MAX_DIM, 1, 1, 1),
    (1, MAX_DIM, MAX_DIM, 1),
]


@pytest.mark.parametrize("m,n,k,batch", CORNERS)
@pytest.mark.parametrize("dtype", ["bf16", "fp32", "fp8_e4m3"])
def test_model_is_finite_at_the_corners(m, n, k, batch, dtype):
    c = origami.DType.parse(dtype).default_output
    p = GemmProblem(m, n, k, dtype, dtype, c, batch=batch)
    ests = origami.rank(p, "h200", 3)
    assert ests, "no candidate"
    floor_ns = p.flops / 1e18 * 1e9  # far below any real device: only finiteness and sign are at stake
    for e in ests:
        assert math.isfinite(e.latency_ns) and e.latency_ns > floor_ns, (p.describe(), e)
    sel = origami.select(p, "h200")  # the branch-and-bound path agrees with the full ranking
    assert math.isfinite(sel.latency_ns) and sel.latency_ns == pytest.approx(ests[0].latency_ns, rel=1e-9)


@pytest.mark.parametrize("args", [("1099511627776",) * 3, ("18446744073709551616", "64", "64")])
def test_cli_select_exits_2(args):
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "NUMBA_CACHE_DIR": "/tmp/numba-range-test"}
    r = subprocess.run([sys.executable, "-m", "tritonblas", "select", *args, "--profile", "h200"],
                       capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)
    lines = r.stderr.splitlines()
    assert r.returncode == 2 and len(lines) == 1, (r.returncode, r.stderr[-2000:])
    assert "GemmProblem.m" in lines[0] and "2147483647" in lines[0], lines[0]

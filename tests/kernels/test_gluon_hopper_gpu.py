"""GPU tests of the experimental Gluon Hopper GEMM (tritonblas/kernels/gluon_hopper.py), H200 only:

    TRITONBLAS_TEST_GLUON=1 python3 -m pytest -m gpu tests/kernels/test_gluon_hopper_gpu.py -x -n 4 -rs

Opt-in (``TRITONBLAS_TEST_GLUON=1``; ``gpu_session.sh`` step ``gluon``): the kernel is an
experiment outside origami's space, and the whole-suite GPU run keeps its time budget for what
the dispatcher runs. First run on the H200 2026-12-01: all 8 variants pass, ~40 s with -n 4.

For each variant (tile config x dtype x A and B layout) a child process (this file run as a script) runs
every shape on fresh random data, NaN-prefilled outputs, and checks each against the float64
reference with the bound of the other GPU kernel tests (``tests/_check.py``: fp32 accumulation over
K plus the output rounding), and checks nothing was written outside C. The parent kills a child
that goes quiet for SHAPE_TIMEOUT_S on one shape (``_harness.watch_child``): a hung kernel (a
barrier waiting for ever) fails the test, naming the shape it was on, cannot block the suite, and
skips the later variants (a kernel that hangs once hangs again; each would cost another minute).

Shapes: tiny (1x8x16: one tile, mostly out of bounds), ragged edges in M, N and K with padded
16-byte leading dimensions, 4096^3 (3.9 tiles per program), K-loops shorter than the ring
(k_steps < STAGES) over many tiles per program — the barrier phases run across tile boundaries —
and a grid of 3 programs walking ~11 tiles each.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

# (m, n, k, num_sms or None)
SHAPES = [
    (1, 8, 16, None),
    (127, 264, 65, None),  # ragged in M, N and K against every tile; rows whole 16-byte chunks
    (300, 200, 1000, None),
    (127, 255, 65, None),  # rows end inside a 16-byte chunk: the wrapper must refuse (the TMA store would overrun)
    (256, 512, 96, None),  # 2 K-steps < STAGES, 2-4 tiles
    (4096, 2048, 40, None),  # 1 K-step (K < BLOCK_K), 256-512 tiles: phases wrap across tiles
    (1000, 1000, 200, 3),  # 3 programs, ~11-32 tiles each, 4 K-steps (the last one ragged)
    (4096, 4096, 4096, None),
]
VARIANTS = ["128x256x64-s3", "128x128x64-s4"]
FIRST_TIMEOUT_S = 120  # the child's start: imports and the kernel's compile
SHAPE_TIMEOUT_S = 60  # one shape: launch, reference, check (4096^3 takes a few seconds)


def _padded(rows: int, cols: int, dtype, device, transposed: bool = False):
    """Random (rows, cols) operand whose leading dimension is padded to 8 elements (16 bytes):
    TMA needs 16-byte row strides, the kernel must still read only the logical extent."""
    import torch

    if transposed:  # column-major: a (cols, rows) row-major buffer, transposed
        return _padded(cols, rows, dtype, device).t()
    ld = -(-cols // 8) * 8
    buf = torch.randn(rows, ld, device=device).to(dtype)
    if ld > cols:
        buf[:, cols:] = float("nan")  # padding that must never be read into the product
    return buf[:, :cols]


def _twice(launch, out_buf, out, check, what: str) -> None:
    """``launch()`` twice on fresh NaNs: the first call goes through Triton's launch (and binds the raw
    launcher), the second through the raw launch of the warm key. Each time ``check(what)`` the
    result, and nothing outside C (``out``, a view of ``out_buf``) may have been written."""
    import torch

    from tritonblas.kernels import gluon_hopper as G

    m, n = out.shape
    G._WARM.clear()
    for call in ("jit", "raw"):
        out_buf.fill_(float("nan"))
        launch()
        torch.cuda.synchronize()
        # the second call is only the raw launch's test if the first bound one
        assert len(G._WARM) == 1, f"{what} ({call}): the launch bound {len(G._WARM)} raw launchers, not 1"
        check(f"{what} ({call})")
        outside = torch.cat([out_buf[m:].reshape(-1), out_buf[:m, n:].reshape(-1)])
        assert torch.isnan(outside).all(), \
            f"{what} ({call}): {int((~torch.isnan(outside)).sum())} elements written outside C"


def _each_shape(body) -> int:
    """The child's protocol: per shape of SHAPES a ``start`` line, then its row (``body(i, m, n, k,
    num_sms)``'s dict, or the exception it raised), with its seconds, as JSON on stdout."""
    for i, (m, n, k, num_sms) in enumerate(SHAPES):
        print(json.dumps(dict(start=[m, n, k, num_sms])), flush=True)
        t0 = time.time()
        try:
            row = dict(shape=[m, n, k, num_sms], ok=True, **(body(i, m, n, k, num_sms) or {}))
        except Exception as e:  # noqa: BLE001 - reported to the parent
            row = dict(shape=[m, n, k, num_sms], ok=False, error=f"{type(e).__name__}: {e}"[:3000])
        row["s"] = round(time.time() - t0, 3)
        print(json.dumps(row), flush=True)
    return 0


def _child(variant: str, dtype_name: str, layout: str) -> int:
    os.environ.pop("TRITON_INTERPRET", None)
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "tests"))
    import torch

    from _check import check_gemm
    from tritonblas.kernels.gluon_hopper import gluon_matmul

    tile, stages = variant.split("-")
    bm, bn, bk = (int(x) for x in tile.split("x"))
    if dtype_name in ("e4m3", "e5m2"):
        return _child_fp8(bn, int(stages[1:]), dtype_name)
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}[dtype_name]
    torch.manual_seed(0)

    def shape(i, m, n, k, num_sms):
        a = _padded(m, k, dtype, "cuda", transposed=(layout[0] == "T"))  # T: column-major (grad.T)
        b = _padded(k, n, dtype, "cuda", transposed=(layout[1] == "T"))
        # NaN everywhere, with 8 rows and the padding columns past the logical extent: a
        # store the TMA unit did not clip at the edges shows there
        ld = -(-n // 8) * 8
        out_buf = torch.full((m + 8, ld), float("nan"), dtype=dtype, device="cuda")
        out = out_buf[:m, :n]
        kw = dict(block_m=bm, block_n=bn, block_k=bk, stages=int(stages[1:]), num_sms=num_sms)
        what = f"gluon {variant} {dtype_name} {layout} {m}x{n}x{k}"
        if (n * 2) % 16:
            try:
                gluon_matmul(a, b, out, **kw)
            except ValueError as e:
                assert str(e).startswith("out:") and "past the row end" in str(e), e
            else:
                raise AssertionError(f"N = {n}: the wrapper took a C whose rows end inside a 16-byte chunk")
            assert torch.isnan(out_buf).all(), "the refused call wrote to C"
            return None
        _twice(lambda: gluon_matmul(a, b, out, **kw), out_buf, out,
               lambda w: check_gemm(out, a, b, what=w), what)
        # the bias epilogue (F.linear's), in the output's dtype and in fp32
        for bias_dtype in (dtype, torch.float32):
            bias = torch.randn(n, device="cuda").to(bias_dtype)
            _twice(lambda: gluon_matmul(a, b, out, bias=bias, **kw), out_buf, out,
                   lambda w: check_gemm(out, a, b, bias=bias, what=w), f"{what} bias {bias_dtype}")
        return None

    return _each_shape(shape)


def _fp8_padded(rows: int, cols: int, dtype):
    """Random fp8 (rows, cols), leading dimension padded to 16 elements (TMA's 16-byte rows), NaN in
    the padding: a K tail read past the logical extent shows in the product."""
    import torch

    ld = -(-cols // 16) * 16
    buf = torch.randn(rows, ld, device="cuda").mul_(2)
    buf[:, cols:] = float("nan")
    return buf.to(dtype)[:, :cols]


def _child_fp8(block_n: int, stages: int, dtype_name: str) -> int:
    """gluon_scaled_mm on every shape whose N rows are whole 16-byte chunks: A row-major, B
    column-major (torch._scaled_mm's layout), row-wise and tensor-wise fp32 scales on alternate
    shapes, a bf16 bias on every other one; 128x256 tiles with fast accumulation, 128x128 promoted."""
    import torch

    from _check import check_gemm
    from tritonblas.kernels.gluon_hopper import gluon_scaled_mm

    dtype = {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}[dtype_name]
    fast = block_n == 256
    torch.manual_seed(0)

    def shape(i, m, n, k, num_sms):
        if (n * 2) % 16:
            return dict(skipped="C rows end inside a 16-byte chunk")
        a = _fp8_padded(m, k, dtype)
        b = _fp8_padded(n, k, dtype).t()  # B column-major: Bᵀ row-major
        if i % 2:
            sa, sb = torch.rand(m, 1, device="cuda") + 0.5, torch.rand(1, n, device="cuda") + 0.5
        else:
            sa, sb = torch.tensor(0.75, device="cuda"), torch.tensor(1.25, device="cuda")
        bias = torch.randn(n, device="cuda").to(torch.bfloat16) if i % 3 == 0 else None
        ld = -(-n // 8) * 8
        out_buf = torch.full((m + 8, ld), float("nan"), dtype=torch.bfloat16, device="cuda")
        out = out_buf[:m, :n]
        _twice(lambda: gluon_scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16, bias=bias, use_fast_accum=fast,
                                       out=out, block_n=block_n, stages=stages, num_sms=num_sms),
               out_buf, out, lambda w: check_gemm(out, a, b, scale_a=sa, scale_b=sb, bias=bias, fp8_mma=True, what=w),
               f"gluon fp8 {dtype_name} 128x{block_n} {m}x{n}x{k}")
        return None

    return _each_shape(shape)


_HUNG: list = []  # (variant, shape) of a hang: the later variants are skipped, each would cost minutes


CASES = [(v, d, lay) for v in VARIANTS for d in ("bf16", "fp16") for lay in ("NN", "NT", "TN", "TT")] + \
    [(v, d, "NT") for v in ("128x128x128-s5", "128x256x128-s3") for d in ("e4m3", "e5m2")]  # gluon_scaled_mm


@pytest.mark.gpu
@pytest.mark.timeout(FIRST_TIMEOUT_S + SHAPE_TIMEOUT_S * len(SHAPES) + 60)
@pytest.mark.parametrize("variant, dtype_name, layout", CASES)
def test_gluon_hopper_matches_reference(variant, dtype_name, layout):
    import torch

    if torch.cuda.get_device_capability()[0] != 9:
        pytest.skip("the Gluon kernel is for Hopper (sm_90) only")
    from tritonblas.kernels.gluon_hopper import HAS_GLUON

    if not HAS_GLUON:
        pytest.skip("this Triton has no triton.experimental.gluon")
    if os.environ.get("TRITONBLAS_TEST_GLUON") != "1":
        pytest.skip("opt-in: set TRITONBLAS_TEST_GLUON=1 (the experimental Gluon kernel may hang)")
    if _HUNG:
        pytest.skip(f"not run: an earlier case hung ({_HUNG[0]})")
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from _harness import watch_child

    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", variant, dtype_name, layout]
    done, bad, end = [], [], None
    for event in watch_child(cmd, timeout_s=SHAPE_TIMEOUT_S, first_timeout_s=FIRST_TIMEOUT_S, env=env):
        if event[0] == "row":
            done.append(event[1]["shape"])
            if not event[1]["ok"]:
                bad.append(f"{event[1]['shape']}: {event[1]['error']}")
        elif event[0] in ("hang", "exit"):
            end = event
    what = f"{variant} {dtype_name} {layout}"
    if end[0] == "hang":
        _HUNG.append(f"{what} on {end[1]}")
        pytest.fail(f"{what}: no result within {SHAPE_TIMEOUT_S} s on shape {end[1]} (a hang?), child killed; "
                    f"finished: {done}")
    assert not bad, "\n".join(bad)
    assert len(done) == len(SHAPES), f"{what}: child exited (rc {end[1]}) after {done}:\n{end[2]}"


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--child":
        sys.exit(_child(*sys.argv[2:]))
    print(__doc__)
    sys.exit(2)

"""GPU tests of the experimental Gluon Hopper GEMM (tritonblas/kernels/gluon_hopper.py), H200 only:

    pytest -m gpu tests/kernels/test_gluon_hopper_gpu.py -v

For each variant (tile config x dtype x B layout) a child process (this file run as a script) runs
every shape on fresh random data, NaN-prefilled outputs, and checks each against the float64
reference with the bound of the other GPU kernel tests (``tests/_check.py``: fp32 accumulation over
K plus the output rounding). The parent kills a child that runs past its timeout: a hung kernel
(a barrier waiting for ever) fails the test, naming the shape it was on, and cannot block the suite.

Shapes: tiny (1x8x16: one tile, mostly out of bounds), ragged edges in M, N and K with padded
16-byte leading dimensions, 4096^3 (3.9 tiles per program), K-loops shorter than the ring
(k_steps < STAGES) over many tiles per program — the barrier phases run across tile boundaries —
and a grid of 3 programs walking ~11 tiles each.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

# (m, n, k, num_sms or None)
SHAPES = [
    (1, 8, 16, None),
    (127, 255, 65, None),
    (300, 257, 1000, None),
    (256, 512, 96, None),  # 2 K-steps < STAGES, 2-4 tiles
    (4096, 2048, 40, None),  # 1 K-step (K < BLOCK_K), 256-512 tiles: phases wrap across tiles
    (1000, 1000, 200, 3),  # 3 programs, ~11-32 tiles each, 4 K-steps (the last one ragged)
    (4096, 4096, 4096, None),
]
VARIANTS = ["128x256x64-s3", "128x128x64-s4"]
CHILD_TIMEOUT_S = 240


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


def _child(variant: str, dtype_name: str, layout: str) -> int:
    os.environ.pop("TRITON_INTERPRET", None)
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "tests"))
    import torch

    from _check import check_gemm
    from tritonblas.kernels.gluon_hopper import gluon_matmul

    tile, stages = variant.split("-")
    bm, bn, bk = (int(x) for x in tile.split("x"))
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}[dtype_name]
    torch.manual_seed(0)
    for m, n, k, num_sms in SHAPES:
        print(json.dumps(dict(start=[m, n, k, num_sms])), flush=True)
        t0 = time.time()
        try:
            a = _padded(m, k, dtype, "cuda")
            b = _padded(k, n, dtype, "cuda", transposed=(layout == "NT"))
            # NaN everywhere, with 8 rows and the padding columns past the logical extent: a
            # store the TMA unit did not clip at the edges shows there
            ld = -(-n // 8) * 8
            out_buf = torch.full((m + 8, ld), float("nan"), dtype=dtype, device="cuda")
            out = out_buf[:m, :n]
            gluon_matmul(a, b, out, block_m=bm, block_n=bn, block_k=bk, stages=int(stages[1:]), num_sms=num_sms)
            torch.cuda.synchronize()
            check_gemm(out, a, b, what=f"gluon {variant} {dtype_name} {layout} {m}x{n}x{k}")
            outside = torch.cat([out_buf[m:].reshape(-1), out_buf[:m, n:].reshape(-1)])
            assert torch.isnan(outside).all(), f"{int((~torch.isnan(outside)).sum())} elements written outside C"
            row = dict(shape=[m, n, k, num_sms], ok=True)
        except Exception as e:  # noqa: BLE001 - reported to the parent
            row = dict(shape=[m, n, k, num_sms], ok=False, error=f"{type(e).__name__}: {e}"[:3000])
        row["s"] = round(time.time() - t0, 3)
        print(json.dumps(row), flush=True)
    return 0


@pytest.mark.gpu
@pytest.mark.timeout(CHILD_TIMEOUT_S + 60)
@pytest.mark.parametrize("layout", ["NN", "NT"])
@pytest.mark.parametrize("dtype_name", ["bf16", "fp16"])
@pytest.mark.parametrize("variant", VARIANTS)
def test_gluon_hopper_matches_reference(variant, dtype_name, layout):
    import torch

    if torch.cuda.get_device_capability()[0] != 9:
        pytest.skip("the Gluon kernel is for Hopper (sm_90) only")
    from tritonblas.kernels.gluon_hopper import HAS_GLUON

    if not HAS_GLUON:
        pytest.skip("this Triton has no triton.experimental.gluon")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", variant, dtype_name, layout]
    rc = None
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=CHILD_TIMEOUT_S)
        stdout, stderr, hung, rc = proc.stdout, proc.stderr, False, proc.returncode
    except subprocess.TimeoutExpired as e:
        stdout = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        stderr = e.stderr.decode() if isinstance(e.stderr, bytes) else (e.stderr or "")
        hung = True
    rows = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
    started = [r["start"] for r in rows if "start" in r]
    done = [r for r in rows if "shape" in r]
    if hung:
        pytest.fail(f"{variant} {dtype_name} {layout}: no result after {CHILD_TIMEOUT_S} s (a hang?) on shape "
                    f"{started[-1] if started else '(before the first shape)'}; finished: "
                    f"{[r['shape'] for r in done]}\n{stderr[-2000:]}")
    bad = [r for r in done if not r["ok"]]
    assert not bad, "\n".join(f"{r['shape']}: {r['error']}" for r in bad)
    assert len(done) == len(SHAPES), f"child exited early (rc {rc}) after {started[-1:]}:\n{stderr[-3000:]}"


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--child":
        sys.exit(_child(*sys.argv[2:]))
    print(__doc__)
    sys.exit(2)

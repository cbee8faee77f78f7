"""fp16 intermediates and output overflow (RELIABILITY.md §6.9–10, §7), on every kernel kind.

Cancellation: A = 65504 (fp16 max) everywhere, B's column = +1 for the first half of K and −1 for
the second. The exact result is 0, but every partial sum past the first K-step exceeds 65504 (it
peaks at 65504·K/2), so an fp16 accumulator, an fp16 Stream-K/split-K partial or an fp16 fix-up sum
gives inf or NaN. (The old alternating ±1 pattern has partial sums of 0 after every even step, so
fp16 partials passed it.) CPU under the interpreter at K = 512; the GPU twin at K = 32768.

Output overflow: results that round past fp16's range (≥ 65520) must be ±inf exactly as torch's
(and the float64 reference rounded to fp16), results at 65504 must stay finite.
"""

from __future__ import annotations

import pytest
import torch

from _check import config, run_gemm

# (kind, config kwargs); 32-blocks, so K = 512 is 16 K-iterations and M = 64, N = 32 are 2 tiles.
KINDS = {
    "dp": dict(kind="dp"),
    "persistent": dict(kind="persistent", grid=1),
    "streamk_mixed": dict(kind="streamk", grid=3),  # 2 tiles < 3 programs: both split across programs
    "streamk_split": dict(kind="streamk", grid=5),
    "splitk2": dict(kind="splitk", split_k=2),      # the halves are +65504·256 and −65504·256
    "splitk3": dict(kind="splitk", split_k=3),
}


def _cfg(name: str, bk: int = 32):
    kw = dict(KINDS[name])
    return config(kw.pop("kind"), 32, 32, bk, **kw)


def cancel_operands(m: int, n: int, k: int, device: str):
    a = torch.full((m, k), 65504.0, dtype=torch.float16, device=device)
    sign = torch.ones(k, dtype=torch.float16, device=device)
    sign[k // 2:] = -1
    b = sign[:, None].expand(k, n).contiguous()
    return a, b


def overflow_operands(m: int, n: int, k: int, device: str):
    """A = 1; B's columns cycle through values whose K-sums are 65504 (finite), 65536 and −65536
    (±inf in fp16), 0, and a small exact value; rows of A alternate sign so ±inf both appear per column."""
    col = torch.tensor([65504.0 / k, 65536.0 / k, -65536.0 / k, 0.0, 3.0 / k], dtype=torch.float64)
    assert all(float(torch.tensor(v).half()) == v for v in col.tolist()), "column values must be exact in fp16"
    b = col.repeat(n // len(col) + 1)[:n].expand(k, n).to(torch.float16).contiguous().to(device)
    a = torch.ones((m, k), dtype=torch.float16, device=device)
    a[1::2] = -1
    return a, b


def _check_cancel(out, what):
    bad = out != 0
    assert not bad.any(), (f"{what}: {int(bad.sum())} nonzero, e.g. {out[bad][0].item()} "
                           "(an fp16 partial or accumulator overflowed)")


def _check_overflow(out, a, b, what):
    ref16 = torch.matmul(a.double(), b.double()).to(torch.float16).cpu()
    torch_out = torch.matmul(a.float(), b.float()).half().cpu()  # torch's CPU half matmul accumulates in fp32 too
    o = out.cpu()
    assert torch.isinf(ref16).any() and (ref16 == 65504).any(), "the test must hit both sides of the range"
    assert torch.equal(o, ref16), f"{what}: differs from the rounded reference at {(o != ref16).nonzero()[:3].tolist()}"
    assert torch.equal(o, torch_out), f"{what}: ±inf pattern differs from torch's"


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", sorted(KINDS))
def test_fp16_cancellation_half_plus_half_minus(name, device, h200):
    m, n, k = 64, 32, 512
    a, b = cancel_operands(m, n, k, device)
    out, plan = run_gemm(_cfg(name), a, b, h200)
    assert plan.config.kind.value == KINDS[name]["kind"]
    _check_cancel(out, name)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", sorted(KINDS))
def test_fp16_output_overflow_matches_torch(name, device, h200):
    m, n, k = 64, 32, 128
    a, b = overflow_operands(m, n, k, device)
    out, _ = run_gemm(_cfg(name), a, b, h200)
    _check_overflow(out, a, b, name)


def test_the_cancel_pattern_catches_fp16_partials():
    """The pattern fails an fp16 running sum (what the test is for), and the alternating one did not."""
    k = 512
    a, b = cancel_operands(1, 1, k, "cpu")
    terms = (a[0] * b[:, 0]).to(torch.float16)
    s = torch.zeros((), dtype=torch.float16)
    for t in terms:
        s = (s + t).to(torch.float16)
    assert not torch.isfinite(s) or s != 0
    alt = torch.ones(k, dtype=torch.float16)
    alt[1::2] = -1
    s = torch.zeros((), dtype=torch.float16)
    for t in (a[0] * alt).to(torch.float16):
        s = (s + t).to(torch.float16)
    assert s == 0  # the old pattern let fp16 sums through


# --- GPU twins (K = 32768, as RELIABILITY.md §7; the TMA variants too) -------------------------
GPU_KINDS = [(n, tma) for n in sorted(KINDS) for tma in (False, True)]


@pytest.mark.gpu
@pytest.mark.timeout(300)
@pytest.mark.parametrize("name, tma", GPU_KINDS)
def test_gpu_fp16_cancellation_k32768(name, tma, h200):
    m, n, k = 256, 128, 32768
    a, b = cancel_operands(m, n, k, "cuda")
    out, plan = run_gemm(_cfg(name, bk=64), a, b, h200, tma=tma)
    torch.cuda.synchronize()
    _check_cancel(out, f"{name} tma={tma}")


@pytest.mark.gpu
@pytest.mark.timeout(300)
@pytest.mark.parametrize("name, tma", GPU_KINDS)
def test_gpu_fp16_output_overflow_matches_torch(name, tma, h200):
    m, n, k = 256, 128, 4096
    a, b = overflow_operands(m, n, k, "cuda")
    out, _ = run_gemm(_cfg(name, bk=64), a, b, h200, tma=tma)
    torch.cuda.synchronize()
    _check_overflow(out, a, b, f"{name} tma={tma}")
    assert torch.equal(out, torch.matmul(a, b)), "differs from torch's cuBLAS ±inf pattern"

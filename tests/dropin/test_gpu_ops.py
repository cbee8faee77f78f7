"""The torch layer on a real GPU (RELIABILITY.md §6 items 9-13, 18-20, 26, 27; run with `-m gpu`).

Custom-op hygiene (opcheck, torch.compile with Inductor, no recompiles under dynamic shapes), CUDA
graphs (capture after warm-up + 100 replays with fresh inputs; capture before warm-up gives a clear
error and leaves the capture usable), deterministic mode, stream/event ordering, special values,
the fp16 65504 × ±1 cancellation, TF32 on/off (two GPUs: test_multi_gpu.py). Every test has a timeout.

The forced configs below are checked against the h200 profile's predicates by a CPU test
(``test_forced_configs_are_valid``), so a bad config shows up before the GPU run.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

import tritonblas
from tritonblas import dispatch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))  # tests/_check.py
from _check import assert_gemm_close, reference  # noqa: E402  (the one comparator, RELIABILITY §4.2)

gpu = pytest.mark.gpu


def _tc(kind, bm, bn, bk, w, s, **kw):
    from origami import TileConfig

    return TileConfig(kind, bm, bn, bk, w, s, **kw)


# (problem sizes, dtype) → forced configs covering every kernel kind
CANCEL = (128, 128, 32768)
CANCEL_CONFIGS = {
    "dp": _tc("dp", 128, 128, 64, 8, 3),
    "persistent": _tc("persistent", 64, 64, 64, 4, 3, grid=2),
    "streamk": _tc("streamk", 64, 64, 64, 4, 3, grid=6),
    "splitk": _tc("splitk", 64, 64, 64, 4, 3, split_k=8),
}
MID = (1000, 1000, 1000)
MID_CONFIGS = {
    "dp": _tc("dp", 128, 128, 64, 8, 3),
    "streamk": _tc("streamk", 128, 128, 64, 8, 3, grid=48),
    "splitk": _tc("splitk", 128, 128, 64, 8, 3, split_k=4),
}


def test_forced_configs_are_valid():
    """CPU: the GPU tests' forced configs pass the shared predicates on the h200 profile."""
    import origami
    from origami.space import violations

    hw = origami.load_profile("h200")
    for (m, n, k), dtype, cfgs in ((CANCEL, "fp16", CANCEL_CONFIGS), (MID, "bf16", MID_CONFIGS)):
        p = origami.GemmProblem(m, n, k, a_dtype=dtype, b_dtype=dtype, c_dtype=dtype)
        for name, cfg in cfgs.items():
            assert violations(cfg, p, hw) == [], (name, cfg.short())


def _rand(*shape, dtype=torch.bfloat16, device="cuda"):
    return torch.randn(shape, device=device, dtype=torch.float32).to(dtype)


def _check(out, a, b, **kw):
    ref, mag, _ = reference(a, b)
    assert_gemm_close(out, ref, mag, a.shape[-1], **kw)


@pytest.fixture(autouse=True)
def _fresh_stats():
    dispatch.reset_stats()
    yield


# --- custom-op hygiene -----------------------------------------------------------------------
@gpu
@pytest.mark.timeout(600)
def test_opcheck():
    import tritonblas.ops  # noqa: F401 - registers the torch.library ops

    f32 = torch.float32
    a = _rand(96, 80, dtype=f32).requires_grad_()
    b = _rand(80, 72, dtype=f32).requires_grad_()
    c = _rand(72, dtype=f32).requires_grad_()
    torch.library.opcheck(torch.ops.tritonblas.mm.default, (a, b, None, None))
    torch.library.opcheck(torch.ops.tritonblas.mm.default, (_rand(3, 40, 24), _rand(3, 24, 56), None, None))
    torch.library.opcheck(torch.ops.tritonblas.addmm.default, (c, a, b, 0.5, 2.0, None, None))
    out = torch.empty(96, 72, device="cuda", dtype=f32)
    torch.library.opcheck(torch.ops.tritonblas.gemm_out.default,
                          (a.detach(), b.detach(), out, None, 1.0, 0.0, None, None))


@gpu
@pytest.mark.timeout(600)
def test_compile_fullgraph_matches_eager():
    torch._dynamo.reset()
    a, b = _rand(300, 200), _rand(200, 250)
    mm = torch.compile(lambda a, b: tritonblas.matmul(a, b), fullgraph=True)
    assert torch.equal(mm(a, b), tritonblas.matmul(a, b))  # nothing fused: bitwise

    def block(x, w, bias, y):
        return tritonblas.matmul(torch.relu(tritonblas.linear(x, w, bias)), y)

    x, w, bias, y = _rand(4, 64, 200), _rand(128, 200), _rand(128), _rand(128, 96)
    compiled = torch.compile(block, fullgraph=True)
    got, want = compiled(x, w, bias, y), block(x, w, bias, y)
    # Inductor may lay out the relu output differently (another plan, another summation order)
    torch.testing.assert_close(got, want, rtol=2e-2, atol=2e-2 * want.abs().max().item())

    xg = x.float().requires_grad_()
    wg = w.float().requires_grad_()
    f = torch.compile(lambda x, w: tritonblas.linear(x, w).sum(), fullgraph=True)
    f(xg, wg).backward()
    gx, gw = xg.grad.clone(), wg.grad.clone()
    xg.grad = wg.grad = None
    tritonblas.linear(xg, wg).sum().backward()
    torch.testing.assert_close(gx, xg.grad, rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(gw, wg.grad, rtol=1e-5, atol=1e-4)


@gpu
@pytest.mark.timeout(600)
def test_compile_dynamic_no_recompiles():
    torch._dynamo.reset()
    f = torch.compile(lambda a, b: tritonblas.matmul(a, b), dynamic=True, fullgraph=True)
    b = _rand(64, 48)
    f(_rand(40, 64), b)
    with torch._dynamo.config.patch(error_on_recompile=True):
        for m in (17, 33, 64, 100, 129, 200, 255, 256, 511, 777):
            a = _rand(m, 64)
            torch.testing.assert_close(f(a, b), tritonblas.matmul(a, b), rtol=0, atol=0)


# --- CUDA graphs ----------------------------------------------------------------------------
def _warm(fn, n=3):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(n):
            fn()
    torch.cuda.current_stream().wait_stream(s)


@gpu
@pytest.mark.timeout(600)
@pytest.mark.parametrize("kind", ["model", *MID_CONFIGS])
def test_cuda_graph_capture_and_replay(kind):
    cfg = None if kind == "model" else MID_CONFIGS[kind]
    a, b = _rand(MID[0], MID[2]), _rand(MID[2], MID[1])
    call = lambda: tritonblas.matmul(a, b, config=cfg)  # noqa: E731
    _warm(call)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = call()
    for i in range(100):
        a.copy_(_rand(*a.shape))
        b.copy_(_rand(*b.shape))
        g.replay()
        eager = call()
        torch.cuda.synchronize()
        assert torch.equal(out, eager), f"replay {i}: differs from eager"
    _check(out, a, b)


@gpu
@pytest.mark.timeout(600)
def test_two_graphs_replayed_back_to_back():
    """Stream-K counters are re-armed inside each graph: two captures of the same call, alternated."""
    cfg = MID_CONFIGS["streamk"]
    a, b = _rand(MID[0], MID[2]), _rand(MID[2], MID[1])
    _warm(lambda: tritonblas.matmul(a, b, config=cfg))
    graphs, outs = [], []
    for _ in range(2):
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            outs.append(tritonblas.matmul(a, b, config=cfg))
        graphs.append(g)
    for i in range(20):
        a.copy_(_rand(*a.shape))
        graphs[i % 2].replay()
        graphs[(i + 1) % 2].replay()
        ref = tritonblas.matmul(a, b, config=cfg)
        torch.cuda.synchronize()
        assert torch.equal(outs[0], ref) and torch.equal(outs[1], ref), f"iteration {i}"


@gpu
@pytest.mark.timeout(300)
def test_capture_before_warm_up_raises_and_keeps_the_capture():
    x = _rand(64, 64, dtype=torch.float32)
    a, b = _rand(333, 221), _rand(221, 97)  # a shape no other test plans
    g = torch.cuda.CUDAGraph()
    _warm(lambda: x * 2)
    with torch.cuda.graph(g):
        y = x * 2
        with pytest.raises(RuntimeError, match="warm up first"):
            tritonblas.matmul(a, b)
        z = y + 1
    x.copy_(torch.randn_like(x))
    g.replay()
    torch.cuda.synchronize()
    assert torch.equal(z, x * 2 + 1), "the capture around the failed call must still be valid"
    assert dispatch.stats()["launches"] == 0
    _warm(lambda: tritonblas.matmul(a, b))
    g2 = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g2):
        out = tritonblas.matmul(a, b)
    g2.replay()
    torch.cuda.synchronize()
    _check(out, a, b)


# --- determinism ----------------------------------------------------------------------------
@gpu
@pytest.mark.timeout(600)
def test_deterministic_mode():
    shapes = [(512, 512, 512), (127, 263, 4099), (64, 64, 16384), (4096, 1000, 7000), (16, 4096, 4096)]
    old = torch.are_deterministic_algorithms_enabled()
    busy = torch.cuda.Stream()
    try:
        torch.use_deterministic_algorithms(True)
        cases = [(m, n, k, None) for m, n, k in shapes] + [(*MID, c) for c in MID_CONFIGS.values()]
        for m, n, k, cfg in cases:
            a, b = _rand(m, k), _rand(k, n)
            lp = dispatch.plan_for(a, b, config=cfg)
            assert lp.config.kind in dispatch.DETERMINISTIC_KINDS
            first = tritonblas.matmul(a, b, config=cfg)
            big = _rand(4096, 4096)
            for i in range(50):
                if i % 10 == 0:  # another stream occupies SMs meanwhile
                    busy.wait_stream(torch.cuda.current_stream())
                    with torch.cuda.stream(busy):
                        big @ big
                assert torch.equal(tritonblas.matmul(a, b, config=cfg), first), f"{m}x{n}x{k} {lp.config.short()} repeat {i}"
            torch.cuda.synchronize()
    finally:
        torch.use_deterministic_algorithms(old)


# --- streams and events ---------------------------------------------------------------------
@gpu
@pytest.mark.timeout(600)
def test_user_stream_and_event_ordering():
    s = torch.cuda.Stream()
    main = torch.cuda.current_stream()
    m, n, k = 512, 384, 1024
    a = torch.zeros(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.zeros(k, n, device="cuda", dtype=torch.bfloat16)
    for i in range(100):
        src_a, src_b = _rand(m, k), _rand(k, n)
        a.zero_()
        b.zero_()
        if i % 2 == 0:
            # inputs written late on the user stream: our kernel must run on that stream, after them
            s.wait_stream(main)
            with torch.cuda.stream(s):
                torch.cuda._sleep(1_000_000)
                a.copy_(src_a)
                b.copy_(src_b)
                out = tritonblas.matmul(a, b)
            main.wait_stream(s)
        else:
            # inputs written late on the main stream: the user stream waits on an event
            torch.cuda._sleep(1_000_000)
            a.copy_(src_a)
            b.copy_(src_b)
            ready = torch.cuda.Event()
            ready.record(main)
            with torch.cuda.stream(s):
                s.wait_event(ready)
                out = tritonblas.matmul(a, b)
                done = torch.cuda.Event()
                done.record(s)
            main.wait_event(done)
        ref = tritonblas.matmul(src_a, src_b)
        assert torch.equal(out, ref), f"iteration {i}: stream ordering broken"
    torch.cuda.synchronize()


# --- special values and precision -----------------------------------------------------------
@gpu
@pytest.mark.timeout(300)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_nan_inf_propagation(dtype):
    a, b = _rand(200, 150, dtype=dtype), _rand(150, 170, dtype=dtype)
    a[3, 5] = float("nan")
    b[7, 11] = float("inf")
    b[9, 20] = float("-inf")
    _check(tritonblas.matmul(a, b), a, b, tf32=dispatch.allow_tf32())
    c = torch.full((200, 170), float("nan"), device="cuda", dtype=dtype)
    r = tritonblas.addmm(c, a.nan_to_num(0.0), b.nan_to_num(0.0, 0.0, 0.0), beta=0)
    assert torch.isfinite(r).all(), "beta = 0 must not read C"


@gpu
@pytest.mark.timeout(300)
@pytest.mark.parametrize("kind", ["model", *CANCEL_CONFIGS])
def test_fp16_65504_cancellation_is_exactly_zero(kind):
    m, n, k = CANCEL
    a = torch.full((m, k), 65504.0, device="cuda", dtype=torch.float16)
    sign = torch.ones(k, device="cuda", dtype=torch.float16)
    sign[k // 2:] = -1  # +1 for the first half of K, -1 for the second: no partial sum is 0 early
    b = sign[:, None].expand(k, n).contiguous()
    out = tritonblas.matmul(a, b, config=None if kind == "model" else CANCEL_CONFIGS[kind])
    assert (out == 0).all(), f"{kind}: max |out| = {out.abs().max().item()} (fp16 overflow in an intermediate?)"


@gpu
@pytest.mark.timeout(300)
def test_tf32_on_and_off():
    a, b = _rand(512, 2048, dtype=torch.float32), _rand(2048, 384, dtype=torch.float32)
    old_flag, old_prec = torch.backends.cuda.matmul.allow_tf32, torch.get_float32_matmul_precision()
    try:
        torch.backends.cuda.matmul.allow_tf32 = False
        assert dispatch.plan_for(a, b).problem.a_dtype.value == "fp32"
        _check(tritonblas.matmul(a, b), a, b)  # IEEE bound: no silent TF32
        torch.backends.cuda.matmul.allow_tf32 = True
        assert dispatch.plan_for(a, b).problem.a_dtype.value == "tf32"
        _check(tritonblas.matmul(a, b), a, b, tf32=True)
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.set_float32_matmul_precision("high")
        assert dispatch.allow_tf32() and dispatch.plan_for(a, b).problem.a_dtype.value == "tf32"
        torch.set_float32_matmul_precision("highest")
        assert not dispatch.allow_tf32()
    finally:
        torch.set_float32_matmul_precision(old_prec)
        torch.backends.cuda.matmul.allow_tf32 = old_flag


# --- shapes and layouts at real sizes -------------------------------------------------------
@gpu
@pytest.mark.timeout(600)
def test_large_batch_and_ragged_sizes():
    a, b = _rand(65537, 22, 64, dtype=torch.float16), _rand(65537, 64, 22, dtype=torch.float16)
    out = torch.full((65537, 22, 22), float("nan"), device="cuda", dtype=torch.float16)
    tritonblas.bmm(a, b, out=out)
    ref = torch.bmm(a.float(), b.float())
    torch.testing.assert_close(out.float(), ref, rtol=2e-3, atol=2e-2)
    for size in (100, 1000):
        x, y = _rand(size + 1, size), _rand(size, size + 2)
        _check(tritonblas.matmul(x, y), x, y)


@gpu
@pytest.mark.timeout(300)
@pytest.mark.parametrize("offset", [1, 3, 7])
def test_misaligned_linear(offset):
    buf = _rand(300 * 257 + 8, dtype=torch.float16)
    x = buf[offset:offset + 300 * 257].view(300, 257)
    w = _rand(129, 257, dtype=torch.float16)
    bias = _rand(129, dtype=torch.float16)
    out = tritonblas.linear(x, w, bias)
    ref, mag, _ = reference(x, w.t(), bias=bias)
    assert_gemm_close(out, ref, mag, 257)


@gpu
@pytest.mark.timeout(300)
def test_autocast_linear():
    x, w, bias = _rand(64, 128, dtype=torch.float32), _rand(96, 128, dtype=torch.float32), _rand(96, dtype=torch.float32)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        ref = torch.nn.functional.linear(x, w, bias)
        with tritonblas.enable():
            ours = torch.nn.functional.linear(x, w, bias)
    assert ours.dtype == ref.dtype == torch.bfloat16
    assert dispatch.stats()["routed"] == 1 and dispatch.stats()["launches"] == 1
    torch.testing.assert_close(ours.float(), ref.float(), rtol=2e-2, atol=5e-2)


@gpu
@pytest.mark.timeout(600)
def test_demo_runs():
    from tritonblas import _demo_gpu

    assert _demo_gpu.run((("small", 256, 512, 384), ("ragged", 1000, 1057, 479))) == 0

"""GPU-only kernel tests (``pytest -m gpu tests/kernels`` on the H200): real sizes, fp8, TF32 on and
off, storage offsets 1–7, row strides 1000 and 511, operands over 2³¹ elements, Stream-K repeats,
CUDA-graph capture and replay, batch 65537, > 65535 tiles, and the shared-memory predicate against
the compiled kernels' ``metadata.shared``.

Sizes live in ``SIZE`` so the module can be smoke-run with small numbers under the interpreter.
"""

from __future__ import annotations

import itertools

import pytest
import torch

from _check import assert_gemm_close, check_gemm, config, operand, reference, run_gemm

pytestmark = pytest.mark.gpu

DEV = "cuda"
SIZE = dict(square=1000, skinny_m=256, skinny_n=512, long_k=8192, dtype_m=2048, dtype_n=1536, dtype_k=1000,
            big_rows=2 ** 31 // 4096 + 16, big_k=4096, big_cols=64, out_m=65536 + 16, out_n=32768, out_k=16,
            batch_out=32768, sk_m=1536, sk_k=4096, graph=1024, many_batch=65537, tiles_dim=8192)
BIG = dict(block=128)
TRANSPOSES = list(itertools.product((False, True), repeat=2))


def _cfg(kind: str, b: int | None = None):
    bm = b or BIG["block"]
    if kind in ("dp", "tma-dp"):
        return config("dp", bm, bm, 64, num_warps=4, num_stages=3, group_m=8)
    if kind in ("persistent", "tma-persistent", "flat-persistent"):
        return config("persistent", bm, bm, 64, grid=132, num_warps=4, num_stages=3, group_m=8)
    if kind in ("streamk", "tma-streamk"):
        return config("streamk", bm, bm, 64, grid=132, num_warps=4, num_stages=3, group_m=8)
    if kind in ("splitk", "tma-splitk"):
        return config("splitk", 64, 64, 128, split_k=4, num_warps=4, num_stages=3)
    raise ValueError(kind)


@pytest.mark.timeout(600)
@pytest.mark.parametrize("kind", ["dp", "persistent", "streamk", "splitk", "tma-dp", "tma-persistent", "tma-streamk",
                                  "tma-splitk", "flat-persistent"])
@pytest.mark.parametrize("ta, tb", TRANSPOSES)
def test_gpu_matrix_bf16(kind, ta, tb, h200):
    from tritonblas.plan import launch, make_plan, problem_from_tensors

    s = SIZE
    m, n, k = (s["skinny_m"], s["skinny_n"], s["long_k"]) if kind.endswith("splitk") else (s["square"],) * 3
    if kind.startswith(("tma", "flat")):
        m, n, k = m + 8, n + 24, k + 8  # ragged tiles, 16-byte-aligned rows (TMA-legal)
    a = operand(m, k, torch.bfloat16, ta, DEV)
    b = operand(k, n, torch.bfloat16, tb, DEV)
    if kind == "flat-persistent":
        out = torch.full((m, n), float("nan"), device=DEV).bfloat16()
        plan = make_plan(_cfg(kind), problem_from_tensors(a, b, out), h200, tma=True, flat=True)
        assert plan.kernel_name == "gemm_tma_flat_kernel"
        launch(plan, a, b, out)
    else:
        out, plan = run_gemm(_cfg(kind), a, b, h200, tma=kind.startswith("tma"))
        assert plan.tma == kind.startswith("tma")
    check_gemm(out, a, b, what=f"{kind} {ta}{tb}")


@pytest.mark.timeout(600)
@pytest.mark.parametrize("shape", [(1536, 3584, 8192), (1000, 1000, 4096)])
def test_gpu_tma_streamk_deterministic(shape, h200):
    """Stream-K TMA at the wave-quantised benchmark shape (168 tiles of 128×256 on 132 programs):
    correct, bitwise equal over 5 runs, counters re-armed."""
    m, n, k = shape
    a = operand(m, k, torch.bfloat16, False, DEV)
    b = operand(k, n, torch.bfloat16, False, DEV)
    cfg = config("streamk", 128, 256, 64, grid=132, num_warps=8, num_stages=3, group_m=8)
    first, plan = run_gemm(cfg, a, b, h200, tma=True)
    assert plan.kernel_name == "gemm_streamk_tma_kernel"
    check_gemm(first, a, b, what=f"tma streamk {shape}")
    for _ in range(4):
        again, _ = run_gemm(cfg, a, b, h200, tma=True)
        assert torch.equal(again.view(torch.int16), first.view(torch.int16))


@pytest.mark.timeout(600)
def test_gpu_tma_splitk_gemv(h200):
    a = operand(1, 8192, torch.bfloat16, False, DEV)
    b = operand(8192, 8192, torch.bfloat16, False, DEV)
    out, plan = run_gemm(config("splitk", 16, 64, 128, split_k=4, num_warps=4, num_stages=4), a, b, h200, tma=True)
    assert plan.kernel_name == "gemm_splitk_tma_kernel"
    check_gemm(out, a, b, what="tma splitk gemv")


@pytest.mark.timeout(600)
@pytest.mark.parametrize("kind", ["dp", "streamk", "splitk"])
@pytest.mark.parametrize("case", ["fp16-NN", "fp16-TT", "fp32-ieee", "fp32-tf32", "fp8-rowcol-NT", "fp8-tensor-NN",
                                  "fp8-fastacc-NT"])
def test_gpu_dtypes(kind, case, h200):
    s = SIZE
    m, n, k = s["dtype_m"], s["dtype_n"], s["dtype_k"]
    if kind == "splitk":  # split-K is only valid while the tiles leave compute units idle
        m, n = s["skinny_m"], s["skinny_n"]
    kw, tf32, fp8_mma = {}, False, False
    if case.startswith("fp16"):
        ta = tb = case.endswith("TT")
        a, b = operand(m, k, torch.float16, ta, DEV), operand(k, n, torch.float16, tb, DEV)
    elif case.startswith("fp32"):
        a, b = operand(m, k, torch.float32, False, DEV), operand(k, n, torch.float32, False, DEV)
        tf32 = case.endswith("tf32")
        kw["allow_tf32"] = tf32
    else:
        a = operand(m, k, torch.float8_e4m3fn, False, DEV)
        b = operand(k, n, torch.float8_e4m3fn, case.endswith("NT"), DEV)
        if "rowcol" in case:
            kw.update(scale_a=torch.rand(m, device=DEV) + 0.5, scale_b=torch.rand(n, device=DEV) + 0.5)
        else:
            kw.update(scale_a=torch.tensor(0.25, device=DEV), scale_b=torch.tensor(3.0, device=DEV))
        kw["fp8_fast_accum"] = "fastacc" in case
        fp8_mma = True
    out_dtype = torch.bfloat16 if a.dtype in (torch.float8_e4m3fn, torch.float8_e5m2) else a.dtype
    out, _ = run_gemm(_cfg(kind), a, b, h200, out_dtype=out_dtype, **kw)
    epi = {key: v for key, v in kw.items() if key.startswith("scale")}
    ref, mag, _ = reference(a, b, **epi)
    # fast fp8 accumulation is not fp32 accumulation: bound it by the rel. Frobenius error only
    if kw.get("fp8_fast_accum"):
        rel = ((out.double() - ref).norm() / ref.norm()).item()
        assert rel < 2e-2, rel
        return
    assert_gemm_close(out, ref, mag, k, tf32=tf32, fp8_mma=fp8_mma, what=f"{kind} {case}")


@pytest.mark.timeout(600)
@pytest.mark.parametrize("kind", ["dp", "streamk"])
def test_gpu_storage_offsets(kind, h200):
    n = SIZE["square"]
    for offset in range(1, 8):
        def at(rows, cols):
            return torch.randn(rows * cols + offset, device=DEV).bfloat16()[offset:].view(rows, cols)
        a, b = at(n, n), at(n, n)
        out = at(n, n).fill_(float("nan"))
        run_gemm(_cfg(kind), a, b, h200, out=out, tma=True)
        check_gemm(out, a, b, what=f"{kind} offset {offset}")


@pytest.mark.timeout(600)
@pytest.mark.parametrize("ld", [1000, 511])
@pytest.mark.parametrize("kind", ["tma-dp", "dp", "streamk"])
def test_gpu_row_strides(ld, kind, h200):
    """Row strides of 1000 (16-byte aligned: TMA legal) and 511 (2-byte: TMA must fall back)."""
    from tritonblas.plan import resolve_kernel_name

    m, k = SIZE["square"], ld
    a = operand(m, k, torch.bfloat16, False, DEV)                       # row stride = ld
    b = torch.randn(k, ld, device=DEV).bfloat16()[:, : ld - 3]          # row stride ld, N = ld - 3
    out = torch.full((m, ld), float("nan"), device=DEV).bfloat16()[:, : ld - 3]
    _, plan = run_gemm(_cfg(kind), a, b, h200, out=out, tma=kind.startswith("tma"))
    used = resolve_kernel_name(plan, a, b)
    if ld == 511:
        assert used != "gemm_tma_kernel"
    check_gemm(out, a, b, what=f"{kind} ld {ld} ({used})")


def _check_rows(out, a, b, rows, what):
    ref = a[rows].double() @ b.double()
    mag = a[rows].double().abs() @ b.double().abs()
    assert_gemm_close(out[rows], ref, mag, a.shape[-1], what=what)


@pytest.mark.timeout(600)
def test_gpu_operands_over_2_31_elements(h200):
    s = SIZE
    cfg = config("dp", 128, 64, 64, num_warps=4, num_stages=3)
    # A with M·K > 2^31
    a = operand(s["big_rows"], s["big_k"], torch.bfloat16, False, DEV)
    b = operand(s["big_k"], s["big_cols"], torch.bfloat16, False, DEV)
    assert a.numel() > 2 ** 31 or DEV != "cuda"
    out, _ = run_gemm(cfg, a, b, h200)
    m = a.shape[0]
    for lo in (0, m // 2 - 64, m - 128):
        _check_rows(out, a, b, slice(lo, lo + 128), f"A > 2^31, rows {lo}")
    del a, out
    # B with K·N > 2^31 (transposed view: K contiguous)
    bt = operand(s["big_k"], s["big_rows"], torch.bfloat16, True, DEV)
    a2 = operand(s["big_cols"], s["big_k"], torch.bfloat16, False, DEV)
    out, _ = run_gemm(cfg, a2, bt, h200)
    n = bt.shape[1]
    for lo in (0, n // 2 - 64, n - 64):
        cols = slice(lo, lo + 64)
        ref = a2.double() @ bt[:, cols].double()
        mag = a2.double().abs() @ bt[:, cols].double().abs()
        assert_gemm_close(out[:, cols], ref, mag, s["big_k"], what=f"B > 2^31, cols {lo}")
    del bt, out
    # out with M·N > 2^31
    a3 = operand(s["out_m"], s["out_k"], torch.bfloat16, False, DEV)
    b3 = operand(s["out_k"], s["out_n"], torch.bfloat16, False, DEV)
    out, _ = run_gemm(config("dp", 128, 128, 16, num_warps=4, num_stages=2), a3, b3, h200)
    for lo in (0, s["out_m"] // 2, s["out_m"] - 128):
        _check_rows(out, a3, b3, slice(lo, lo + 128), f"out > 2^31, rows {lo}")
    del a3, b3, out
    # batch · M · N > 2^31 (int64 batch offsets)
    a4 = operand(s["batch_out"], s["out_k"], torch.bfloat16, False, DEV, batch=3)
    b4 = operand(s["out_k"], s["batch_out"], torch.bfloat16, False, DEV)
    out, _ = run_gemm(config("dp", 128, 128, 16, num_warps=4, num_stages=2), a4, b4, h200)
    last = slice(s["batch_out"] - 128, s["batch_out"])
    ref = a4[2, last].double() @ b4.double()
    assert_gemm_close(out[2, last], ref, a4[2, last].double().abs() @ b4.double().abs(), s["out_k"],
                      what="batch·M·N > 2^31, last batch")


@pytest.mark.timeout(600)
@pytest.mark.parametrize("grid", [132, 131, 66])
def test_gpu_streamk_50_repeats_bitwise(grid, h200):
    s = SIZE
    a = operand(s["sk_m"], s["sk_k"], torch.bfloat16, False, DEV)
    b = operand(s["sk_k"], s["sk_m"], torch.bfloat16, False, DEV)
    cfg = config("streamk", 128, 128, 64, grid=grid, num_warps=4, num_stages=3)
    first, plan = run_gemm(cfg, a, b, h200)
    assert plan.counters > 0  # some tiles really are split
    check_gemm(first, a, b, what=f"streamk grid {grid}")
    side = torch.cuda.Stream() if DEV == "cuda" else None
    x = torch.randn(4096, 4096, device=DEV) if side is not None else None
    for i in range(50):
        if side is not None:
            with torch.cuda.stream(side):
                x @ x  # another stream occupying SMs
        again, _ = run_gemm(cfg, a, b, h200)
        assert torch.equal(again.view(torch.int16), first.view(torch.int16)), f"repeat {i}"
    if side is not None:
        torch.cuda.synchronize()


@pytest.mark.timeout(600)
@pytest.mark.parametrize("kind", ["dp", "streamk", "splitk"])
def test_gpu_cuda_graph_replay(kind, h200):
    """Capture (twice), replay 100x with fresh inputs; every replay equals eager bitwise."""
    from tritonblas.plan import launch, make_plan, problem_from_tensors

    n = SIZE["graph"]
    cfg = {"dp": config("dp", 128, 128, 64, num_warps=4, num_stages=3),
           "streamk": config("streamk", 128, 128, 64, grid=132 - 7, num_warps=4, num_stages=3),
           "splitk": config("splitk", 128, 128, 64, split_k=3, num_warps=4, num_stages=3)}[kind]
    a = operand(n, n + 8, torch.bfloat16, False, DEV)
    b = operand(n + 8, n - 8, torch.bfloat16, False, DEV)
    out = torch.empty(n, n - 8, device=DEV, dtype=torch.bfloat16)
    plan = make_plan(cfg, problem_from_tensors(a, b, out), h200)
    launch(plan, a, b, out)  # warm-up: compile outside capture
    torch.cuda.synchronize()
    graphs = []
    for _ in range(2):
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            launch(plan, a, b, out)
        graphs.append(g)
    eager = torch.empty_like(out)
    for i in range(100):
        a.copy_(torch.randn_like(a, dtype=torch.float32))
        b.copy_(torch.randn_like(b, dtype=torch.float32))
        graphs[i % 2].replay()
        launch(plan, a, b, eager)
        torch.cuda.synchronize()
        assert torch.equal(out.view(torch.int16), eager.view(torch.int16)), f"replay {i}"
    check_gemm(out, a, b, what=f"{kind} graph")


@pytest.mark.timeout(600)
def test_gpu_batch_65537(h200):
    bsz = SIZE["many_batch"]
    a = operand(22, 64, torch.float16, False, DEV, batch=bsz)
    b = operand(64, 22, torch.float16, False, DEV, batch=bsz)
    out, plan = run_gemm(config("dp", 32, 32, 64), a, b, h200)
    assert plan.grid == (bsz,)
    check_gemm(out, a, b, what="batch 65537")


@pytest.mark.timeout(600)
def test_gpu_more_than_65535_tiles(h200):
    n = SIZE["tiles_dim"]
    a = operand(n, 32, torch.float16, False, DEV)
    b = operand(32, n, torch.float16, False, DEV)
    out, plan = run_gemm(config("dp", 32, 32, 32), a, b, h200)
    assert plan.grid[0] > 65535 or DEV != "cuda"
    for lo in (0, n // 2, n - 32):
        _check_rows(out, a, b, slice(lo, lo + 32), f"rows {lo}")


@pytest.mark.timeout(600)
@pytest.mark.parametrize("kind", ["dp", "streamk"])
def test_gpu_ragged_dims(kind, h200):
    for m, n, k in [(1, 127, 129), (129, 1, 257), (257, 1009, 127), (1009, 129, 1), (127, 257, 1009)]:
        a = operand(m, k, torch.bfloat16, False, DEV)
        b = operand(k, n, torch.bfloat16, True, DEV)
        out, _ = run_gemm(_cfg(kind, 64), a, b, h200)
        check_gemm(out, a, b, what=f"{kind} {m}x{n}x{k}")


SMEM_SAMPLE = [
    ("dp", 128, 256, 64, 8, 3, torch.bfloat16), ("dp", 128, 128, 64, 4, 4, torch.bfloat16),
    ("dp", 64, 64, 128, 4, 5, torch.bfloat16), ("dp", 256, 128, 64, 8, 3, torch.float16),
    ("dp", 128, 128, 32, 4, 2, torch.float32), ("dp", 64, 128, 128, 4, 4, torch.float8_e4m3fn),
    ("persistent", 128, 256, 64, 8, 3, torch.bfloat16), ("streamk", 128, 128, 64, 4, 3, torch.bfloat16),
    ("splitk", 64, 64, 128, 4, 4, torch.bfloat16), ("dp", 16, 64, 128, 4, 5, torch.bfloat16),
]


@pytest.mark.timeout(900)
def test_gpu_smem_predicate_covers_compiled_kernels(h200, capsys):
    """origami.space.smem_bytes (NVIDIA: num_stages·(A + B) tiles) must be ≥ what Triton allocates,
    except the TMA kernel's 8 bytes of mbarrier per stage (test_aot_compile.py found them on CPU)."""
    from origami.space import smem_bytes
    from tritonblas.plan import make_plan, prepare_launch, problem_from_tensors

    rows, under = [], []
    for kind, bm, bn, bk, warps, stages, dtype in SMEM_SAMPLE:
        extra = dict(grid=132) if kind in ("persistent", "streamk") else dict(split_k=2) if kind == "splitk" else {}
        cfg = config(kind, bm, bn, bk, num_warps=warps, num_stages=stages, **extra)
        mn = 256 if kind == "splitk" else 1000  # split-K needs fewer tiles than compute units
        a = operand(mn, 1000, dtype, False, DEV)
        b = operand(1000, mn, dtype, True, DEV)
        out = torch.empty(mn, mn, device=DEV, dtype=torch.bfloat16)
        for tma in (False, True):
            plan = make_plan(cfg, problem_from_tensors(a, b, out), h200, tma=tma)
            if tma and not plan.tma:
                continue
            compiled = prepare_launch(plan, a, b, out).compile()
            if compiled is None:
                continue
            need, have = smem_bytes(cfg, plan.problem, h200), compiled.metadata.shared
            rows.append(f"{cfg.short()} {dtype} tma={tma}: predicate {need} compiled {have}")
            if tma:
                need += 8 * stages
            if have > need:
                under.append(rows[-1])
    with capsys.disabled():
        print("\nsmem predicate vs compiled:\n  " + "\n  ".join(rows))
    assert not under, "smem_bytes underestimates:\n" + "\n".join(under)


@pytest.mark.timeout(600)
def test_gpu_prepared_launches_replayed_like_the_sweep_stay_correct(h200):
    """The sweep's timing pattern, config after config on one shape in one process: each launch
    prepared once outside any capture (bound to the stream's cached workspace and counters), run
    once, then captured many times into a CUDA graph on a side stream (as
    ``triton.testing.do_bench_cudagraph`` does) and replayed; the output, NaN-filled first, must be
    right after the replays, and the shared counters zero. Added after the H200 sweep of 2026-11-30
    recorded 9.7 us for Stream-K 128x128x64 grid 132 on 128x128x65536 (one tile, 132 contributors),
    which cannot include the fix-up's 131 partial reads, while compare.py timed the same config at
    131 us: one of the two runs did not do what the kernel promises."""
    from tritonblas.plan import make_plan, prepare_launch, problem_from_tensors

    m, n, k = 128, 128, SIZE["long_k"] * 8
    a = operand(m, k, torch.bfloat16, False, DEV)
    b = operand(k, n, torch.bfloat16, False, DEV)
    out = torch.empty(m, n, device=DEV, dtype=torch.bfloat16)
    cfgs = [config("splitk", 64, 64, 128, split_k=16, num_warps=4, num_stages=4),
            config("streamk", 64, 64, 128, grid=132, num_warps=4, num_stages=4, group_m=8),
            config("splitk", 32, 64, 128, split_k=16, num_warps=4, num_stages=3),
            config("streamk", 128, 128, 64, grid=132, num_warps=4, num_stages=4, group_m=8),
            config("streamk", 128, 128, 32, grid=132, num_warps=8, num_stages=4, group_m=8),
            config("streamk", 32, 64, 128, grid=264, num_warps=4, num_stages=4, group_m=8)]
    for tma in (True, False):
        for cfg in cfgs:
            plan = make_plan(cfg, problem_from_tensors(a, b, out), h200, tma=tma)
            fn = prepare_launch(plan, a, b, out).run
            out.fill_(float("nan"))
            fn()
            torch.cuda.synchronize()
            check_gemm(out, a, b, what=f"{cfg.short()} tma={tma} eager")
            out.fill_(float("nan"))
            side = torch.cuda.Stream()
            with torch.cuda.stream(side):
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    for _ in range(20):
                        fn()
                for _ in range(3):
                    g.replay()
            torch.cuda.synchronize()
            check_gemm(out, a, b, what=f"{cfg.short()} tma={tma} after graph replays")
    from tritonblas import plan as _plan

    _, counters = _plan.workspace(out.device, 0, 0)
    assert int(torch.count_nonzero(counters)) == 0, "a launch left its counters armed"

"""Alignment staging: operands under 16-byte alignment copied into padded buffers for a TMA launch.

The predicate (``plan.align_staging_for``), the dispatcher's decision (``dispatch._align_staged``
through origami's cost policy ``origami.staging.staged_pick``: the model's aligned pick plus the copy
against its unaligned pick; the policy itself is tested in tests/origami/test_staging.py), and launches of forced staged plans on small ragged unaligned problems under
the interpreter, against the float64 reference with the bounds of RELIABILITY.md §4.2. The GPU test
(``-m gpu``) runs real sizes through ``tritonblas.matmul``.
"""

from __future__ import annotations

import dataclasses

import pytest
import torch

from _check import check_gemm, config, operand
from tritonblas import dispatch
from origami.staging import STAGED_HOST_NS, staging_copy_ns
from tritonblas.plan import (TMA_KERNELS, operand_order, _tma_ok, align_staging_for, make_plan, prepare_launch,
                             problem_from_tensors, reads_as_is)


def _problem(m, n, k, dtype="bf16", align=2, **kw):
    from origami import GemmProblem

    return GemmProblem(m, n, k, a_dtype=dtype, b_dtype=dtype, c_dtype=dtype, align_bytes=align, **kw)


# --- the predicate --------------------------------------------------------------------------
def test_align_staging_for_picks_the_unaligned_operands():
    """Every GPU (TMA descriptors on NVIDIA, the pointer kernels' vector loads on AMD): the dispatcher's plans on
    both vendors are tested below."""
    p = _problem(4097, 4097, 4097)
    assert align_staging_for(p, (2, 2), (0, 0)) == (True, True)
    assert align_staging_for(p, (2, 16), (0, 1)) == (True, False)
    assert align_staging_for(p, (16, 4), (1, 0)) == (False, True)
    assert align_staging_for(p, (16, 16), (0, 0)) == (False, False)
    assert align_staging_for(p, (2, 2), (2, 0)) == (False, True)  # contiguous along neither dim: not staged
    assert align_staging_for(dataclasses.replace(p, k=0), (2, 2), (0, 0)) == (False, False)


def test_reads_as_is_only_aligned_contiguous_operands():
    p = _problem(2048, 50257, 1024, b_layout="T")
    assert reads_as_is(p, (16, 16), (0, 1))
    assert reads_as_is(p, (16, 16), (1, 0))
    assert not reads_as_is(p, (16, 2), (0, 1))  # an unaligned operand: alignment staging's case
    assert not reads_as_is(p, (4, 16), (0, 1))
    assert not reads_as_is(p, (16, 16), (2, 1))  # contiguous along neither dim
    assert not reads_as_is(dataclasses.replace(p, k=0), (16, 16), (0, 1))


# --- the dispatcher's decision (nothing is launched here: plan_for only plans) --------------------
@pytest.fixture
def interpret(monkeypatch, device):
    """Where the plans are made: the GPU's tensors, or CPU tensors under the interpreter (set here; on a GPU
    machine the kernels were built for the GPU, and CPU tensors are refused whatever the variable says)."""
    if device == "cpu":
        monkeypatch.setenv("TRITON_INTERPRET", "1")
    dispatch.clear_caches()
    yield device
    dispatch.clear_caches()


def _plan_for(m, n, k, profile, *, interpret):
    a = torch.empty(m, k, dtype=torch.bfloat16, device=interpret)
    b = torch.empty(k, n, dtype=torch.bfloat16, device=interpret)
    return dispatch.plan_for(a, b, profile=profile), a, b


@pytest.mark.parametrize("shape, want", [((4097, 4097, 4097), (True, True)), ((32768, 1000, 3333), (True, False)),
                                         ((32768, 1057, 1024), (False, True))])
def test_dispatcher_stages_large_unaligned_problems(shape, want, interpret, h200):
    """The H200 ran these at 100-130 TFLOP/s unaligned (ours and cuBLAS alike); the model predicts the
    aligned TMA kernels with the copies well under that, so the plan stages the unaligned operands and
    describes the aligned problem the kernel runs."""
    import origami

    lp, a, b = _plan_for(*shape, h200, interpret=interpret)
    assert (lp.stage_a, lp.stage_b) == want
    assert lp.kernel_name in TMA_KERNELS and lp.problem.align_bytes == 16
    unaligned = dispatch.GemmKey.from_tensors(a, b, torch.empty(shape[0], shape[1], dtype=torch.bfloat16,
                                                                device=interpret), profile=h200).problem()
    assert unaligned.align_bytes < 16
    staged_ns = origami.select(lp.problem, h200).latency_ns + staging_copy_ns(unaligned, h200, want)
    assert max(staged_ns, STAGED_HOST_NS) < origami.select(unaligned, h200).latency_ns
    text = dispatch.explain(a, b, profile=h200)
    assert "staging:" in text and "16-byte-aligned" in text and lp.kernel_name in text


def test_dispatcher_does_not_stage_short_or_aligned_problems(interpret, h200, mi300x):
    import origami

    lp, a, b = _plan_for(255, 255, 255, h200, interpret=interpret)  # predicted far under STAGED_HOST_NS
    c = torch.empty(255, 255, dtype=torch.bfloat16, device=interpret)
    assert origami.select(dispatch.GemmKey.from_tensors(a, b, c, profile=h200).problem(), h200).latency_ns < STAGED_HOST_NS
    assert not (lp.stage_a or lp.stage_b) and lp.problem.align_bytes < 16
    lp, a, b = _plan_for(1025, 1025, 1025, h200, interpret=interpret)  # ~40 us: under the staged launch's host time
    assert not (lp.stage_a or lp.stage_b)
    lp, _, _ = _plan_for(4096, 4096, 4096, h200, interpret=interpret)  # aligned: nothing to stage
    assert not (lp.stage_a or lp.stage_b)


@pytest.mark.parametrize("profile", ["mi300x", "mi355x"])
def test_dispatcher_stages_large_unaligned_problems_on_amd(profile, interpret):
    """AMD has no TMA, but its pointer kernels load a 2-byte-aligned operand with short loads (gfx942: no dwordx4,
    tests/kernels/test_aot_compile.py): the plan copies both operands into padded buffers and runs the aligned
    problem's pointer kernel when origami predicts that pays (the AMD profiles' unaligned_penalty is an estimate);
    a problem predicted under the staged launch's host time stays unstaged."""
    import origami

    hw = origami.load_profile(profile)
    lp, a, b = _plan_for(4097, 4097, 4097, hw, interpret=interpret)
    assert (lp.stage_a, lp.stage_b) == (True, True) and lp.kernel_name not in TMA_KERNELS and not lp.tma
    assert lp.problem.align_bytes == 16
    unaligned = dispatch.GemmKey.from_tensors(a, b, torch.empty(4097, 4097, dtype=torch.bfloat16, device=interpret),
                                              profile=hw).problem()
    staged_ns = origami.select(lp.problem, hw).latency_ns + staging_copy_ns(unaligned, hw, (True, True))
    assert max(staged_ns, STAGED_HOST_NS) < origami.select(unaligned, hw).latency_ns
    assert "staging: a and b copied into 16-byte-aligned buffers" in dispatch.explain(a, b, profile=hw)
    lp, _, _ = _plan_for(255, 255, 255, hw, interpret=interpret)
    assert not (lp.stage_a or lp.stage_b) and lp.problem.align_bytes < 16


@pytest.mark.parametrize("profile", ["h200", "h100"])
def test_only_out_unaligned_plans_the_aligned_problem_with_nothing_copied(profile, interpret):
    """GPT-2's lm_head: x (2048, 1024) @ W.T with W (50257, 1024): a and b aligned, the logits' rows ragged.
    The plan is the aligned problem's TMA pick, nothing staged, where the unaligned problem's pick is the
    pointer kernel with register-staged loads, predicted ~7x slower."""
    import origami

    hw = origami.load_profile(profile)
    a = torch.empty(2048, 1024, dtype=torch.bfloat16, device=interpret)
    b = torch.empty(50257, 1024, dtype=torch.bfloat16, device=interpret).t()
    lp = dispatch.plan_for(a, b, profile=hw)
    assert lp.kernel_name in TMA_KERNELS and lp.tma and not (lp.stage_a or lp.stage_b)
    assert lp.problem.align_bytes == 16 and lp.config.kind.value != "ws"
    key = dispatch.GemmKey.from_tensors(a, b, torch.empty(2048, 50257, dtype=torch.bfloat16, device=interpret),
                                        profile=hw)
    assert key.ab_align == (16, 16) and key.align < 16
    unaligned = key.problem()
    assert origami.select(lp.problem, origami.space.without_ws(hw)).latency_ns < origami.select(unaligned, hw).latency_ns
    assert "unaligned out only: a and b read through TMA as they are" in dispatch.explain(a, b, profile=hw)


def test_only_out_unaligned_on_amd_plans_the_aligned_problem(interpret, mi300x):
    """AMD's pointer kernels read a and b at their own alignment class (plan.align_elements): the plan is the
    aligned problem's pick, nothing staged, and the launch hints 16-byte vectors for a and b, 1 element for out."""
    import origami

    a = torch.empty(2048, 1024, dtype=torch.bfloat16, device=interpret)
    b = torch.empty(50257, 1024, dtype=torch.bfloat16, device=interpret).t()
    out = torch.empty(2048, 50257, dtype=torch.bfloat16, device=interpret)
    lp = dispatch.plan_for(a, b, profile=mi300x)
    assert lp.kernel_name not in TMA_KERNELS and not (lp.stage_a or lp.stage_b)
    assert lp.problem.align_bytes == 16
    unaligned = dispatch.GemmKey.from_tensors(a, b, out, profile=mi300x).problem()
    assert origami.select(lp.problem, mi300x).latency_ns < origami.select(unaligned, mi300x).latency_ns
    text = dispatch.explain(a, b, profile=mi300x)
    assert "unaligned out only: a and b read with 16-byte vector loads" in text and "TMA" not in text
    kw = prepare_launch(lp, a, b, out).kwargs
    assert (kw["A_ALIGN"], kw["B_ALIGN"], kw["OUT_ALIGN"]) == (8, 8, 1)
    assert (kw["A_EDGE"], kw["B_EDGE"], kw["OUT_EDGE"]) == (8, 8, 1)


def test_forced_configs_are_not_staged(interpret, h200):
    a = torch.empty(4097, 4097, dtype=torch.bfloat16, device=interpret)
    cfg = config("dp", 128, 128, 32, num_warps=8, num_stages=3, group_m=8)
    lp = dispatch.plan_for(a, a, profile=h200, config=cfg)
    assert not (lp.stage_a or lp.stage_b) and lp.problem.align_bytes < 16


# --- launches under the interpreter (staging forced on small problems) ---------------------------
def _unaligned(rows, cols, dtype, transposed, device):
    """A random operand whose leading stride is odd (2-byte aligned for 16-bit dtypes): a column
    slice of a wider tensor."""
    src = operand(rows + (1 if transposed else 0), cols + (0 if transposed else 1), dtype, transposed, device)
    t = src[:rows, :cols]
    assert operand_order(t) == (1 if transposed else 0) and not _tma_ok(t, operand_order(t))
    return t


def _staged_plan(cfg, a, b, out, hw, stage):
    p = problem_from_tensors(a, b, out)
    assert p.align_bytes < 16
    lp = make_plan(cfg, dataclasses.replace(p, align_bytes=16), hw, tma=True, stage=stage)
    assert lp.tma and (lp.stage_a, lp.stage_b) == stage
    return lp


@pytest.mark.timeout(180)
@pytest.mark.parametrize("kind, kw", [("dp", {}), ("streamk", dict(grid=3)), ("splitk", dict(split_k=2))])
@pytest.mark.parametrize("layouts", ["NN", "TN", "NT"])
def test_staged_unaligned_operands_match_reference(kind, kw, layouts, device, h200):
    """Ragged M, N, K with odd leading strides: both operands copied into padded buffers of their own
    major, bound through TMA descriptors; the caller's tensors are read, never written, and a re-run
    copies their current values."""
    m, n, k = 37, 29, 75
    a = _unaligned(m, k, torch.bfloat16, layouts[0] == "T", device)
    b = _unaligned(k, n, torch.bfloat16, layouts[1] == "T", device)
    out = torch.full((m, n), float("nan"), dtype=torch.bfloat16, device=device)
    lp = _staged_plan(config(kind, **kw), a, b, out, h200, (True, True))
    _check_both_staged(lp, a, b, out, f"aligned-staged {kind} {layouts}")


def _check_both_staged(lp, a, b, out, what: str):
    """Launch ``lp`` with a and b both staged: each bound (to the kernel, or as its TMA descriptor's base) to a
    padded 16-byte-aligned copy of its own major, the caller's tensors read, never written, and a re-run copying
    their current values; both results against the float64 reference. Returns the prepared launch."""
    a_before, b_before = a.clone(), b.clone()
    prepared = prepare_launch(lp, a, b, out)
    assert prepared.kernel.fn.__name__ == lp.kernel_name and len(prepared.staged) == 2
    for pos, user in ((0, a), (1, b)):
        arg = prepared.args[pos]
        bound = arg if isinstance(arg, torch.Tensor) else arg.base
        assert bound.data_ptr() != user.data_ptr() and operand_order(bound) == operand_order(user) and _tma_ok(bound, operand_order(bound))
        assert (max(bound.stride()) * bound.element_size()) % 16 == 0  # the padded leading dimension
    prepared.run()
    assert torch.equal(a, a_before) and torch.equal(b, b_before)
    check_gemm(out, a, b, what=what)
    a.mul_(-1.5)
    prepared.run()
    check_gemm(out, a, b, what=f"{what}, re-run")
    return prepared


@pytest.mark.timeout(180)
@pytest.mark.parametrize("kind, kw", [("dp", {}), ("persistent", dict(grid=3)), ("streamk", dict(grid=3)),
                                      ("splitk", dict(split_k=2))])
@pytest.mark.parametrize("layouts", ["NN", "TN"])
def test_staged_pointer_kernels_match_reference(kind, kw, layouts, device, mi300x):
    """Alignment staging without TMA (AMD's plans): both operands copied into padded buffers of their own major
    and bound to the pointer kernel, whose hints are then 16-byte vectors for a and b; the caller's tensors are
    read, never written, and a re-run copies their current values (on a GPU this runs on NVIDIA's pointer
    kernels: the launch drops the AMD-only options)."""
    m, n, k = 37, 29, 75
    a = _unaligned(m, k, torch.bfloat16, layouts[0] == "T", device)
    b = _unaligned(k, n, torch.bfloat16, layouts[1] == "T", device)
    out = torch.full((m, n), float("nan"), dtype=torch.bfloat16, device=device)
    p = problem_from_tensors(a, b, out)
    lp = make_plan(config(kind, amd=True, **kw), dataclasses.replace(p, align_bytes=16), mi300x, tma=True,
                   stage=(True, True))
    assert not lp.tma and (lp.stage_a, lp.stage_b) == (True, True) and lp.kernel_name not in TMA_KERNELS
    prepared = _check_both_staged(lp, a, b, out, f"aligned-staged pointer {kind} {layouts}")
    assert (prepared.kwargs["A_ALIGN"], prepared.kwargs["B_ALIGN"]) == (8, 8)


@pytest.mark.timeout(120)
def test_staged_only_the_unaligned_operand(device, h200):
    """An aligned operand is bound as it is; the unaligned one is copied (fp16, batched B)."""
    batch, m, n, k = 2, 40, 33, 64
    a = operand(m, k, torch.float16, False, device)
    b = torch.empty(batch, k, n + 1, dtype=torch.float16, device=device)[:, :, :n]
    b.copy_(operand(k, n, torch.float16, False, device, batch=batch))  # rows of 33 halves: 2-byte aligned
    out = torch.full((batch, m, n), float("nan"), dtype=torch.float16, device=device)
    lp = _staged_plan(config("persistent", grid=3), a, b, out, h200, (False, True))
    prepared = prepare_launch(lp, a, b, out)
    assert len(prepared.staged) == 1 and prepared.args[0].base is a
    prepared.run()
    check_gemm(out, a, b, what="aligned-staged B, batched fp16")


@pytest.mark.timeout(120)
def test_staged_tf32_unaligned_b_is_copied_k_major(device, h200):
    """tf32 with an N-major, unaligned B: one copy both pads and transposes (wgmma reads tf32 K-major)."""
    m, n, k = 40, 24, 37
    a = operand(m, k, torch.float32, False, device)
    a = torch.empty(m, k + 1, device=device)[:, :k].copy_(a)
    b = _unaligned(k, n, torch.float32, False, device)
    out = torch.full((m, n), float("nan"), device=device)
    p = dataclasses.replace(problem_from_tensors(a, b, out), a_dtype="tf32", b_dtype="tf32", align_bytes=16)
    lp = make_plan(config("dp"), p, h200, tma=True, stage=(True, True))
    prepared = prepare_launch(lp, a, b, out, allow_tf32=True)
    assert len(prepared.staged) == 2
    assert operand_order(prepared.args[1].base) == 1  # K-major B
    prepared.run()
    check_gemm(out, a, b, tf32=True, what="aligned-staged tf32")


@pytest.mark.timeout(180)
@pytest.mark.parametrize("kind, kw", [("dp", {}), ("persistent", dict(grid=3)), ("streamk", dict(grid=3)),
                                      ("splitk", dict(split_k=2))])
@pytest.mark.parametrize("bias", [False, True])
def test_aligned_operands_with_a_ragged_out_match_reference(kind, kw, bias, device, h200):
    """The plan the dispatcher makes when only out is unaligned: the aligned problem's TMA kernel bound to the
    caller's a and b (nothing staged) and to an out whose rows are 29 bf16 (58 bytes), stored at its own
    alignment class; F.linear's layout (b = W.T) with and without its bias."""
    m, n, k = 37, 29, 64
    a = operand(m, k, torch.bfloat16, False, device)
    w = operand(n, k, torch.bfloat16, False, device)
    b = w.t()
    out = torch.full((m, n), float("nan"), dtype=torch.bfloat16, device=device)
    p = problem_from_tensors(a, b, out)
    assert p.align_bytes < 16 and _tma_ok(a, operand_order(a)) and _tma_ok(b, operand_order(b))
    lp = make_plan(config(kind, **kw), dataclasses.replace(p, align_bytes=16), h200, tma=True)
    assert lp.tma and not (lp.stage_a or lp.stage_b)
    vec = operand(1, n, torch.bfloat16, False, device).reshape(n) if bias else None
    prepared = prepare_launch(lp, a, b, out, bias=vec)
    assert prepared.kernel.fn.__name__ in TMA_KERNELS and not prepared.staged
    assert prepared.args[0].base is a and prepared.args[1].base is b
    prepared.run()
    check_gemm(out, a, b, what=f"unaligned out, {kind}, bias {bias}", **({"bias": vec} if bias else {}))


@pytest.mark.timeout(180)
@pytest.mark.parametrize("kind, kw", [("dp", {}), ("persistent", dict(grid=3)), ("streamk", dict(grid=3)),
                                      ("splitk", dict(split_k=2))])
@pytest.mark.parametrize("ragged", ["out", "a", "b"])
def test_pointer_kernels_hint_each_operand_by_its_own_class(kind, kw, ragged, device, h200):
    """The pointer kernels (no TMA, as on AMD) with one operand's rows ragged (odd leading stride, 2-byte aligned) and
    the others 16-byte aligned: each operand's ``*_ALIGN`` / ``*_EDGE`` is its own class (plan.align_elements), and
    the result meets the bf16 bound (on a GPU the aligned operands' loads are 16-byte vectors; a hint wider than
    its tensor's alignment would read the wrong elements there)."""
    m, n, k = 37, 29, 72
    a = _unaligned(m, k, torch.bfloat16, False, device) if ragged == "a" else operand(m, k, torch.bfloat16, False, device)
    # b's rows: 31 bf16 (62 bytes, 2-byte aligned) when ragged, else 32 (aligned, the extent 29 ragged)
    b = operand(k, n + (2 if ragged == "b" else 3), torch.bfloat16, False, device)[:, :n]
    out_n = n if ragged == "out" else n + 3
    out = torch.full((m, out_n), float("nan"), dtype=torch.bfloat16, device=device)[:, :n]
    lp = make_plan(config(kind, **kw), problem_from_tensors(a, b, out), h200, tma=False)
    prepared = prepare_launch(lp, a, b, out)
    assert prepared.kernel.fn.__name__ not in TMA_KERNELS
    hints = {t: (prepared.kwargs[f"{t.upper()}_ALIGN"], prepared.kwargs[f"{t.upper()}_EDGE"]) for t in ("a", "b", "out")}
    assert hints == {t: ((1, 1) if t == ragged else (8, 8) if t == "a" else (8, 1)) for t in hints}, hints
    prepared.run()
    check_gemm(out, a, b, what=f"pointer {kind}, ragged {ragged}")


@pytest.mark.timeout(180)
@pytest.mark.parametrize("bias", [False, True])
def test_linear_with_ragged_out_features_runs_the_aligned_plan_and_its_warm_path(bias, interpret, monkeypatch):
    """End to end through tritonblas.linear (what enable() routes F.linear to) on a 3-D activation, twice: the
    plan is the aligned problem's TMA kernel with nothing staged, the second call is served warm, and both
    results meet the bf16 bound."""
    import tritonblas

    monkeypatch.setenv("TRITONBLAS_PROFILE", "h200")
    dispatch.clear_caches()
    x = operand(2 * 19, 64, torch.bfloat16, False, interpret).reshape(2, 19, 64)
    w = operand(29, 64, torch.bfloat16, False, interpret)
    vec = operand(1, 29, torch.bfloat16, False, interpret).reshape(29) if bias else None
    lp = dispatch.plan_for(x.reshape(-1, 64), w.t())
    assert lp.kernel_name in TMA_KERNELS and not (lp.stage_a or lp.stage_b) and lp.problem.align_bytes == 16
    dispatch.reset_stats()
    for _ in range(2):
        out = tritonblas.linear(x, w, vec)
        assert out.shape == (2, 19, 29)
        check_gemm(out.reshape(-1, 29), x.reshape(-1, 64), w.t(), what=f"linear, ragged out, bias {bias}",
                   **({"bias": vec} if bias else {}))
    assert dispatch.stats()["fast_hits"] >= 1 and dispatch.stats()["fallbacks"] == 0


# --- GPU -------------------------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.timeout(600)
@pytest.mark.parametrize("shape", [(4097, 4097, 4097), (32768, 1000, 3333), (4096, 3333, 3333)])
def test_gpu_matmul_stages_unaligned_problems(shape):
    """Real sizes through the drop-in: the plan stages, the result meets the bf16 bound, twice (the
    second call reuses the plan), and the caller's tensors are unchanged."""
    import tritonblas

    m, n, k = shape
    gen = torch.Generator(device="cuda").manual_seed(m + n + k)
    a = torch.randn(m, k, device="cuda", generator=gen).bfloat16()
    b = torch.randn(k, n, device="cuda", generator=gen).bfloat16()
    a0, b0 = a.clone(), b.clone()
    lp = dispatch.plan_for(a, b)
    assert lp is not None and (lp.stage_a or lp.stage_b) and lp.kernel_name in TMA_KERNELS, lp
    for _ in range(2):
        out = tritonblas.matmul(a, b)
        torch.cuda.synchronize()
        check_gemm(out, a, b, what=f"staged {m}x{n}x{k}")
    assert torch.equal(a, a0) and torch.equal(b, b0)


@pytest.mark.gpu
@pytest.mark.timeout(600)
def test_gpu_linear_with_ragged_out_features_runs_the_tma_kernel():
    """GPT-2's lm_head through F.linear under enable(): the aligned problem's TMA kernel, nothing staged,
    the logits within the bf16 bound, twice (the second call warm)."""
    import torch.nn.functional as F

    import tritonblas

    gen = torch.Generator(device="cuda").manual_seed(50257)
    x = torch.randn(2048, 1024, device="cuda", generator=gen).bfloat16()
    w = torch.randn(50257, 1024, device="cuda", generator=gen).bfloat16()
    lp = dispatch.plan_for(x, w.t())
    assert lp.kernel_name in TMA_KERNELS and not (lp.stage_a or lp.stage_b), lp
    with tritonblas.enable():
        for _ in range(2):
            out = F.linear(x, w)
            torch.cuda.synchronize()
            check_gemm(out, x, w.t(), what="lm_head 2048x50257x1024")

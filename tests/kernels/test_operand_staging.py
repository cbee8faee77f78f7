"""Operand staging: K-major copies of a wrong-major tf32/fp8 operand before a Hopper TMA launch.

The predicate (``plan.staging_for``) on the shipped profiles, the plan flags ``make_plan`` sets, and
launches with staging forced on small ragged problems under the interpreter (the M/N threshold is
bypassed with ``dataclasses.replace(plan, stage_b=True)``), against the float64 reference with the
TF32 bound of RELIABILITY.md §4.2. One GPU test (``-m gpu``) runs the real sizes.
"""

from __future__ import annotations

import dataclasses
import pickle

import pytest
import torch

from _check import assert_gemm_close, check_gemm, config, operand, reference
from origami import GemmProblem
from tritonblas import plan as planmod
from tritonblas.plan import (STAGING_MIN_DIM, TMA_KERNELS, _example_tensors, make_plan, precompile, prepare_launch,
                             problem_from_tensors, staging_for)

FP8 = (torch.float8_e4m3fn, torch.float8_e5m2)


def _problem(m=512, n=1024, k=1024, dtype="tf32", layouts="NN", **kw) -> GemmProblem:
    out = "fp32" if dtype in ("tf32", "fp32") else "bf16"
    return GemmProblem(m, n, k, a_dtype=dtype, b_dtype=dtype, c_dtype=out, a_layout=layouts[0], b_layout=layouts[1],
                       **kw)


# --- the predicate ---------------------------------------------------------------------------
def test_staging_for_b_on_h200(h200):
    assert staging_for(_problem(m=512), h200) == (False, True)
    assert staging_for(_problem(m=64), h200) == (False, False)
    assert staging_for(_problem(m=STAGING_MIN_DIM), h200) == (False, True)
    assert staging_for(_problem(m=STAGING_MIN_DIM - 1), h200) == (False, False)
    for dtype in ("fp8_e4m3", "fp8_e5m2"):
        assert staging_for(_problem(dtype=dtype), h200) == (False, True)
    for dtype in ("bf16", "fp16", "fp32"):  # 16-bit: wgmma takes either major; IEEE fp32: no wgmma
        assert staging_for(_problem(dtype=dtype), h200) == (False, False)
    assert staging_for(_problem(layouts="NT"), h200) == (False, False)  # B already K-major
    assert staging_for(_problem(batch=8), h200) == (False, True)


def test_staging_for_a_on_h200(h200):
    assert staging_for(_problem(m=1024, n=512, layouts="TT"), h200) == (True, False)
    assert staging_for(_problem(m=1024, n=512, layouts="TN"), h200) == (True, True)
    assert staging_for(_problem(m=1024, n=64, layouts="TT"), h200) == (False, False)
    assert staging_for(_problem(m=64, n=1024, layouts="TN"), h200) == (True, False)
    assert staging_for(_problem(layouts="TT", dtype="bf16"), h200) == (False, False)


def test_staging_needs_a_tma_legal_copy(h200):
    """The copy's row stride is K elements: K·bytes must be a 16-byte multiple (and K > 1)."""
    assert staging_for(_problem(k=1001), h200) == (False, False)
    assert staging_for(_problem(k=1004), h200) == (False, True)
    assert staging_for(_problem(k=1000, dtype="fp8_e4m3"), h200) == (False, False)
    assert staging_for(_problem(k=1008, dtype="fp8_e4m3"), h200) == (False, True)
    assert staging_for(_problem(k=1, layouts="TN"), h200) == (False, False)


def test_staging_only_on_nvidia_tma_archs(h200, mi300x):
    """AMD never stages; every shipped profile follows tma_supported's arch check (the schema only
    allows sm_90 and sm_100 for NVIDIA, both TMA architectures, so no non-Hopper NVIDIA profile exists)."""
    import origami
    from origami.kmajor import TMA_ARCHS

    assert staging_for(_problem(m=4096, layouts="TN"), mi300x) == (False, False)
    for name in origami.list_profiles():
        hw = origami.load_profile(name)
        want = not hw.is_amd and hw.arch in TMA_ARCHS
        assert staging_for(_problem(m=4096, n=4096, layouts="TN"), hw) == (want, want), name


# --- the plan --------------------------------------------------------------------------------
def test_make_plan_sets_staging_only_for_tma_plans(h200, mi300x):
    cfg = config("dp", 128, 128, 32, num_warps=8, num_stages=3)
    p = _problem(m=512, n=1024, k=1024, layouts="TN")
    lp = make_plan(cfg, p, h200, tma=True)
    assert lp.tma and (lp.stage_a, lp.stage_b) == (True, True)
    assert lp.problem == p  # the plan describes the caller's tensors
    assert pickle.loads(pickle.dumps(lp)) == lp and hash(lp) == hash(dataclasses.replace(lp))
    with pytest.raises(dataclasses.FrozenInstanceError):
        lp.stage_b = False
    plain = make_plan(cfg, p, h200)
    assert not plain.tma and not (plain.stage_a or plain.stage_b)
    unaligned = make_plan(cfg, dataclasses.replace(p, align_bytes=4), h200, tma=True)
    assert not unaligned.tma and not (unaligned.stage_a or unaligned.stage_b)
    assert not make_plan(cfg, _problem(m=64, layouts="NN"), h200, tma=True).stage_b
    amd = make_plan(config("dp", 128, 128, 32, num_warps=8, amd=True), p, mi300x, tma=True)
    assert not (amd.tma or amd.stage_a or amd.stage_b)
    assert make_plan(config("splitk", 64, 64, 128, split_k=4), _problem(m=512, n=128, k=8192), h200,
                     tma=True).stage_b


# --- launches under the interpreter (staging forced) ------------------------------------------
KINDS = {"dp": dict(), "persistent": dict(grid=3), "streamk": dict(grid=3), "splitk": dict(split_k=2)}


def _forced(cfg, a, b, out, hw, *, tf32, stage_a=False, stage_b=False, flat=False):
    p = problem_from_tensors(a, b, out)
    if tf32:
        p = dataclasses.replace(p, a_dtype="tf32", b_dtype="tf32")
    lp = make_plan(cfg, p, hw, tma=True, flat=flat)
    assert lp.tma and lp.kernel_name in TMA_KERNELS
    return dataclasses.replace(lp, stage_a=stage_a, stage_b=stage_b)


def _kernel(name: str):
    from tritonblas import kernels

    return getattr(kernels, name)


def _assert_k_major(prepared, pos: int, user: torch.Tensor):
    """The kernel's operand at ``pos`` (0: a, 1: b) is a descriptor over a K-major buffer, not ``user``."""
    bound = prepared.args[pos].base
    assert bound.data_ptr() != user.data_ptr()
    assert bound.stride(-1 if pos == 0 else -2) == 1
    strides = prepared.args[14:17] if pos == 0 else prepared.args[17:20]
    assert strides[1:] == bound.stride()[-2:]  # the kernel's strides are the buffer's
    assert prepared.kwargs["A_ORDER" if pos == 0 else "B_ORDER"] == (0 if pos == 0 else 1)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", list(KINDS) + ["flat"])
def test_staged_b_tf32_matches_reference(kind, device, h200):
    """Ragged M, N and K tail; the caller's b is read, never written, and its values at run time count."""
    m, n, k = 40, 24, 72
    a = operand(m, k, torch.float32, False, device)
    b = operand(k, n, torch.float32, False, device)
    b_before = b.clone()
    out = torch.full((m, n), float("nan"), device=device)
    cfg = config("persistent" if kind == "flat" else kind, **KINDS.get(kind, dict(grid=3)))
    lp = _forced(cfg, a, b, out, h200, tf32=True, stage_b=True, flat=kind == "flat")
    prepared = prepare_launch(lp, a, b, out, allow_tf32=True)
    _assert_k_major(prepared, 1, b)
    assert prepared.args[0] is a or prepared.args[0].base is a  # A is not staged
    prepared.run()
    assert torch.equal(b, b_before) and b.stride() == (n, 1)
    check_gemm(out, a, b, tf32=True, what=f"staged B {kind}")
    b.mul_(-2.0)  # a re-run copies the operand's current values
    prepared.run()
    check_gemm(out, a, b, tf32=True, what=f"staged B {kind}, re-run")


@pytest.mark.timeout(120)
@pytest.mark.parametrize("tb", [False, True])
def test_staged_a_tf32_matches_reference(tb, device, h200):
    m, n, k = 40, 24, 72
    a = operand(m, k, torch.float32, True, device)
    b = operand(k, n, torch.float32, tb, device)
    a_before = a.clone()
    out = torch.full((m, n), float("nan"), device=device)
    lp = _forced(config("dp"), a, b, out, h200, tf32=True, stage_a=True, stage_b=True)
    prepared = prepare_launch(lp, a, b, out, allow_tf32=True)
    _assert_k_major(prepared, 0, a)
    assert len(prepared.staged) == (1 if tb else 2)  # a K-major b is bound as it is
    if not tb:
        _assert_k_major(prepared, 1, b)
    prepared.run()
    assert torch.equal(a, a_before)
    check_gemm(out, a, b, tf32=True, what=f"staged A, b {'T' if tb else 'N'}")


@pytest.mark.timeout(120)
@pytest.mark.parametrize("dtype", FP8)
def test_staged_b_fp8_matches_reference(dtype, device, h200):
    m, n, k = 40, 48, 80
    a = operand(m, k, dtype, False, device)
    b = operand(k, n, dtype, False, device)
    out = torch.full((m, n), float("nan"), dtype=torch.bfloat16, device=device)
    lp = _forced(config("dp"), a, b, out, h200, tf32=False, stage_b=True)
    prepared = prepare_launch(lp, a, b, out)
    _assert_k_major(prepared, 1, b)
    prepared.run()
    check_gemm(out, a, b, what=f"staged B {dtype}")


@pytest.mark.timeout(120)
@pytest.mark.parametrize("b_batch", ["batched", "broadcast-2d", "broadcast-stride0"])
def test_staged_batched(b_batch, device, h200):
    """(batch, K, N) is staged whole; a broadcast B stays broadcast (one matrix copied)."""
    batch, m, n, k = 3, 40, 24, 72
    a = operand(m, k, torch.float32, True, device, batch=batch)
    b = operand(k, n, torch.float32, False, device, batch=None if b_batch != "batched" else batch)
    if b_batch == "broadcast-stride0":
        b = b.expand(batch, k, n)
    out = torch.full((batch, m, n), float("nan"), device=device)
    lp = _forced(config("streamk", grid=3), a, b, out, h200, tf32=True, stage_a=True, stage_b=True)
    prepared = prepare_launch(lp, a, b, out, allow_tf32=True)
    _assert_k_major(prepared, 0, a)
    _assert_k_major(prepared, 1, b)
    buffer_b = prepared.args[1].base
    assert buffer_b.dim() == b.dim() and (b_batch == "batched") == (buffer_b.dim() == 3 and buffer_b.stride(0) != 0)
    assert prepared.kwargs["TMA_BATCHED"]
    prepared.run()
    check_gemm(out, a, b, tf32=True, what=f"staged batched, b {b_batch}")


def test_staging_validates_the_callers_tensors_first(device, h200):
    m, n, k = 40, 24, 72
    a = operand(m, k, torch.float32, False, device)
    b = operand(k, n, torch.float32, False, device)
    out = torch.empty(m, n, device=device)
    lp = _forced(config("dp"), a, b, out, h200, tf32=True, stage_b=True)
    with pytest.raises(ValueError, match="inner dims"):
        prepare_launch(lp, a, operand(k + 1, n, torch.float32, False, device), out)
    with pytest.raises(ValueError, match="a and b: dtypes must match"):
        prepare_launch(lp, a, b.half(), out)
    big = torch.empty(k * n + m * n, device=device)
    with pytest.raises(ValueError, match="out: must not overlap b"):
        prepare_launch(lp, a, big[: k * n].view(k, n), big[k * n - 1:][: m * n].view(m, n))


def test_staging_skipped_where_it_cannot_apply(device, h200):
    """A K-major b is bound as it is; a launch that falls back to the pointer kernel stages nothing."""
    m, n, k = 40, 24, 72
    a = operand(m, k, torch.float32, False, device)
    out = torch.empty(m, n, device=device)
    b_t = operand(k, n, torch.float32, True, device)
    lp = _forced(config("dp"), a, b_t, out, h200, tf32=True, stage_b=True)
    prepared = prepare_launch(lp, a, b_t, out, allow_tf32=True)
    assert prepared.staged == () and prepared.args[1].base is b_t
    b = operand(k, n, torch.float32, False, device)
    a_odd = torch.empty(m * k + 1, device=device)[1:].view(m, k).copy_(a)  # 4-byte-aligned base: no TMA
    lp = _forced(config("dp"), a, b, out, h200, tf32=True, stage_b=True)
    prepared = prepare_launch(lp, a_odd, b, out, allow_tf32=True)
    assert prepared.staged == () and prepared.args[1] is b
    assert prepared.kernel is _kernel("gemm_kernel")


def test_precompile_binds_the_staged_variant(device, h200):
    """precompile / sweeps bind the example tensors as a real launch does: the K-major buffer."""
    p = _problem(m=40, n=24, k=72)
    lp = dataclasses.replace(make_plan(config("dp"), p, h200, tma=True), stage_b=True)
    a, b, out = _example_tensors(p, device)
    prepared = prepare_launch(lp, a, b, out, allow_tf32=True)
    assert prepared.kwargs["B_ORDER"] == 1 and len(prepared.staged) == 1
    assert precompile([lp], device, allow_tf32=True) == [None]


# --- GPU -------------------------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.timeout(600)
@pytest.mark.parametrize("case", ["tf32-NN", "fp8_e4m3-NN"])
def test_gpu_staged_launch(case, h200):
    """Real sizes on the H200: the plan stages B by itself (M = 1024 >= STAGING_MIN_DIM)."""
    dev = "cuda"
    m = n = k = 1024
    if case.startswith("tf32"):
        a, b = operand(m, k, torch.float32, False, dev), operand(k, n, torch.float32, False, dev)
        out = torch.full((m, n), float("nan"), device=dev)
        p = dataclasses.replace(problem_from_tensors(a, b, out), a_dtype="tf32", b_dtype="tf32")
        cfg, kw = config("dp", 128, 128, 32, num_warps=8, num_stages=3, group_m=8), dict(allow_tf32=True)
    else:
        a = operand(m, k, torch.float8_e4m3fn, False, dev)
        b = operand(k, n, torch.float8_e4m3fn, False, dev)
        out = torch.full((m, n), float("nan"), device=dev).bfloat16()
        p = problem_from_tensors(a, b, out)
        cfg, kw = config("dp", 128, 128, 128, num_warps=8, num_stages=3, group_m=8), {}
    lp = make_plan(cfg, p, h200, tma=True)
    assert lp.tma and lp.stage_b and not lp.stage_a
    b_before = b.clone()
    prepared = prepare_launch(lp, a, b, out, **kw)
    _assert_k_major(prepared, 1, b)
    prepared.run()
    torch.cuda.synchronize()
    assert torch.equal(b.view(torch.uint8), b_before.view(torch.uint8))
    ref, mag, _ = reference(a, b)
    assert_gemm_close(out, ref, mag, k, tf32=case.startswith("tf32"), fp8_mma=not case.startswith("tf32"),
                      what=f"staged {case}")


@pytest.mark.gpu
@pytest.mark.timeout(600)
def test_gpu_staged_launch_in_cuda_graph(h200):
    """A staged launch prepared and run under capture: the buffer comes from the graph's pool and the
    copy is captured, so a replay reads b's values at replay time."""
    dev = "cuda"
    m = n = k = 1024
    a, b = operand(m, k, torch.float32, False, dev), operand(k, n, torch.float32, False, dev)
    out = torch.full((m, n), float("nan"), device=dev)
    p = dataclasses.replace(problem_from_tensors(a, b, out), a_dtype="tf32", b_dtype="tf32")
    lp = make_plan(config("dp", 128, 128, 32, num_warps=8, num_stages=3, group_m=8), p, h200, tma=True)
    assert lp.stage_b
    prepare_launch(lp, a, b, out, allow_tf32=True).run()  # compile outside the capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        prepared = prepare_launch(lp, a, b, out, allow_tf32=True)
        assert len(prepared.staged) == 1
        prepared.run()
    del prepared
    b.copy_(operand(k, n, torch.float32, False, dev))
    out.fill_(float("nan"))
    graph.replay()
    torch.cuda.synchronize()
    check_gemm(out, a, b, tf32=True, what="staged B, graph replay")


# --- the staging copy ----------------------------------------------------------------------------
class _Spy:
    """Stands in for ``kernels.transpose_copy_kernel``: counts launches, then runs the real kernel."""

    def __init__(self, kernel):
        self.kernel, self.launches = kernel, 0

    def __getitem__(self, grid):
        self.launches += 1
        return self.kernel[grid]


@pytest.mark.parametrize("dtype", [torch.float32, *FP8])
@pytest.mark.parametrize("batch", [None, 3])
@pytest.mark.parametrize("operand_name", ["a", "b"])
def test_stage_copy_is_exact_through_the_transpose_kernel(dtype, batch, operand_name, monkeypatch, device):
    """``plan.stage_copy`` copies a wrong-major operand into its K-major buffer bit for bit, through
    the Triton transpose kernel (ragged sizes: edges of the 64 x 64 tiles; batched), on the GPU when
    there is one, else on CPU tensors under the interpreter."""
    from tritonblas import kernels

    spy = _Spy(kernels.transpose_copy_kernel)
    monkeypatch.setattr(kernels, "transpose_copy_kernel", spy)
    lead = (batch,) if batch else ()
    for rows, cols in ((1, 1), (3, 130), (129, 65), (64, 64)):
        if operand_name == "b":  # (.., K, N), N contiguous -> a K-major buffer (stride(-2) == 1)
            source = torch.randn(*lead, rows, cols, device=device).to(dtype)
            buffer = torch.empty(*lead, cols, rows, dtype=dtype, device=device).mT
        else:  # (.., M, K), M contiguous -> a row-major buffer
            source = torch.randn(*lead, cols, rows, device=device).to(dtype).mT
            buffer = torch.empty(source.shape, dtype=dtype, device=device)
        before = source.clone()
        planmod.stage_copy(buffer, source)
        assert torch.equal(buffer.float(), source.float()) and torch.equal(source, before)
    assert spy.launches == 4


def test_stage_copy_falls_back_to_torch_for_layouts_the_kernel_does_not_take(monkeypatch):
    """A source with no unit stride, or a batch broadcast through stride 0, is copied by torch."""
    from tritonblas import kernels

    spy = _Spy(kernels.transpose_copy_kernel)
    monkeypatch.setattr(kernels, "transpose_copy_kernel", spy)
    strided = torch.randn(40, 60)[::2, ::3]
    buffer = torch.empty(strided.shape[::-1]).mT
    planmod.stage_copy(buffer, strided)
    assert torch.equal(buffer, strided)
    wide = torch.randn(1, 30, 20).expand(4, 30, 20)
    buffer = torch.empty(4, 20, 30).mT
    planmod.stage_copy(buffer, wide)
    assert torch.equal(buffer, wide)
    assert spy.launches == 0


def test_origami_sees_the_launchers_staging_rule(h200):
    """origami.kmajor is the one home of the rule (staging_for delegates to it): tma_problem agrees
    with tma_supported on every candidate of a tf32 problem (block dims within a TMA box), and the
    model's register-read predicate describes the operands the plan make_plan builds leaves unstaged."""
    from origami import candidates
    from origami.kmajor import mma_reads_through_registers, tma_problem
    from tritonblas.plan import tma_supported

    for p in (_problem(m=128), _problem(m=512), _problem(m=512, align_bytes=4), _problem(m=64, layouts="TT")):
        for cfg in candidates(p, h200):
            assert (tma_supported(cfg, p, h200) is None) == tma_problem(p, h200), cfg.short()
            lp = make_plan(cfg, p, h200, tma=True)
            unstaged = (p.b_layout.value == "N" and not lp.stage_b) or (p.a_layout.value == "T" and not lp.stage_a)
            assert unstaged == mma_reads_through_registers(p, h200), (p.describe(), cfg.short())

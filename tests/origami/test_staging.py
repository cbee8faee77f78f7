"""origami.staging: the alignment-staging cost policy (the copy estimate and the staged-or-not
decision the dispatcher takes for model picks; the dispatcher's use is tests/api/test_align_staging.py)."""

from __future__ import annotations

import dataclasses

import pytest

import origami
from origami import GemmProblem
from origami.staging import STAGED_HOST_NS, staged_pick, staging_copy_ns


def _problem(m, n, k, dtype="bf16", align=2, **kw):
    return GemmProblem(m, n, k, a_dtype=dtype, b_dtype=dtype, c_dtype=dtype, align_bytes=align, **kw)


def test_staging_copy_ns_reads_and_writes_each_staged_operand(h200):
    p = _problem(4000, 1000, 3000, batch=2)
    bw = h200.memory["hbm_bytes_per_s"]
    a_only = staging_copy_ns(p, h200, (True, False))
    b_only = staging_copy_ns(p, h200, (False, True))
    assert staging_copy_ns(p, h200, (False, False)) == 0
    assert a_only > b_only > 0  # A is 4000x3000, B 3000x1000
    assert staging_copy_ns(p, h200, (True, True)) == pytest.approx(a_only + b_only)
    # at least the time to read and write A once at the full HBM bandwidth
    assert a_only >= 2 * 2 * 4000 * 3000 * 2 / bw * 1e9


def test_staged_pick_stages_when_the_aligned_pick_and_the_copies_are_predicted_faster(h200):
    p = _problem(4097, 4097, 4097)
    unstaged = origami.select(p, h200)
    aligned, est = staged_pick(p, h200, (True, True), unstaged.latency_ns)
    assert aligned == dataclasses.replace(p, align_bytes=16) and est == origami.select(aligned, h200)
    assert max(STAGED_HOST_NS, est.latency_ns + staging_copy_ns(p, h200, (True, True))) < unstaged.latency_ns
    assert staged_pick(p, h200, (False, False), unstaged.latency_ns) is None  # nothing to stage


@pytest.mark.parametrize("unstaged_ns", [STAGED_HOST_NS, STAGED_HOST_NS / 2])
def test_staged_pick_never_stages_under_the_staged_launch_host_time(h200, unstaged_ns):
    assert staged_pick(_problem(4097, 4097, 4097), h200, (True, True), unstaged_ns) is None


def test_staged_pick_refuses_when_the_copies_cost_more_than_they_save(h200):
    p = _problem(4097, 4097, 4097)
    aligned_ns = origami.select(dataclasses.replace(p, align_bytes=16), h200).latency_ns
    just_over = max(STAGED_HOST_NS, aligned_ns + staging_copy_ns(p, h200, (True, True)))
    assert staged_pick(p, h200, (True, True), just_over) is None
    assert staged_pick(p, h200, (True, True), just_over * 1.001) is not None


@pytest.mark.parametrize("align", [2, 4, 8])
def test_staged_pick_never_returns_the_warp_specialised_kernel(h200, align):
    """Staging copies A and B into 16-byte-aligned buffers, never ``out``, and a 'ws' plan binds no
    staged operand (tritonblas.plan.make_plan returns the Gluon kernel's plan without stage_a/stage_b);
    its TMA store needs ``out`` aligned too. staged_pick selected on the profile as given, so on h200
    (ws_efficiency 1.15) it returned 'ws 128x256x64 w8 s3 g8 grid132' for 8192^3 bf16 at 2-, 4- and
    8-byte alignment. It selects without the kernel (origami.space.without_ws), as the dispatcher's call does."""
    from origami.config import Kind
    from origami.space import without_ws

    assert h200.model["ws_efficiency"] > 0
    p = _problem(8192, 8192, 8192, align=align)
    picked = staged_pick(p, h200, (True, True), origami.select(p, h200).latency_ns)
    assert picked is not None
    aligned, est = picked
    assert est.config.kind is not Kind.WS
    assert est == origami.select(aligned, without_ws(h200))


def test_staged_pick_scores_the_copies_as_the_kernel_reads_them(h200):
    """An alignment copy of a tf32/fp8 operand is written K-major (tritonblas.plan._stage_order), so the
    staged launch's wide MMA does not read it through registers: staged_pick scores
    origami.kmajor.aligned_view, which with model.mn_major_tile_cost > 0 differs from the plain aligned
    problem; at the default 0 the layouts change nothing (the space and the scores do not read them)."""
    from origami.kmajor import aligned_view, mma_reads_through_registers

    p = GemmProblem(320, 8191, 4096, a_dtype="tf32", b_dtype="tf32", c_dtype="fp32", align_bytes=4)
    aligned = dataclasses.replace(p, align_bytes=16)
    view = aligned_view(p, (False, True))
    assert (view.b_layout.value, view.align_bytes) == ("T", 16)
    assert mma_reads_through_registers(aligned, h200) and not mma_reads_through_registers(view, h200)
    assert aligned_view(p, (False, False)).b_layout == p.b_layout  # B not copied: as it is
    assert aligned_view(GemmProblem(320, 8191, 4096, align_bytes=2), (True, True)).b_layout.value == "N"  # bf16: kept
    cost = h200.replace_model(mn_major_tile_cost=2.0)  # explicit: the test holds if the shipped value moves
    got, est = staged_pick(p, cost, (False, True), 1e12)
    assert got == aligned and est == origami.select(view, cost)
    assert origami.select(aligned, cost).latency_ns > est.latency_ns  # priced as register reads, it would cost more
    off = h200.replace_model(mn_major_tile_cost=0.0)  # (h200.yaml ships 2.0)
    _, est0 = staged_pick(p, off, (False, True), 1e12)
    assert est0 == origami.select(aligned, off)


def test_unaligned_out_pick_runs_the_aligned_problems_non_ws_pick_with_no_copy(h200):
    """GPT-2's lm_head (a, b aligned, 50257-wide logits): the aligned problem's pick, never 'ws', taken when its
    estimate alone (nothing copied, no staged host floor) beats the unaligned problem's."""
    from origami.space import without_ws
    from origami.staging import unaligned_out_pick

    p = _problem(2048, 50257, 1024, b_layout="T")
    unaligned = origami.select(p, h200)
    aligned, est = unaligned_out_pick(p, h200, unaligned.latency_ns)
    assert aligned == dataclasses.replace(p, align_bytes=16)
    assert est == origami.select(aligned, without_ws(h200)) and est.config.kind.value != "ws"
    assert est.latency_ns < unaligned.latency_ns
    assert unaligned_out_pick(p, h200, est.latency_ns) is None  # not faster: the problem runs as it is
    assert unaligned_out_pick(aligned, h200, unaligned.latency_ns) is None  # aligned already

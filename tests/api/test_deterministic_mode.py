"""``torch.use_deterministic_algorithms(True)`` in the dispatcher (RELIABILITY.md §6.12, §7).

Every kernel kind is deterministic today (tests/kernels/test_program_order.py: Stream-K and split-K
give the same bits under reversed and random program orders; DP and persistent programs own their
tiles), so :data:`tritonblas.dispatch.DETERMINISTIC_KINDS` holds them all and the test below checks
that claim against the enum. The other branches are driven by narrowing DETERMINISTIC_KINDS (an
injected non-deterministic kind): the model's pick then gives way to the best deterministic
candidate of origami's ranking, a forced config= raises naming the op, no deterministic candidate
raises, and warn_only warns and runs the pick.
"""

from __future__ import annotations

import warnings

import pytest
import torch

import origami
import tritonblas
from origami.config import Kind
from tritonblas import dispatch

# fp16 shapes with few output tiles and a long K, where a profile's pick splits K (split-K or
# Stream-K: the kinds whose programs share a tile). The first whose pick does is the tests' premise:
# h200 picks split-K for the first, the shipped h100 (its model terms then h200's first hand fit)
# Stream-K. The pick of the profile the device maps to decides, so the tests hold on either GPU.
SHAPES = ((32, 32, 2048), (32, 32, 4096), (16, 16, 8192), (64, 64, 8192), (32, 64, 16384))
SPLITTING = frozenset((Kind.SPLITK, Kind.STREAMK))


@pytest.fixture
def det(device, monkeypatch):
    """The device's plan profile and a shape its model splits in K; deterministic mode restored after."""
    if device == "cpu":
        monkeypatch.setenv("TRITONBLAS_PROFILE", "h200")
    old, old_warn = torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()
    dispatch.clear_caches()
    torch.use_deterministic_algorithms(False)
    hw = dispatch.device_info(torch.device(device)).plan_profile
    shape = next((s for s in SHAPES if dispatch.plan_for(*_operands(device, s)).config.kind in SPLITTING), None)
    dispatch.clear_caches()
    yield hw, shape
    torch.use_deterministic_algorithms(old, warn_only=old_warn)
    dispatch.clear_caches()


def _operands(device, shape):
    m, n, k = shape
    g = torch.Generator().manual_seed(17)
    a = (torch.randn(m, k, generator=g) / k ** 0.5).half().to(device)
    b = torch.randn(k, n, generator=g).half().to(device)
    return a, b


def _close(out, a, b):
    ref = (a.double() @ b.double()).to(out.device)
    mag = a.double().abs() @ b.double().abs()
    k = a.shape[1]
    bound = 4 * (k + 4) * 2.0 ** -24 * mag.to(out.device) + 2.0 ** -11 * ref.abs() + 2.0 ** -25
    assert ((out.double() - ref).abs() <= bound).all()


def test_every_kind_is_listed_as_deterministic():
    assert dispatch.DETERMINISTIC_KINDS == frozenset(Kind), \
        "a kind left out of DETERMINISTIC_KINDS needs a reason (and a key that carries the flag)"


def test_model_pick_splits_k_without_deterministic_mode(det, device):
    hw, shape = det
    assert shape is not None, f"profile {hw.name}: no shape of {SHAPES} gets a split-K or Stream-K pick " \
                              "(the premise of the tests below: add one that does)"
    a, b = _operands(device, shape)
    torch.use_deterministic_algorithms(False)
    assert dispatch.plan_for(a, b).config.kind in SPLITTING


def test_deterministic_mode_chooses_among_deterministic_kinds(det, device, monkeypatch):
    hw, shape = det
    a, b = _operands(device, shape or SHAPES[0])
    allowed = frozenset((Kind.DP, Kind.PERSISTENT))
    monkeypatch.setattr(dispatch, "DETERMINISTIC_KINDS", allowed)
    torch.use_deterministic_algorithms(True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = tritonblas.matmul(a, b)
        lp = dispatch.plan_for(a, b)
    assert lp.config.kind in allowed
    best = next(e.config for e in origami.rank(lp.problem, hw, 1 << 30) if e.config.kind in allowed)
    assert lp.config == best, "not the best-ranked deterministic candidate"
    _close(out, a, b)
    for _ in range(2):
        assert torch.equal(tritonblas.matmul(a, b), out)


def test_forced_non_deterministic_config_raises_naming_the_op(det, device, monkeypatch):
    a, b = _operands(device, SHAPES[0])
    monkeypatch.setattr(dispatch, "DETERMINISTIC_KINDS", frozenset((Kind.DP,)))
    torch.use_deterministic_algorithms(True)
    cfg = origami.TileConfig(kind="splitk", block_m=16, block_n=16, block_k=32, num_warps=4, num_stages=2,
                             group_m=1, split_k=4)
    with pytest.raises(RuntimeError, match=r"tritonblas\.(matmul|mm): the splitk kernel .*\(forced by config=") as ei:
        tritonblas.matmul(a, b, config=cfg)
    assert "use_deterministic_algorithms" in str(ei.value)
    dp = origami.TileConfig(kind="dp", block_m=16, block_n=16, block_k=32, num_warps=4, num_stages=2, group_m=1)
    _close(tritonblas.matmul(a, b, config=dp), a, b)  # a deterministic forced config runs


def test_no_deterministic_candidate_raises(det, device, monkeypatch):
    shape = SHAPES[0]
    a, b = _operands(device, shape)
    monkeypatch.setattr(dispatch, "DETERMINISTIC_KINDS", frozenset())
    torch.use_deterministic_algorithms(True)
    with pytest.raises(RuntimeError, match=r"tritonblas\.(matmul|mm): .*no deterministic kernel fits"):
        tritonblas.matmul(a, b)
    c = torch.zeros(shape[0], shape[1], dtype=a.dtype, device=device)
    with pytest.raises(RuntimeError, match=r"tritonblas\.addmm: "):
        tritonblas.addmm(c, a, b)


def test_warn_only_warns_and_runs_the_pick(det, device, monkeypatch):
    hw, shape = det
    assert shape is not None, f"profile {hw.name}: no splitting pick (see the premise test)"
    a, b = _operands(device, shape)
    pick = dispatch.plan_for(a, b).config.kind
    dispatch.clear_caches()
    monkeypatch.setattr(dispatch, "DETERMINISTIC_KINDS", frozenset())
    torch.use_deterministic_algorithms(True, warn_only=True)
    with pytest.warns(UserWarning, match=rf"tritonblas\.(matmul|mm): the {pick.value} kernel .* not deterministic"):
        out = tritonblas.matmul(a, b)
    assert dispatch.plan_for(a, b).config.kind is pick
    _close(out, a, b)


def test_without_deterministic_mode_nothing_changes(det, device, monkeypatch):
    hw, shape = det
    assert shape is not None, f"profile {hw.name}: no splitting pick (see the premise test)"
    a, b = _operands(device, shape)
    pick = dispatch.plan_for(a, b).config.kind
    dispatch.clear_caches()
    monkeypatch.setattr(dispatch, "DETERMINISTIC_KINDS", frozenset())
    torch.use_deterministic_algorithms(False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = tritonblas.matmul(a, b)
    assert dispatch.plan_for(a, b).config.kind is pick
    _close(out, a, b)

"""origami's 'ws' picks (the warp-specialised Gluon kernel in the model's space) on the dispatcher.

A call reaches the kernel only when the model picks kind 'ws' *and* :func:`gluon_route.ws_reason` says
the call can run it (an sm_90 GPU with Gluon, 2-D bf16/fp16 operands TMA can read, alpha 1, at most
F.linear's bias, not ``TRITONBLAS_GLUON=0``); otherwise the model selects from the same profile
without that kernel (``origami.space.without_ws``), so no call is ever sent where the kernel
cannot go. On CPU: the selection rule, the forced-config error, and the launch plumbing with the
kernel and its device check stood in for. The H200 half (the real kernel, against a float64
reference) is in tests/dropin/test_ws_route_gpu.py's ``-m gpu`` test.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import origami
import tritonblas
from origami import GemmProblem, Kind, TileConfig
from origami.hardware import render_profile
from origami.space import without_ws
from tritonblas import dispatch, gluon_route, settings
from _check import assert_gemm_close, reference

WS = origami.load_profile("h200").replace_model(ws_efficiency=2.0)  # 'ws' wins from ~1536x1024x64 on
SHAPE = (1536, 1024, 64)  # M, N, K: origami.select(WS) picks ws 128x128x64 s4, grid 96


def _t(*shape, dtype=torch.bfloat16):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(sum(shape)), dtype=torch.float32).to(dtype)


@pytest.fixture
def ws_profile(tmp_path, monkeypatch):
    """TRITONBLAS_PROFILE pointing at WS written as YAML (what enable() and the warm paths read)."""
    path = tmp_path / "h200_ws.yaml"
    path.write_text(render_profile(WS.to_yaml_dict()))
    monkeypatch.setenv("TRITONBLAS_PROFILE", str(path))
    dispatch.reset_stats()
    tritonblas.clear_caches()
    return path


def test_the_shape_picks_ws_on_this_profile():
    m, n, k = SHAPE
    cfg = origami.select(GemmProblem(m, n, k), WS).config
    assert cfg.kind is Kind.WS and (cfg.block_n, cfg.num_stages) == (128, 4), cfg.short()


def test_a_call_the_kernel_cannot_run_selects_without_it(device):
    """Under the interpreter (or off sm_90) every call has a ws_reason, and the plan is the pick of
    the profile without the kernel; so is a call whose epilogue the kernel lacks (alpha, a full C)."""
    m, n, k = SHAPE
    a, b = _t(m, k).to(device), _t(k, n).to(device)
    out = torch.empty(m, n, dtype=torch.bfloat16, device=device)
    plain = origami.select(GemmProblem(m, n, k), without_ws(WS)).config
    assert plain.kind is not Kind.WS
    assert "alpha" in gluon_route.ws_reason(a, b, out, None, 2.0, 0.0)
    assert "bias" in gluon_route.ws_reason(a, b, out, _t(m, n).to(device), 1.0, 1.0)
    if device == "cpu":
        assert "sm_90" in gluon_route.ws_reason(a, b, out)
        assert dispatch.plan_for(a, b, profile=WS).config == plain
    elif gluon_route.ws_reason(a, b, out) is None:  # the H200 with Gluon
        assert dispatch.plan_for(a, b, profile=WS).config.kind is Kind.WS


def test_the_off_switch_is_a_ws_reason(monkeypatch):
    a, b = _t(256, 64), _t(64, 256)
    monkeypatch.setenv(settings.ENV_GLUON, "0")
    assert gluon_route.ws_reason(a, b, torch.empty(256, 256, dtype=torch.bfloat16)) == "TRITONBLAS_GLUON=0"


def test_a_forced_ws_config_the_call_cannot_run_names_config(device):
    a, b = _t(256, 64).to(device), _t(64, 256).to(device)
    cfg = TileConfig(Kind.WS, 128, 128, 64, 8, 4, 8, grid=4)
    with pytest.raises(ValueError, match="config: ws 128x128x64 .* cannot run this call"):  # alpha
        dispatch.gemm(a, b, profile=WS, config=cfg, alpha=2.0)
    with pytest.raises(ValueError, match="no warp-specialised kernel"):  # a profile without it
        tritonblas.matmul(a, b, profile=without_ws(WS), config=cfg)


def test_a_ws_pick_runs_the_kernel_and_is_remembered(monkeypatch, ws_profile, device):
    """With the device check and the kernel stood in for (CPU), the model's 'ws' pick launches the
    Gluon kernel with the pick's tile, counts under stats()['ws'], and is remembered as a
    GluonEntry: the next calls (tritonblas.matmul, F.linear on a 3-D activation with a bias inside
    enable()) go there; a call with alpha, or under TRITONBLAS_GLUON=0, runs origami's other pick."""
    if device != "cpu":
        pytest.skip("the plumbing, on CPU; on the H200 the real kernel runs (test_ws_route_gpu.py)")
    from tritonblas.kernels import gluon_hopper

    ran = []

    def stand_in(a, b, out=None, bias=None, **kw):
        ran.append(dict(bias=bias is not None, **kw))
        ref = a.float() @ b.float() + (0 if bias is None else bias.float())
        return out.copy_(ref.to(out.dtype))

    monkeypatch.setattr(gluon_hopper, "gluon_matmul", stand_in)
    monkeypatch.setattr(gluon_route, "gluon_runs", lambda a, b, out: None)
    m, n, k = SHAPE
    a, b = _t(m, k), _t(k, n)
    ref, mag, _ = reference(a, b)
    for _ in range(3):
        assert_gemm_close(tritonblas.matmul(a, b), ref, mag, k, what="matmul on the 'ws' pick")
    assert len(ran) == 3 and ran[0] == dict(bias=False, block_m=128, block_n=128, block_k=64, stages=4, group_m=8,
                                        num_sms=96), ran  # the pick's grid
    assert dispatch.stats()["ws"] == 1  # the first call; the warm entry serves the others
    assert type(dispatch.fast_lookup(a, b)) is dispatch.GluonEntry

    x, w, bias = _t(2, m // 2, k), _t(n, k), _t(n)
    with torch.no_grad(), tritonblas.enable():
        for _ in range(2):
            y = F.linear(x, w, bias)
    assert len(ran) == 5 and ran[-1]["bias"], ran
    torch.testing.assert_close(y.double(), F.linear(x.double(), w.double(), bias.double()), rtol=2e-2, atol=5e-2)

    got = tritonblas.addmm(torch.zeros(n, dtype=torch.bfloat16), a[:130], b, alpha=2.0)  # small: the interpreter
    assert len(ran) == 5, "a call with alpha reached the kernel"
    torch.testing.assert_close(got.double(), 2 * reference(a[:130], b)[0], rtol=2e-2, atol=2e-1)

    monkeypatch.setenv(settings.ENV_GLUON, "0")
    small = a[:130]
    got = tritonblas.matmul(small, b)
    assert len(ran) == 5, "TRITONBLAS_GLUON=0 reached the kernel"
    r2, m2, _ = reference(small, b)
    assert_gemm_close(got, r2, m2, k, what="matmul with the kernel off")


def test_explain_of_a_call_without_ws_predicts_the_plan_it_names(monkeypatch, device):
    """explain() for a call the 'ws' kernel cannot run (every call on CPU; TRITONBLAS_GLUON=0): its
    'predicted' line and origami's ranking are those of the profile without the kernel, the plan's."""
    m, n, k = SHAPE
    a, b = _t(m, k).to(device), _t(k, n).to(device)
    if gluon_route.ws_reason(a, b, torch.empty(m, n, dtype=torch.bfloat16, device=device)) is None:
        monkeypatch.setenv(settings.ENV_GLUON, "0")  # the H200 with Gluon: the off switch makes it such a call
    text = dispatch.explain(a, b, profile=WS)
    plain = origami.select(GemmProblem(m, n, k), without_ws(WS))
    assert f"config: {plain.config.short()} (model's pick)" in text, text
    assert f"predicted: {plain.latency_ns / 1e3:.2f} us" in text, text
    assert "#1 ws" not in text and " ws 128x" not in text, text


def test_plan_for_with_c_is_the_plan_gemm_launches(monkeypatch, device):
    """plan_for(c=) is the plan of an addmm (beta 1 unless given): a full C is not the kernel's bias
    add, so the plan is the pick without the 'ws' kernel, the one gemm(c=, beta=1) launches."""
    monkeypatch.setattr(gluon_route, "gluon_runs", lambda a, b, out: None)
    tritonblas.clear_caches()
    m, n, k = SHAPE
    a, b, c = _t(m, k).to(device), _t(k, n).to(device), _t(m, n).to(device)
    out = torch.empty(m, n, dtype=torch.bfloat16, device=device)
    launched = dispatch._plan_of(a, b, out, c, WS, None, "addmm", 1.0, 1.0)[2].config
    assert launched.kind is not Kind.WS
    assert dispatch.plan_for(a, b, c=c, profile=WS).config == launched
    assert dispatch.plan_for(a, b, c=c, profile=WS, beta=0.5).config == launched
    assert dispatch.plan_for(a, b, c=_t(n).to(device), profile=WS).config.kind is Kind.WS  # F.linear's bias
    assert dispatch.plan_for(a, b, c=_t(n).to(device), profile=WS, alpha=2.0).config == \
        dispatch._plan_of(a, b, out, _t(n).to(device), WS, None, "addmm", 2.0, 1.0)[2].config


def _stand_ins(monkeypatch, ran):
    """The kernel (a torch stand-in recording its tile keywords) and its device check, for CPU."""
    from tritonblas.kernels import gluon_hopper

    def stand_in(a, b, out=None, bias=None, **kw):
        ran.append(dict(bias=bias is not None, **kw))
        return out.copy_((a.float() @ b.float() + (0 if bias is None else bias.float())).to(out.dtype))

    monkeypatch.setattr(gluon_hopper, "gluon_matmul", stand_in)
    monkeypatch.setattr(gluon_route, "gluon_runs", lambda a, b, out: None)


def test_a_warm_ws_call_launches_the_plans_tile_and_grid(monkeypatch, ws_profile, device):
    """A forced 'ws' config with GROUP_M 4 and grid 2: the warm GluonEntry's launches carry the plan's
    whole tile (GROUP_M, BLOCK_K, BLOCK_M) and its grid, as the first launch does, not the kernel's
    defaults (GROUP_M 8, a grid of every SM), which explain()'s 'grid 2' would not describe."""
    if device != "cpu":
        pytest.skip("CPU only: the Gluon kernel and its launch are stood in for; on the H200 the real kernel "
                    "runs in tests/dropin/test_ws_route_gpu.py")
    ran = []
    _stand_ins(monkeypatch, ran)
    a, b = _t(256, 64), _t(64, 256)
    cfg = TileConfig(Kind.WS, 128, 128, 64, 8, 4, 4, grid=2)
    assert dispatch.plan_for(a, b, config=cfg).grid == (2,)
    ref, mag, _ = reference(a, b)
    for _ in range(3):
        assert_gemm_close(tritonblas.matmul(a, b, config=cfg), ref, mag, 64, what="forced ws g4 grid 2")
    assert type(dispatch.fast_lookup(a, b, config=cfg)) is dispatch.GluonEntry
    tile = dict(bias=False, block_m=128, block_n=128, block_k=64, stages=4, group_m=4, num_sms=2)
    assert ran == [tile] * 3, ran


def test_a_warm_entry_of_another_epilogue_does_not_serve_a_ws_call(monkeypatch, device):
    """The fast key leaves alpha and beta out, and they decide whether the 'ws' kernel may run the call:
    after an addmm with beta 0.5 (planned without the kernel) the same operands with beta 1 (F.linear's
    bias add, the kernel's) run the 'ws' plan, and each epilogue keeps its own warm entry. Here a tile
    table's 'ws' entry is the 256x256x64 plan (the interpreter runs the other pick)."""
    import dataclasses

    from tritonblas import tables

    if device != "cpu":
        pytest.skip("CPU only: the Gluon kernel and its launch are stood in for; on the H200 the real kernel "
                    "runs in tests/dropin/test_ws_route_gpu.py")
    ran = []
    _stand_ins(monkeypatch, ran)
    m, n, k = 256, 256, 64
    problem = GemmProblem(m, n, k, "bf16", "bf16", "bf16")
    ws_cfg = TileConfig(Kind.WS, 128, 128, 64, 8, 4, 8, grid=4)
    table = dataclasses.replace(tables.make_table([problem], WS), entries={problem: ws_cfg})
    tables.set_table(table)
    try:
        tritonblas.clear_caches()
        a, b, bias = _t(m, k), _t(k, n), _t(n)
        assert dispatch.plan_for(a, b, c=bias, profile=WS).config == ws_cfg
        for beta, runs in ((0.5, 0), (1.0, 1), (0.5, 1), (1.0, 2), (1.0, 3)):
            got = dispatch.gemm(a, b, c=bias, beta=beta, profile=WS)
            assert len(ran) == runs, (beta, ran)
            torch.testing.assert_close(got.double(), a.double() @ b.double() + beta * bias.double(),
                                       rtol=2e-2, atol=5e-2)
    finally:
        tables.set_table(None)
        tritonblas.clear_caches()


def test_a_forced_ws_config_error_names_the_calls_reason(monkeypatch, device):
    """The forced-config error names what this call lacks (ws_reason), not only the kernel's list."""
    monkeypatch.setattr(gluon_route, "gluon_runs", lambda a, b, out: None)
    a, b = _t(256, 64).to(device), _t(64, 256).to(device)
    cfg = TileConfig(Kind.WS, 128, 128, 64, 8, 4, 8, grid=4)
    with pytest.raises(ValueError, match=r"cannot run this call \(alpha=2\.0: its epilogue does not scale"):
        dispatch.gemm(a, b, profile=WS, config=cfg, alpha=2.0)
    with pytest.raises(ValueError, match=r"cannot run this call \(c: its epilogue adds F.linear's bias"):
        dispatch.gemm(a, b, c=_t(256, 256).to(device), beta=1.0, profile=WS, config=cfg)
    monkeypatch.setenv(settings.ENV_GLUON, "0")
    with pytest.raises(ValueError, match=r"cannot run this call \(TRITONBLAS_GLUON=0"):
        dispatch.explain(a, b, profile=WS, config=cfg)

"""torch.compile meets tritonblas on CPU (the interpreter runs the kernels inside the compiled
graph): routed calls under ``enable()`` with ``fullgraph=True``, compared with float64 torch."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import tritonblas
from tritonblas import dispatch

pytestmark = pytest.mark.usefixtures("cpu_profile")  # tests/dropin/conftest.py


@pytest.fixture(autouse=True)
def _reset():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


@pytest.mark.timeout(300)
@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_routed_calls_compile_with_fullgraph(backend, device):
    """``with tritonblas.enable(): torch.compile(f, fullgraph=True)(x)`` on an ``nn.Linear`` and a
    ``torch.matmul``: the routes' checks used to call ``Tensor.is_neg()`` / ``_is_zerotensor()``
    while dynamo traced them, which it cannot ("torch.* op returned non-Tensor": an error under
    fullgraph=True, a graph break per GEMM otherwise)."""
    lin = torch.nn.Linear(6, 8).to(device)
    y = torch.randn(8, 3, device=device)

    def f(x):
        return torch.matmul(lin(x).relu(), y)

    x = torch.randn(2, 5, 6, device=device)
    with torch.no_grad():
        want = torch.matmul(F.linear(x.double(), lin.weight.double(), lin.bias.double()).relu(), y.double())
    dispatch.reset_stats()
    with torch.no_grad(), tritonblas.enable():
        got = torch.compile(f, fullgraph=True, backend=backend)(x)
    assert dispatch.stats()["launches"] == 2
    torch.testing.assert_close(got.double(), want, rtol=1e-5, atol=1e-5)


def test_meta_tensors_in_a_block_run_torch(device):
    """Meta tensors reach the routes (shape inference, torch's decompositions): they used to raise
    "unknown device type for autocast" from the routes' autocast query instead of running torch's op."""
    a, b = torch.empty(5, 6, device="meta"), torch.empty(6, 4, device="meta")
    with tritonblas.enable():
        assert torch.mm(a, b).shape == (5, 4)
        assert (a @ b).device.type == "meta"
        assert F.linear(a, b.t()).shape == (5, 4)
        assert torch.addmm(b[0], a, b).shape == (5, 4)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_inplace_gemms_with_torch_decompositions_compile_in_a_block(backend, device):
    """``c.addmm_(a, b)`` / ``v.addmv_(a, x)`` compiled inside ``enable()``: torch's Python
    decompositions of these in-place ops call ``torch.mm`` / ``torch.mv`` on meta tensors while
    dynamo runs them on fake tensors; the routed wrapper took them and crashed the compile."""
    a, b, c = torch.randn(5, 6, device=device), torch.randn(6, 4, device=device), torch.randn(5, 4, device=device)

    def f(c, a, b):
        return c.clone().addmm_(a, b, beta=0.5), c[:, 0].clone().addmv_(a, b[:, 0], alpha=2.0)

    want = f(c.double(), a.double(), b.double())
    with torch.no_grad(), tritonblas.enable():
        got = torch.compile(f, backend=backend)(c, a, b)
    for g, w in zip(got, want):
        torch.testing.assert_close(g.double(), w, rtol=1e-5, atol=1e-5)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("fullgraph", [False, True])
def test_a_loaded_profile_object_compiles(fullgraph, device):
    """``tritonblas.matmul(a, b, profile=<HardwareProfile>)`` compiled: the op gets the profile by a
    key that ``ops._profile_arg`` stores in ``ops._PROFILES``; traced, that store was a side effect
    dynamo replays after the graph, so the graph's op raised KeyError('hash:...') on the first call."""
    import origami

    from tritonblas import ops

    hw = origami.load_profile("h200")
    ops._PROFILES.clear()
    a, b = torch.randn(5, 6, device=device), torch.randn(6, 4, device=device)
    got = torch.compile(lambda a, b: tritonblas.matmul(a, b, profile=hw), backend="aot_eager",
                        fullgraph=fullgraph)(a, b)
    torch.testing.assert_close(got.double(), a.double() @ b.double(), rtol=1e-5, atol=1e-5)


@pytest.mark.timeout(300)
def test_config_and_out_arguments_compile_with_fullgraph(device):
    """``config=TileConfig(...)`` (its JSON text: dynamo cannot trace json.dumps) and ``out=c`` on
    addmm/baddbmm (the partial-overlap check reads storage pointers, which dynamo cannot trace) both
    broke ``fullgraph=True``; the results must equal float64 torch's."""
    import origami

    cfg = origami.TileConfig("dp", 16, 16, 16, 4, 2)
    g = torch.Generator().manual_seed(5)
    a, b, c = (torch.randn(*s, generator=g).to(device) for s in ((20, 24), (24, 12), (20, 12)))
    a3, b3, c3 = (torch.randn(*s, generator=g).to(device) for s in ((2, 9, 7), (2, 7, 5), (2, 9, 5)))

    def f(a, b, c, a3, b3, c3):
        out, out3 = c.clone(), c3.clone()
        tritonblas.addmm(out, a, b, out=out)
        torch.baddbmm(out3, a3, b3, beta=0.5, out=out3)  # routed: the block is open around the call
        return tritonblas.matmul(a, b, config=cfg), out, out3

    with tritonblas.enable():
        got = torch.compile(f, fullgraph=True, backend="aot_eager")(a, b, c, a3, b3, c3)
    d = [t.double() for t in (a, b, c, a3, b3, c3)]
    want = (d[0] @ d[1], d[2] + d[0] @ d[1], 0.5 * d[5] + d[3] @ d[4])
    for x, y in zip(got, want):
        torch.testing.assert_close(x.double(), y, rtol=1e-4, atol=1e-4)


def test_config_text_is_json_that_round_trips():
    """``ops._config_text`` (written field by field so dynamo can trace it on torch 2.11) is JSON equal
    to ``TileConfig.to_dict()`` and decodes to the same config, with None fields and every kind."""
    import json

    import origami
    from tritonblas import ops

    for cfg in (origami.TileConfig("dp", 16, 16, 16, 4, 2), origami.TileConfig("streamk", 128, 256, 64, 8, 3, grid=132),
                origami.TileConfig("splitk", 64, 64, 32, 4, 2, split_k=4, waves_per_eu=2, kpack=1),
                origami.TileConfig("persistent", 128, 128, 64, 8, 4, group_m=4, num_chiplets=8, chunk=2, grid=7)):
        text = ops._config_text(cfg)
        assert json.loads(text) == cfg.to_dict()
        assert ops._config_obj(text) == cfg


@pytest.mark.timeout(300)
def test_a_replaced_profile_object_compiles_as_itself(device, monkeypatch):
    """``profile=dataclasses.replace(hw, ...)`` compiled: the profile crosses as its content hash,
    which the copy kept from ``hw``, so the graph's op ran with ``hw`` (found by that hash) instead."""
    import dataclasses

    import origami
    from tritonblas import ops

    hw = origami.load_profile("h200")
    slow = dataclasses.replace(hw, launch_overhead_ns=hw.launch_overhead_ns * 10)
    seen, gemm = [], dispatch.gemm

    def spy(*args, **kw):
        seen.append(kw.get("profile"))
        return gemm(*args, **kw)

    monkeypatch.setattr(dispatch, "gemm", spy)
    ops._PROFILES.clear()
    a, b = torch.randn(5, 6, device=device), torch.randn(6, 4, device=device)
    got = torch.compile(lambda a, b: tritonblas.matmul(a, b, profile=slow), backend="aot_eager", fullgraph=True)(a, b)
    assert seen and seen[-1] is slow
    torch.testing.assert_close(got.double(), a.double() @ b.double(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("form", ["a @ b", "a.matmul(b)", "a.mm(b)", "torch.matmul(a, b)", "torch.mm(a, b)"])
def test_under_torch_compile_tensor_methods_are_dynamos_own(device, monkeypatch, form):
    """What docs/dropin.md says of compiled regions: dynamo traces the Tensor-method forms as torch's own ops (nothing
    of ours launches, the result is torch's), while the function forms reach the routes (ours launches, within the
    bound). Eager, every form is routed. The vendor rule off, so that the routes run ours."""
    from _check import assert_gemm_close, reference

    from tritonblas import settings

    monkeypatch.setenv(settings.ENV_VENDOR_ALIGNED, "0")
    a, b = torch.randn(24, 40, device=device), torch.randn(40, 8, device=device)
    f = eval(f"lambda a, b: {form}")  # noqa: S307  (one of the literal forms above)
    with tritonblas.enable():
        dispatch.reset_stats()
        f(a, b)
        eager = dispatch.stats()["launches"]
        compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
        compiled(a, b)
        dispatch.reset_stats()
        got = compiled(a, b)
        launches = dispatch.stats()["launches"]
    assert eager == 1, form
    if form.startswith("torch."):
        assert launches == 1, form
        ref, mag, _ = reference(a, b)
        assert_gemm_close(got, ref, mag, k=40, what=form)
    else:
        assert launches == 0 and torch.equal(got, a @ b), form

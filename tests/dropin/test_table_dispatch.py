"""A loaded tile table overrides the model in the dispatcher: exact hits use the table's config,
misses (and no table) use the model; switching tables re-plans."""

import dataclasses

import pytest
import torch

import origami
import tritonblas
from origami.config import TileConfig
from tritonblas import dispatch, tables


def _rand(*shape, device, seed=0):
    g = torch.Generator(device="cpu").manual_seed(seed)
    return torch.randn(*shape, generator=g).to(device)


@pytest.fixture(autouse=True)
def _clean(monkeypatch):
    monkeypatch.delenv(tables.ENV_TABLE, raising=False)
    tables.set_table(None)
    dispatch.clear_caches()
    yield
    tables.set_table(None)
    dispatch.clear_caches()


@pytest.mark.timeout(300)
def test_table_entry_overrides_the_model_and_misses_fall_back(tmp_path, device, monkeypatch):
    if device == "cpu":
        monkeypatch.setenv("TRITONBLAS_PROFILE", "h200")
    hw = dispatch.device_info(torch.device(device)).profile  # the table is made for the profile the device maps to
    a, b = _rand(40, 64, device=device), _rand(64, 48, device=device, seed=1)
    problem = origami.GemmProblem(40, 48, 64, "fp32", "fp32", "fp32")
    model_cfg = dispatch.plan_for(a, b).config
    forced = TileConfig("dp", 32, 64, 32, 4, 3, group_m=1)
    assert forced != model_cfg and not origami.space.violations(forced, problem, hw)
    table = tables.make_table([problem], hw)
    table = dataclasses.replace(table, entries={problem: forced})
    path = tmp_path / "t.json"
    tables.write_table(table, path)

    monkeypatch.setenv(tables.ENV_TABLE, str(path))
    before = dispatch.stats().get("table_hits", 0)
    out = tritonblas.matmul(a, b)
    assert dispatch.plan_for(a, b).config == forced
    assert dispatch.stats().get("table_hits", 0) == before + 1
    ref = a.double() @ b.double()
    torch.testing.assert_close(out.double(), ref, rtol=1e-4, atol=1e-4)

    # a shape the table does not hold: the model decides
    a2 = _rand(40, 72, device=device, seed=2)
    b2 = _rand(72, 48, device=device, seed=3)
    assert dispatch.plan_for(a2, b2).config == origami.select(
        origami.GemmProblem(40, 48, 72, "fp32", "fp32", "fp32"), hw).config

    # switching the table off re-plans with the model (the plan key carries the table source)
    monkeypatch.delenv(tables.ENV_TABLE)
    assert dispatch.plan_for(a, b).config == model_cfg
    tables.set_table(path)
    assert dispatch.plan_for(a, b).config == forced

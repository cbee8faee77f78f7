"""tritonblas.inductor.OrigamiChoices, the live Inductor choice provider (issue 22 item 4), on CPU
against torch 2.13's Inductor: installed through its official hooks, it answers valid template
configs for any shape, never one the model predicts slower than the best config the offered
templates can express, and falls back to Inductor's own choices where origami has no answer."""

from __future__ import annotations

import functools
import itertools

import pytest
import torch

import origami
from origami import GemmProblem, Kind, TileConfig
from tritonblas import inductor as ind
from tritonblas import tables

lookup_table = pytest.importorskip("torch._inductor.lookup_table", reason="this torch has no Inductor lookup table")
from torch._inductor import config as inductor_config  # noqa: E402
from torch._inductor import ir  # noqa: E402
from torch._inductor.kernel_inputs import MMKernelInputs  # noqa: E402
from torch._inductor.sizevars import SizeVarAllocator  # noqa: E402
from torch._inductor.utils import get_k_splits  # noqa: E402
from torch._inductor.virtualized import V  # noqa: E402

MM = ["aten::mm", "triton::mm", "triton::mm_persistent_tma", "decompose_k"]


def _contiguous(m, n, k, dtype="bf16", a_layout="N", b_layout="N", batch=1) -> GemmProblem:
    """The problem of contiguous operands (its align_bytes from the strides, as the provider reads them)."""
    c = "fp32" if dtype == "tf32" else dtype
    align = GemmProblem.contiguous_align_bytes(m, n, k, dtype, dtype, c, a_layout, b_layout, batch)
    return GemmProblem(m, n, k, dtype, dtype, c, a_layout, b_layout, batch, align)


SHAPES = [_contiguous(4096, 4096, 4096), _contiguous(16, 4096, 4096, a_layout="T"), _contiguous(128, 1024, 65536),
          _contiguous(727, 577, 859, "fp16", b_layout="T"), _contiguous(64, 64, 65536),
          _contiguous(3000, 2000, 1500, "fp32"), _contiguous(2048, 511, 4099)]


class _Graph:
    """The one attribute of V.graph that KernelInputs' hinted shapes and strides read."""

    def __init__(self):
        self.sizevars = SizeVarAllocator()


def _inputs(p: GemmProblem, dtype=None, addmm: bool = False) -> MMKernelInputs:
    dt = dtype or {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[p.a_dtype.value]
    m, n, k, b = p.m, p.n, p.k, p.batch
    a = ([m, k], [k, 1] if p.a_layout.value == "N" else [1, m])
    w = ([k, n], [n, 1] if p.b_layout.value == "N" else [1, k])
    if b > 1:
        a, w = ([b, *a[0]], [m * k, *a[1]]), ([b, *w[0]], [k * n, *w[1]])
    nodes = [ir.InputBuffer(name=name, layout=ir.FixedLayout(torch.device("cpu"), dt, size, stride))
             for name, (size, stride) in (("mat1", a), ("mat2", w))]
    if addmm:
        nodes.insert(0, ir.InputBuffer(name="bias", layout=ir.FixedLayout(torch.device("cpu"), dt, [n], [1])))
    return MMKernelInputs(nodes)


@pytest.fixture
def graph():
    with V.set_graph_handler(_Graph()):
        yield


def _config(tid: str, kw: dict, p: GemmProblem, hw) -> TileConfig:
    kind = ind.TEMPLATES[tid]
    tiles = -(-p.m // kw["BLOCK_M"]) * -(-p.n // kw["BLOCK_N"])
    return TileConfig(kind, kw["BLOCK_M"], kw["BLOCK_N"], kw["BLOCK_K"], kw["num_warps"], kw["num_stages"],
                      kw["GROUP_M"], grid=min(hw.compute_units, tiles) if kind is Kind.PERSISTENT else 0,
                      waves_per_eu=kw.get("waves_per_eu"), matrix_instr_nonkdim=kw.get("matrix_instr_nonkdim"),
                      kpack=kw.get("kpack"))


@functools.lru_cache(maxsize=None)
def _best_by_template(p: GemmProblem, name: str) -> dict[str, float]:
    """Brute force over origami's whole candidate list: per template, the model's time
    (``origami.predict``) of the fastest config it can express (persistent: grid min(CUs, tiles))."""
    hw = origami.load_profile(name)
    best = {"triton::mm": float("inf"), "triton::mm_persistent_tma": float("inf"), "decompose_k": float("inf")}
    for e in origami.rank(p, hw, k=100_000):  # every candidate
        c = e.config
        tiles = -(-p.m // c.block_m) * -(-p.n // c.block_n)
        if c.num_chiplets != 1:
            continue
        if c.kind is Kind.DP:
            best["triton::mm"] = min(best["triton::mm"], e.latency_ns)
        elif c.kind is Kind.PERSISTENT and c.grid == min(hw.compute_units, tiles):
            best["triton::mm_persistent_tma"] = min(best["triton::mm_persistent_tma"],
                                                    origami.predict(p, hw, c).latency_ns)
    for s in get_k_splits(p.m, p.n, p.k):
        if p.k % s == 0:
            best["decompose_k"] = min(best["decompose_k"], ind.decompose_k_ns(p, hw, s)[0])
    return best


def _expressible_best(p: GemmProblem, name: str, templates) -> float:
    return min((t for tid, t in _best_by_template(p, name).items() if tid in templates), default=float("inf"))


def test_a_bad_profile_fails_at_construction():
    """OrigamiChoices(profile="nope") was accepted and raised only inside Inductor's compile of the
    first GEMM (a deep traceback from torch.compile); now the constructor names it."""
    with pytest.raises(origami.ProfileError, match="nope: unknown profile"):
        ind.OrigamiChoices(profile="nope")
    with pytest.raises(TypeError, match="^profile: "):
        ind.OrigamiChoices(profile=42)
    assert ind.OrigamiChoices(profile="h200").profile == "h200"


def test_installs_through_inductors_hooks():
    with inductor_config.patch(inductor_choices_class=ind.OrigamiChoices):
        from torch._inductor.virtualized import _choices_default

        assert isinstance(_choices_default(), ind.OrigamiChoices)
        # the FX-graph cache key takes the handler's uuid (config._cache_config_factory_keys)
        # torch 2.13-2.15 store the handler's uuid there; torch 2.11 keeps the class itself (seen on
        # the H200, 2026-12-01)
        value = inductor_config.save_config_portable()["inductor_choices_class"]
        if isinstance(value, str):
            assert value == ind.OrigamiChoices().uuid()
        else:
            assert value is ind.OrigamiChoices
    assert ind.OrigamiChoices("h200").uuid() != ind.OrigamiChoices("mi300x").uuid()
    handler = ind.OrigamiChoices("h200")
    with V.set_choices_handler(handler):
        assert V.choices is handler
    assert isinstance(handler, lookup_table.LookupTableChoices)


@pytest.mark.parametrize("name", ["h200", "mi300x"])
def test_answers_the_best_expressible_config(graph, name):
    hw = origami.load_profile(name)
    handler = ind.OrigamiChoices(name)
    offered = [MM, ["triton::mm"], ["aten::mm", "triton::mm", "decompose_k"], ["triton::mm_persistent_tma"]]
    for p, templates in itertools.product(SHAPES, offered):
        got = handler.lookup_template_configs(_inputs(p), "mm", templates, {"triton::mm": "src-hash"})
        inductor_splits = [s for s in get_k_splits(p.m, p.n, p.k) if p.k % s == 0]
        best = _expressible_best(p, name, templates)
        if best == float("inf"):  # e.g. a persistent template alone on 2-byte aligned operands
            assert got == {}, (p.describe(), templates, got)
            continue
        assert len(got) == 1, (p.describe(), templates, got)
        (tid, [kw]), = got.items()
        assert tid in templates and tid != "aten::mm"
        if tid == "decompose_k":
            assert set(kw) == {"k_split"} and kw["k_split"] in inductor_splits
            ns = ind.decompose_k_ns(p, hw, kw["k_split"])[0]
        else:
            cfg = _config(tid, kw, p, hw)
            assert {k: v for k, v in kw.items()} == tables.inductor_kwargs(cfg, p)  # the one mapping
            ns = origami.predict(p, hw, cfg).latency_ns  # a valid config: passes every predicate
        assert ns <= best * (1 + 1e-9), (p.describe(), templates, tid, kw, ns, best)
        assert ns >= origami.select(p, hw).latency_ns * (1 - 1e-9) or tid == "decompose_k"


def test_addmm_bmm_and_the_lookup_choices_inductor_builds(graph):
    handler = ind.OrigamiChoices("h200")
    p = GemmProblem(1024, 768, 512)
    (kw,) = handler.lookup_template_configs(_inputs(p, addmm=True), "addmm", ["triton::mm"])["triton::mm"]
    assert kw == tables.inductor_kwargs(origami.select_among(p, "h200", [Kind.DP], chiplet_remap=False).config, p)
    pb = GemmProblem(256, 128, 512, "fp16", "fp16", "fp16", batch=6)
    (kb,) = handler.lookup_template_configs(_inputs(pb), "bmm", ["aten::bmm", "triton::bmm"])["triton::bmm"]
    assert kb["BLOCK_M"] == origami.select_among(pb, "h200", [Kind.DP], chiplet_remap=False).config.block_m
    # Inductor's own step after a hit: a KernelTemplateChoice per entry, our kwargs over its base ones
    from torch._inductor.kernel.mm import mm_template

    with inductor_config.patch({"max_autotune": True, "max_autotune_gemm": True}):
        ki = _inputs(p)
        ktcs = handler._create_lookup_choices(handler.lookup_template_configs(ki, "mm", [mm_template.uid]),
                                              [mm_template], ki, "mm")
    (ktc,) = ktcs
    merged = ktc.params.to_kwargs()
    assert {k: merged[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "num_warps", "num_stages")} == \
        {k: kw[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "num_warps", "num_stages")}


def test_falls_back_where_origami_has_no_answer(graph, monkeypatch):
    handler = ind.OrigamiChoices("h200")
    p = GemmProblem(512, 512, 512)
    for dt in (torch.float8_e4m3fn, torch.int8, torch.float64):
        assert handler.lookup_template_configs(_inputs(p, dtype=dt), "mm", MM) == {}
    assert handler.lookup_template_configs(_inputs(p), "scaled_mm", ["triton::mm"]) == {}
    assert handler.lookup_template_configs(_inputs(p), "mm", ["aten::mm", "triton::blackwell_ws_persistent_device_tma"]) == {}
    # a mixed-dtype GEMM (an out_dtype) and a device with no profile
    ki = MMKernelInputs(_inputs(p).nodes(), out_dtype=torch.float32)
    assert handler.lookup_template_configs(ki, "mm", MM) == {}
    monkeypatch.delenv("TRITONBLAS_PROFILE", raising=False)
    assert ind.OrigamiChoices().lookup_template_configs(_inputs(p), "mm", MM) == {}
    # a miss goes to Inductor's own choices: LookupTableChoices._fallback, i.e. every offered template
    calls = []
    monkeypatch.setattr(type(handler), "_fallback", lambda self, *a, **k: calls.append(a[3]) or ["inductor's own"])
    out = handler._finalize_template_configs({}, _inputs(p, dtype=torch.int8), [], "mm")
    assert out == ["inductor's own"] and calls == ["mm"]


def test_an_offline_table_entry_wins(graph):
    class WithTable(ind.OrigamiChoices):
        """A table for this (CPU) device: the two documented override points of LookupTableChoices."""

        def _get_lookup_table(self):
            return inductor_config.lookup_table.table or {}

        @staticmethod
        def _get_device_key(device):
            return "cpu"

    handler, ki = WithTable("h200"), _inputs(GemmProblem(1024, 768, 512))
    entry = {"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32}
    with inductor_config.patch({"lookup_table.table": {handler.make_lookup_key(ki, "mm"): [
            {"template_id": "triton::mm", **entry}]}}):
        assert handler.lookup_template_configs(ki, "mm", ["triton::mm"]) == {"triton::mm": [entry]}
    (kw,) = handler.lookup_template_configs(ki, "mm", ["triton::mm"])["triton::mm"]
    assert kw != entry and kw["BLOCK_M"] >= 32


@pytest.mark.timeout(240)
def test_torch_compile_on_cpu_with_the_provider_falls_back_cleanly():
    """On CPU Inductor offers no Triton GEMM template (its CPU backend is C++): the provider is
    consulted, answers nothing, and the compiled function is right."""
    seen = []

    class Counting(ind.OrigamiChoices):
        def choose(self, kernel_inputs, op_name, template_uids):
            seen.append((op_name, tuple(template_uids)))
            return super().choose(kernel_inputs, op_name, template_uids)

    torch._dynamo.reset()
    a, b = torch.randn(64, 48), torch.randn(48, 32)
    with inductor_config.patch({"max_autotune_gemm": True, "fx_graph_cache": False}), \
            V.set_choices_handler(Counting("h200")):
        y = torch.compile(lambda x, w: (x @ w).relu(), dynamic=False)(a, b)
    torch._dynamo.reset()
    assert torch.allclose(y, (a @ b).relu(), atol=1e-5)
    assert seen and all(op == "mm" for op, _ in seen), seen

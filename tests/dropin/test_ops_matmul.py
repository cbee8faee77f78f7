"""tritonblas.matmul / bmm vs torch: the 1-D/2-D/N-D broadcasting grid, layouts, empty sizes, out=.

On CPU the kernels run under TRITON_INTERPRET=1 with the h200 profile (set per test); the shapes are
small because the interpreter costs ~20 ms per program. Every comparison is against torch on the
same inputs; fp32 dots are exact in the interpreter, so torch's fp32 tolerance applies.
"""

from __future__ import annotations

import itertools
import warnings

import pytest
import torch

import tritonblas
from tritonblas import dispatch


pytestmark = pytest.mark.usefixtures("cpu_profile")  # tests/dropin/conftest.py


def _operand(shape, device, noncontig=False, dtype=torch.float32, gen=None):
    """Random tensor of ``shape``; non-contiguous (a transposed buffer) when asked and possible."""
    if noncontig and len(shape) >= 2:
        t = torch.randn(*shape[:-2], shape[-1], shape[-2], generator=gen, dtype=torch.float64)
        t = t.to(dtype).to(device).transpose(-1, -2)
    elif noncontig and len(shape) == 1:
        t = torch.randn(shape[0] * 2, generator=gen, dtype=torch.float64).to(dtype).to(device)[::2]
    else:
        t = torch.randn(*shape, generator=gen, dtype=torch.float64).to(dtype).to(device)
    return t


def _same(ours, ref, what=""):
    assert ours.shape == ref.shape, f"{what}: shape {tuple(ours.shape)} != {tuple(ref.shape)}"
    assert ours.dtype == ref.dtype and ours.device == ref.device, what
    assert ours.is_contiguous() == ref.is_contiguous(), f"{what}: contiguity differs"
    torch.testing.assert_close(ours, ref, rtol=1.3e-6, atol=1e-5, msg=lambda m: f"{what}: {m}")


def _grid():
    """torch's test_matmul_small_brute_force_{1d,2d,3d}_Nd: every size 0..3 subset, batch 0..2."""
    sizes = (0, 1, 2, 3)
    cases = []
    for da, db in itertools.product((1, 2, 3), repeat=2):
        for m, k, n in itertools.product(sizes, repeat=3):
            batches = (None,) if max(da, db) < 3 else (0, 1, 2)
            for bt in batches:
                sa = {1: (k,), 2: (m, k), 3: (bt, m, k)}[da]
                sb = {1: (k,), 2: (k, n), 3: (bt, k, n)}[db]
                cases.append((sa, sb))
    return cases


GRID = _grid()


@pytest.mark.parametrize("part", range(6))
def test_small_brute_force_grid(part, device):
    gen = torch.Generator().manual_seed(part)
    for i, (sa, sb) in enumerate(GRID[part::6]):
        nc_a, nc_b = bool(i & 1), bool(i & 2)
        a, b = _operand(sa, device, nc_a, gen=gen), _operand(sb, device, nc_b, gen=gen)
        _same(tritonblas.matmul(a, b), torch.matmul(a, b), f"{sa}{'T' * nc_a} @ {sb}{'T' * nc_b}")


BROADCAST = [
    ((2, 1, 3, 4), (5, 4, 2)),      # batch broadcast both ways
    ((1, 3, 4), (5, 4, 6)),         # size-1 batch
    ((3, 4), (2, 5, 4, 6)),         # 2-D @ 4-D
    ((4,), (2, 3, 4, 6)),           # 1-D @ N-D
    ((2, 3, 5, 4), (4,)),           # N-D @ 1-D (folded)
    ((2, 3, 5, 4), (4, 7)),         # N-D @ 2-D (folded)
    ((33, 17), (17, 40)),           # ragged 2-D
    ((2, 31, 7), (7, 29)),          # ragged folded
    ((37,), (3, 37, 5)),            # ragged 1-D @ 3-D
    ((3, 1, 9, 23), (1, 2, 23, 11)),
]


@pytest.mark.parametrize("sa,sb", BROADCAST, ids=[f"{a}@{b}" for a, b in BROADCAST])
def test_broadcasting(sa, sb, device):
    gen = torch.Generator().manual_seed(1)
    a, b = _operand(sa, device, gen=gen), _operand(sb, device, gen=gen)
    _same(tritonblas.matmul(a, b), torch.matmul(a, b), f"{sa} @ {sb}")
    assert dispatch.stats()["launches"] == 1


def test_batch_broadcast_uses_stride_zero_not_copies(device):
    """A 2-D operand broadcast over a batch reaches the kernel as a stride-0 view (one launch)."""
    a = _operand((4, 9, 6), device).transpose(0, 1)  # batch dims not mergeable with M: no fold
    b = _operand((6, 5), device)
    _same(tritonblas.matmul(a, b), torch.matmul(a, b), "permuted batch @ 2-D")
    assert dispatch.stats()["launches"] == 1


LAYOUTS = {
    "transposed-a": lambda d: (_operand((20, 13), d, True), _operand((13, 9), d)),
    "transposed-both": lambda d: (_operand((20, 13), d, True), _operand((13, 9), d, True)),
    "stride0-a": lambda d: (_operand((20, 1), d).expand(20, 13), _operand((13, 9), d)),
    "stride0-b-row": lambda d: (_operand((20, 13), d), _operand((1, 9), d).expand(13, 9)),
    "overlapping": lambda d: (torch.as_strided(_operand((64,), d), (6, 5), (3, 1)), _operand((5, 7), d)),
    "storage-offset": lambda d: (_operand((300,), d)[3:3 + 14 * 11].view(14, 11), _operand((11, 6), d)),
    "padded-ld": lambda d: (_operand((12, 40), d)[:, :17], _operand((17, 30), d)[:, 3:21]),
    "general-strides": lambda d: (_operand((12, 2, 10), d)[:, 1, :], _operand((10, 3, 7), d)[:, 2, :]),
    "permuted-batch": lambda d: (_operand((5, 3, 8), d).permute(1, 0, 2), _operand((3, 8, 4), d)),
    "stride0-batch": lambda d: (_operand((1, 6, 8), d).expand(3, 6, 8), _operand((3, 8, 4), d)),
}


@pytest.mark.parametrize("name", list(LAYOUTS))
def test_layouts(name, device):
    a, b = LAYOUTS[name](device)
    _same(tritonblas.matmul(a, b), torch.matmul(a, b), name)
    assert dispatch.stats()["launches"] == 1, "layout must not fall back to torch"


@pytest.mark.parametrize("sa,sb", [((0, 5), (5, 7)), ((6, 5), (5, 0)), ((0, 4, 5), (5, 3)),
                                   ((2, 0, 5), (2, 5, 3)), ((0, 3, 4), (0, 4, 2)), ((0,), (0, 3)),
                                   ((4, 0), (0,))])
def test_empty_output_no_launch(sa, sb, device):
    a, b = _operand(sa, device), _operand(sb, device)
    ours, ref = tritonblas.matmul(a, b), torch.matmul(a, b)
    _same(ours, ref, f"{sa} @ {sb}")
    s = dispatch.stats()
    assert s["launches"] == 0 and s["empty"] >= 1 and s["fallbacks"] == 0


@pytest.mark.parametrize("sa,sb", [((5, 0), (0, 7)), ((2, 3, 0), (0, 4)), ((0,), (0,))])
def test_k_zero_gives_zeros(sa, sb, device):
    a, b = _operand(sa, device), _operand(sb, device)
    ours = tritonblas.matmul(a, b)
    _same(ours, torch.matmul(a, b), f"K=0 {sa} @ {sb}")
    assert (ours == 0).all()
    assert dispatch.stats()["launches"] == 0


def test_bmm(device):
    a, b = _operand((3, 10, 7), device), _operand((3, 7, 12), device, True)
    _same(tritonblas.bmm(a, b), torch.bmm(a, b), "bmm")
    out = torch.full((3, 10, 12), float("nan"), device=device)
    tritonblas.bmm(a, b, out=out)
    _same(out, torch.bmm(a, b), "bmm out=")


def test_fp16_bf16(device):
    for dtype in (torch.float16, torch.bfloat16):
        a, b = _operand((19, 24), device, dtype=dtype), _operand((24, 13), device, True, dtype=dtype)
        ours = tritonblas.matmul(a, b)
        ref = (a.double() @ b.double()).to(dtype)
        assert ours.dtype == dtype
        torch.testing.assert_close(ours, ref, atol=1e-2, rtol=1e-2)


def test_unsupported_dtypes_fall_back(device):
    for dtype in (torch.float64, torch.int32):
        a = torch.arange(12, device=device).reshape(3, 4).to(dtype)
        b = torch.arange(8, device=device).reshape(4, 2).to(dtype)
        if device == "cuda" and dtype == torch.int32:
            continue  # torch has no integer CUDA matmul: it raises, and so do we
        torch.testing.assert_close(tritonblas.matmul(a, b), torch.matmul(a, b), rtol=0, atol=0)
    s = dispatch.stats()
    assert s["launches"] == 0 and s["fallbacks"] >= 1


# --- out= ------------------------------------------------------------------------------------
def test_out_works_under_no_grad(device):
    a = _operand((9, 7), device).requires_grad_()
    b = _operand((7, 5), device)
    out = torch.full((9, 5), float("nan"), device=device)
    with torch.no_grad():
        r = tritonblas.matmul(a, b, out=out)
    assert r is out
    _same(out, torch.matmul(a.detach(), b), "out= no_grad")


def test_out_raises_under_grad(device):
    a = _operand((9, 7), device).requires_grad_()
    b = _operand((7, 5), device)
    out = torch.empty(9, 5, device=device)
    with pytest.raises(RuntimeError) as ours:
        tritonblas.matmul(a, b, out=out)
    with pytest.raises(RuntimeError) as theirs:
        torch.matmul(a, b, out=out)
    assert "don't support automatic differentiation" in str(ours.value)
    assert "don't support automatic differentiation" in str(theirs.value)


def test_out_layouts_and_checks(device):
    a, b = _operand((2, 6, 7), device), _operand((7, 5), device)
    ref = torch.matmul(a, b)
    out = torch.full((2, 5, 6), float("nan"), device=device).transpose(1, 2)  # not viewable as (12, 5)
    tritonblas.matmul(a, b, out=out)
    torch.testing.assert_close(out, ref)
    out = torch.empty(4, device=device)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        tritonblas.matmul(a, b, out=out)
    assert out.shape == ref.shape and any("resized" in str(x.message) for x in w)
    torch.testing.assert_close(out, ref)
    with pytest.raises(RuntimeError, match="dtype"):
        tritonblas.matmul(a, b, out=torch.empty(2, 6, 5, device=device, dtype=torch.float64))
    with pytest.raises(RuntimeError, match="single memory location"):
        tritonblas.matmul(a, b, out=torch.empty(1, 1, 5, device=device).expand(2, 6, 5))


@pytest.mark.parametrize("call", ["matmul", "addmm", "bmm", "mv", "routed mm", "routed addmv"])
def test_out_that_is_an_inference_tensor_raises_outside_inference_mode(device, call):
    """An ``out=`` made under ``torch.inference_mode()`` and written outside it: torch raises
    ("Inplace update to inference tensor outside InferenceMode"); tritonblas wrote it silently, on the
    first call and on the warm second one. Inside inference mode the write is allowed."""
    a, b, c = _operand((6, 7), device), _operand((7, 5), device), _operand((6, 5), device)
    a3, b3, v = _operand((2, 6, 7), device), _operand((2, 7, 5), device), _operand((7,), device)

    def run(mod, out):
        with tritonblas.enable():
            return {"matmul": lambda: mod.matmul(a, b, out=out), "addmm": lambda: mod.addmm(c, a, b, out=out),
                    "bmm": lambda: mod.bmm(a3, b3, out=out), "mv": lambda: mod.mv(a, v, out=out),
                    "routed mm": lambda: torch.mm(a, b, out=out),
                    "routed addmv": lambda: torch.addmv(c[:, 0], a, v, out=out)}[call]()

    shape = {"bmm": (2, 6, 5), "mv": (6,), "routed addmv": (6,)}.get(call, (6, 5))
    mod = torch if call.startswith("routed") else tritonblas
    with torch.inference_mode():
        inf = torch.empty(shape, device=device)
    with pytest.raises(RuntimeError) as theirs:
        {"bmm": lambda: torch.bmm(a3, b3, out=inf), "mv": lambda: torch.mv(a, v, out=inf),
         "routed addmv": lambda: torch.addmv(c[:, 0], a, v, out=inf)}.get(call, lambda: torch.mm(a, b, out=inf))()
    for _ in range(2):  # cold, then warm (a fast entry for a plain out of this signature exists)
        run(mod, torch.empty(shape, device=device))
        with pytest.raises(RuntimeError) as ours:
            run(mod, inf)
        assert "inference tensor outside InferenceMode" in str(ours.value), str(ours.value)
    assert "inference tensor outside InferenceMode" in str(theirs.value)
    with torch.inference_mode():
        r = run(mod, inf)
    ref = {"bmm": lambda: torch.bmm(a3, b3), "mv": lambda: torch.mv(a, v), "routed addmv": lambda: torch.addmv(c[:, 0], a, v),
           "addmm": lambda: torch.addmm(c, a, b)}.get(call, lambda: torch.mm(a, b))()
    torch.testing.assert_close(r, ref)


def test_out_aliasing_an_input(device):
    a = _operand((6, 6), device)
    b = _operand((6, 6), device)
    ref = a @ b
    tritonblas.matmul(a, b, out=a)
    torch.testing.assert_close(a, ref)


# --- plan cache, config=, profile= -------------------------------------------------------------
def test_warm_path_builds_no_plan(device):
    a, b = _operand((11, 7), device), _operand((7, 5), device)
    tritonblas.matmul(a, b)
    built = dispatch.stats()["plans"]
    for _ in range(3):
        tritonblas.matmul(_operand((11, 7), device), _operand((7, 5), device))
    s = dispatch.stats()
    assert s["plans"] == built and s["launches"] == 4


def test_warm_launches_count_their_launcher(device):
    """``stats()["triton_launches"]`` counts warm launches that went through Triton's own launcher: on a
    GPU none (the raw launcher is bound at the first call); under the interpreter every one."""
    a, b = _operand((11, 7), device), _operand((7, 5), device)
    tritonblas.matmul(a, b)
    before = dispatch.stats()["triton_launches"]
    for _ in range(3):
        tritonblas.matmul(a, b)
    assert dispatch.stats()["triton_launches"] - before == (0 if a.is_cuda else 3)


def test_plan_cache_is_bounded_and_clearable(device, monkeypatch):
    tritonblas.clear_caches()
    monkeypatch.setattr(dispatch, "MAX_PLANS", 2)
    for m in (3, 4, 5):
        tritonblas.matmul(_operand((m, 4), device), _operand((4, 3), device))
    assert len(dispatch._PLANS) == 2
    tritonblas.clear_caches()
    assert len(dispatch._PLANS) == 0


def test_gemm_key(device):
    a, b = _operand((11, 7), device), _operand((7, 5), device, True)
    out = torch.empty(11, 5, device=device)
    info = dispatch.device_info(a.device)
    key = dispatch.GemmKey.from_tensors(a, b, out, profile=info.profile)
    assert (key.m, key.n, key.k, key.batch) == (11, 5, 7, 1)
    assert key.a_layout.value == "N" and key.b_layout.value == "T"
    assert key.a_dtype is dispatch.DTYPES[torch.float32] and not key.allow_tf32
    assert key.profile == info.profile.content_hash and key.align in (1, 4, 16)
    assert hash(key) == hash(dispatch.GemmKey.from_tensors(a, b, out, profile=info.profile))
    with pytest.raises(AttributeError):
        key.m = 3  # frozen
    assert dispatch.GemmKey.from_tensors(a, b, out, profile=info.profile, tf32=True).a_dtype.value == "tf32"


def test_dtype_map_is_the_inverse_of_plans():
    from tritonblas.plan import TORCH_DTYPES

    for t, d in dispatch.DTYPES.items():
        assert TORCH_DTYPES[d] is t
    assert dispatch.dtype_of(torch.float32, tf32=True).value == "tf32"


def test_forced_config(device):
    from origami import TileConfig

    a, b = _operand((40, 30), device), _operand((30, 20), device)
    for cfg in (TileConfig("dp", 32, 32, 32, 4, 2), TileConfig("streamk", 32, 32, 16, 4, 2, grid=3),
                TileConfig("splitk", 16, 32, 16, 4, 2, split_k=2)):
        _same(tritonblas.matmul(a, b, config=cfg), torch.matmul(a, b), cfg.short())
        assert dispatch.plan_for(a, b, config=cfg).config == cfg


def test_invalid_config_names_the_violations(device):
    from origami import TileConfig

    a, b = _operand((40, 30), device), _operand((30, 20), device)
    bad = TileConfig("dp", 256, 256, 64, 4, 4)  # 512 accumulator registers per thread, too much smem
    with pytest.raises(ValueError) as e:
        tritonblas.matmul(a, b, config=bad)
    msg = str(e.value)
    assert "registers" in msg and "shared memory" in msg
    with pytest.raises(TypeError):
        tritonblas.matmul(a, b, config={"kind": "dp"})


def test_forced_group_m_that_overflows_int32_tile_ids_is_refused(device):
    """GROUP_M=2^30 with 2 tile columns wraps the kernels' int32 tile ids: it returned NaN (interpreter)
    instead of raising. Now the shared predicate refuses it like any invalid config."""
    from origami import TileConfig

    a, b = _operand((16, 16), device), _operand((16, 128), device)
    with pytest.raises(ValueError, match="group: GROUP_M=1073741824"):
        tritonblas.matmul(a, b, config=TileConfig("dp", 16, 64, 16, 4, 2, group_m=2**30))
    _same(tritonblas.matmul(a, b, config=TileConfig("dp", 16, 64, 16, 4, 2, group_m=2**20)), torch.matmul(a, b), "g2^20")


def test_tf32_flag_reaches_the_key(device):
    a, b = _operand((9, 8), device), _operand((8, 7), device)
    old, old_prec = torch.backends.cuda.matmul.allow_tf32, torch.get_float32_matmul_precision()
    try:
        torch.backends.cuda.matmul.allow_tf32 = False
        assert dispatch.plan_for(a, b).problem.a_dtype.value == "fp32"
        torch.backends.cuda.matmul.allow_tf32 = True
        assert dispatch.allow_tf32()
        assert dispatch.plan_for(a, b).problem.a_dtype.value == "tf32"
        assert dispatch.plan_for(a.half(), b.half()).problem.a_dtype.value == "fp16"
        torch.testing.assert_close(tritonblas.matmul(a, b), a @ b, atol=1e-2, rtol=1e-2)
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.set_float32_matmul_precision("high")
        assert dispatch.allow_tf32()
        torch.set_float32_matmul_precision("highest")
        assert not dispatch.allow_tf32()
    finally:
        torch.set_float32_matmul_precision(old_prec)
        torch.backends.cuda.matmul.allow_tf32 = old


def test_deterministic_mode(device):
    a, b = _operand((37, 29), device), _operand((29, 23), device)
    old = torch.are_deterministic_algorithms_enabled()
    try:
        torch.use_deterministic_algorithms(True)
        first = tritonblas.matmul(a, b)
        assert dispatch.plan_for(a, b).config.kind in dispatch.DETERMINISTIC_KINDS
        for _ in range(3):
            assert torch.equal(tritonblas.matmul(a, b), first)
    finally:
        torch.use_deterministic_algorithms(old)


@pytest.mark.skipif(torch.cuda.is_available(), reason="CPU-only: the interpreter needs a profile")
def test_cpu_needs_a_profile(monkeypatch):
    from tritonblas._device import DeviceError

    monkeypatch.delenv("TRITONBLAS_PROFILE", raising=False)
    a, b = torch.randn(4, 3), torch.randn(3, 2)
    with pytest.raises(DeviceError, match="TRITONBLAS_PROFILE"):
        tritonblas.matmul(a, b)
    assert issubclass(DeviceError, RuntimeError)
    _same(tritonblas.matmul(a, b, profile="h100"), a @ b, "profile=")
    assert dispatch.plan_for(a, b, profile="mi300x") is not None


def test_profile_argument_and_environment(device, monkeypatch):
    import origami

    a, b = _operand((9, 8), device), _operand((8, 7), device)
    assert dispatch.device_info(a.device, "h100").profile.name == "h100"
    assert "profile: h100" in tritonblas.explain(a, b, profile="h100")
    _same(tritonblas.matmul(a, b, profile=origami.load_profile("h100")), a @ b, "profile object")
    from importlib import resources

    path = str(resources.files("hwprofiles").joinpath("mi300x.yaml"))
    assert "profile: mi300x" in tritonblas.explain(a, b, profile=path)
    monkeypatch.setenv("TRITONBLAS_PROFILE", "b200")
    assert "profile: b200" in tritonblas.explain(a, b)
    assert "profile: h100" in tritonblas.explain(a, b, profile="h100")  # the argument wins


def test_explain(device):
    a, b = _operand((2, 9, 8), device), _operand((8, 7), device)
    text = tritonblas.explain(a, b)
    for word in ("profile:", "config:", "predicted:", "bound", "terms"):
        assert word in text, text
    assert "torch runs it" in tritonblas.explain(a.double(), b.double())
    assert "no launch" in tritonblas.explain(a[:, :0], b)


def test_cold_path_during_graph_capture_raises(device, monkeypatch):
    """CPU stand-in for the GPU capture test: the cold path asks whether the stream is capturing."""
    import contextlib

    a, b = _operand((9, 8), device), _operand((8, 7), device)
    out = torch.empty(9, 7, device=device)
    info = dispatch.device_info(a.device)
    key = dispatch.GemmKey.from_tensors(a, b, out, profile=info.profile)
    monkeypatch.setattr(dispatch, "_cuda_guard", lambda dev: contextlib.nullcontext())
    monkeypatch.setattr(torch.cuda, "is_current_stream_capturing", lambda: True)
    tritonblas.clear_caches()
    with pytest.raises(RuntimeError, match="warm up first"):
        dispatch._build(key, info.profile, torch.device("cuda", 0), "mm")
    assert key not in dispatch._PLANS and dispatch.stats()["plans"] == 0

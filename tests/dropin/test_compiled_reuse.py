"""Compiled kernels shared across keys (``launchcache.COMPILED``, ``launchcache._spec_key``, ``launchcache.reuse``).

A plan-cache miss may launch through the compiled kernel and binding of an earlier key only when
Triton itself would pick the same CompiledKernel: the specialisation key must separate everything
Triton 3.6 specialises on. Checked here on CPU against the installed Triton's own binder
(``create_function_from_signature`` + ``native_specialize_impl``, what ``JITFunction.run`` keys its
kernel cache on) over many launches, plus one perturbation at a time; then the miss path itself
with a stand-in binding under the interpreter (the GPU tests are in test_fast_path.py).
"""

from __future__ import annotations

import itertools
from types import SimpleNamespace

import pytest
import torch

import tritonblas
from origami.config import TileConfig
from tritonblas import dispatch, fallback, _fastlaunch, launchcache
from tritonblas import plan as _plan

pytestmark = pytest.mark.usefixtures("cpu_profile")  # tests/dropin/conftest.py

DP = TileConfig("dp", 32, 32, 32, 4, 2)


@pytest.fixture(autouse=True)
def _clean():
    tritonblas.clear_caches()
    yield
    tritonblas.clear_caches()


def _rand(*shape, device, dtype=torch.float32, seed=0, offset=0):
    """Random tensor; ``offset`` elements into its buffer (another address residue mod 16)."""
    g = torch.Generator().manual_seed(seed)
    n = 1
    for s in shape:
        n *= s
    buf = torch.randn(n + offset, generator=g, dtype=torch.float64).to(dtype).to(device)
    return buf[offset:].view(*shape)


def _prepared(a, b, *, config=None, c=None, beta=0.0, out=None):
    out = torch.empty(fallback.out_shape(a, b), dtype=a.dtype, device=a.device) if out is None else out
    lp = dispatch.plan_for(a, b, out, c=c, config=config)
    return _plan.prepare_launch(lp, a, b, out, c=c, alpha=1.0, beta=beta)


_BINDERS: dict = {}


def _triton_key(prepared) -> str:
    """The in-memory cache key Triton 3.6's ``JITFunction.run`` computes for this launch: its own
    generated binder over the kernel's parameters, then ``str(specialization) + str(options)``."""
    from triton.backends.compiler import BaseBackend
    from triton.runtime.jit import JITFunction, create_function_from_signature

    fn = getattr(prepared.kernel, "fn", prepared.kernel)
    binder = _BINDERS.get(fn)
    if binder is None:
        jit = JITFunction(fn)
        binder = _BINDERS[fn] = create_function_from_signature(jit.signature, jit.params, BaseBackend)
    _, spec, options = binder(*prepared.args, **prepared.kwargs, debug=False, instrumentation_mode="")
    return str(spec) + str(options)


def _key(prepared, index=0):
    return launchcache._spec_key(prepared.kernel, prepared.args, prepared.kwargs, index)


# --- the key against Triton's own -------------------------------------------------------------
def _launches(device):
    """Many launches over shapes, dtypes, layouts, addresses, batches, epilogues and configs."""
    configs = (None, DP, TileConfig("splitk", 16, 32, 16, 4, 2, split_k=2),
               TileConfig("streamk", 32, 32, 16, 4, 2, grid=3))
    out = []
    for i, (m, dtype, cfg) in enumerate(itertools.product(
            (1, 2, 15, 16, 17, 31, 32, 33, 48, 100), (torch.float32, torch.bfloat16, torch.float16), configs)):
        for n, k, bt, off, batch, addmm in ((48, 64, False, 0, 0, False), (40, 24, True, 0, 0, False),
                                            (16, 32, False, 1, 0, False), (48, 64, False, 0, 2, False),
                                            (24, 40, True, 0, 0, True), (64, 48, False, 2, 0, True)):
            sa = (batch, m, k) if batch else (m, k)
            a = _rand(*sa, device=device, dtype=dtype, seed=i, offset=off)
            b = _rand(n, k, device=device, dtype=dtype, seed=i + 1).mT if bt else _rand(k, n, device=device,
                                                                                         dtype=dtype, seed=i + 1)
            c = _rand(n, device=device, dtype=dtype, seed=i + 2) if addmm else None
            try:
                p = _prepared(a, b, config=cfg, c=c, beta=2.0 if addmm else 0.0)
            except ValueError:  # a forced config that this problem's predicates reject
                continue
            out.append(((m, n, k, dtype, cfg, bt, off, batch, addmm), p))
    return out


def test_equal_spec_keys_mean_equal_triton_keys(device):
    if device != "cpu":
        pytest.skip("CPU: the installed Triton's binder is run without a device")
    groups: dict = {}
    for what, p in _launches(device):
        key = _key(p)
        assert key is not None, what
        groups.setdefault(key, []).append((what, _triton_key(p)))
    for key, members in groups.items():
        tkeys = {t for _, t in members}
        assert len(tkeys) == 1, f"one spec key, {len(tkeys)} Triton keys: {[w for w, _ in members]}"
    shared = [ms for ms in groups.values() if len({w[0] for w, _ in ms}) > 1]
    assert shared, "no two shapes shared a compiled kernel: the test would be vacuous"
    n_launches = sum(len(ms) for ms in groups.values())
    assert len(groups) < n_launches / 2


# --- one perturbation at a time ---------------------------------------------------------------
def _swap(args: tuple, pos: int, value) -> tuple:
    return (*args[:pos], value, *args[pos + 1:])


def test_spec_key_separates_what_triton_specialises_on(device, monkeypatch):
    a, b = _rand(37, 64, device=device), _rand(64, 48, device=device, seed=1)
    p = _prepared(a, b, config=DP)
    k0 = _key(p)
    args, kw = p.args, p.kwargs
    spec = lambda args=args, kw=kw, kernel=p.kernel, index=0: launchcache._spec_key(kernel, args, kw, index)  # noqa: E731
    m_pos = launchcache._N_FIXED  # m, the first integer
    assert args[m_pos] == 37
    # integers: == 1, % 16 == 0 and the width are separated; other values are not
    assert spec(_swap(args, m_pos, 37 + 16)) == k0
    assert spec(_swap(args, m_pos, 38)) == k0
    assert spec(_swap(args, m_pos, 48)) != k0
    assert spec(_swap(args, m_pos, 1)) != k0
    assert spec(_swap(args, m_pos, (1 << 31) + 5)) != k0
    assert spec(_swap(args, m_pos, (1 << 63) + 5)) != spec(_swap(args, m_pos, (1 << 31) + 5))
    assert spec(_swap(args, m_pos, True)) is None, "a bool is not an int to Triton: not covered"
    # floats (alpha, beta) are fp32 whatever their value
    assert spec(_swap(args, len(args) - 2, 2.5)) == k0
    # tensors: dtype and address residue mod 16
    t_pos = 4  # the bias stand-in (out)
    assert spec(_swap(args, t_pos, torch.empty_like(args[t_pos]))) == k0
    assert spec(_swap(args, t_pos, args[t_pos].half())) != k0
    assert spec(_swap(args, t_pos, _rand(37, 48, device=device, offset=1))) != k0
    assert spec(_swap(args, t_pos, _rand(37, 48, device=device, offset=2))) != k0  # 8 B: not Triton's "D"
    assert spec(_swap(args, t_pos, _rand(37, 48, device=device, offset=4))) == k0  # 16 B
    assert spec(_swap(args, t_pos, None)) is None
    # constexprs and options, with their types
    for name, value in (("BLOCK_M", 64), ("HAS_C", 1), ("num_warps", 8), ("INPUT_PRECISION", "tf32")):
        assert name in kw
        assert spec(kw={**kw, name: value}) != k0, name
    assert spec(kw={**kw, "extra": 1}) != k0
    # the kernel, the device, Triton's debug knob
    assert spec(kernel=object()) != k0
    assert spec(index=1) != k0
    knobs = launchcache._triton_knobs()
    monkeypatch.setattr(knobs.runtime, "debug", True)
    assert spec() != k0
    monkeypatch.setattr(knobs.runtime, "debug", False)
    assert spec() == k0


def test_spec_key_separates_descriptors(device):
    from triton.tools.tensor_descriptor import TensorDescriptor

    base = torch.empty(64, 64, device=device, dtype=torch.bfloat16)
    args = (TensorDescriptor(base, [64, 64], [64, 1], [16, 32]), 3, 1.0)
    k0 = launchcache._spec_key("kernel", args, {}, 0)
    same = (TensorDescriptor(torch.empty_like(base), [48, 64], [64, 1], [16, 32]), 5, 2.0)
    assert launchcache._spec_key("kernel", same, {}, 0) == k0
    for d in (TensorDescriptor(base, [64, 64], [64, 1], [32, 32]),       # block shape
              TensorDescriptor(base.half(), [64, 64], [64, 1], [16, 32]),  # dtype
              TensorDescriptor(base, [64, 64], [64, 1], [16, 32], padding="nan"),
              TensorDescriptor(base, [1, 64], [64, 1], [16, 32]),         # a shape of 1
              TensorDescriptor(base, [63, 64], [64, 1], [16, 32]),        # a shape not divisible by 16
              TensorDescriptor(base[:, :56], [64, 56], [64, 1], [16, 32])):
        assert launchcache._spec_key("kernel", (d, 3, 1.0), {}, 0) != k0, d


# --- the miss path, with a stand-in binding under the interpreter -----------------------------
@pytest.fixture
def reuse_on_cpu(device, monkeypatch):
    """Let misses of CPU tensors look the compiled-kernel cache up (index -1): the launch itself
    stays Triton's interpreter (``_Fast.launch``), so the results are checked for real."""
    if device != "cpu":
        pytest.skip("the GPU version is in test_fast_path.py")
    monkeypatch.setattr(launchcache, "_reuse_index", lambda dev: -1 if dev.type == "cpu" else None)


def _plant(prepared) -> launchcache._Bound:
    """A stand-in binding for ``prepared``'s specialisation, as ``_remember`` records on a GPU."""
    bound = launchcache._Bound(prepared.kernel, SimpleNamespace(name="run"), "FN", "PM", (), None)
    launchcache.COMPILED[_key(prepared, -1)] = bound
    return bound


def test_misses_share_a_binding_only_for_equal_keys(device, reuse_on_cpu):
    b = _rand(32, 48, device=device, seed=1)
    bound = _plant(_prepared(_rand(17, 32, device=device), b, config=DP))
    for m in range(17, 41):
        a = _rand(m, 32, device=device, seed=m)
        r = tritonblas.matmul(a, b, config=DP)
        torch.testing.assert_close(r, a @ b, rtol=1.3e-6, atol=1e-5)
        f = launchcache.FAST[launchcache.fast_key(a, b, None, None, None, DP)]
        assert (f.run is bound.run) == (m % 16 != 0), m  # M = 32 is divisible by 16: another kernel
        assert torch.equal(tritonblas.matmul(a, b, config=DP), r)  # the warm call of that entry
    a16 = _rand(20, 32, device=device, dtype=torch.float16)
    tritonblas.matmul(a16, b.half(), config=DP)
    assert launchcache.FAST[launchcache.fast_key(a16, b.half(), None, None, None, DP)].run is None
    a_off = _rand(20, 32, device=device, offset=1)
    torch.testing.assert_close(tritonblas.matmul(a_off, b, config=DP), a_off @ b, rtol=1.3e-6, atol=1e-5)
    assert launchcache.FAST[launchcache.fast_key(a_off, b, None, None, None, DP)].run is None
    assert dispatch.stats()["launches"] == 2 * 24 + 2


@pytest.mark.parametrize("cfg", [TileConfig("splitk", 16, 32, 16, 4, 2, split_k=2),
                                 TileConfig("streamk", 32, 32, 16, 4, 2, grid=3)])
def test_reused_workspace_kernels_and_addmm_stay_exact(device, reuse_on_cpu, cfg):
    b = _rand(32, 40, device=device, seed=1)
    c = _rand(40, device=device, seed=2)
    run = lambda a: tritonblas.addmm(c, a, b, alpha=0.5, beta=2.0, config=cfg)  # noqa: E731
    a0 = _rand(19, 32, device=device)
    bound = _plant(_prepared(a0, b, config=cfg, c=c, beta=2.0))
    for m in (19, 21, 23, 25):
        a = _rand(m, 32, device=device, seed=m)
        r = run(a)
        torch.testing.assert_close(r, torch.addmm(c, a, b, alpha=0.5, beta=2.0), rtol=1.3e-6, atol=1e-5)
        assert torch.equal(run(a), r)
    assert sum(f.run is bound.run for f in launchcache.FAST.values()) == 4


def test_no_reuse_with_launch_hooks_or_cleared_caches(device, reuse_on_cpu, monkeypatch):
    b = _rand(32, 48, device=device, seed=1)
    _plant(_prepared(_rand(17, 32, device=device), b, config=DP))
    monkeypatch.setattr(launchcache, "hooks_on", lambda: True)
    a = _rand(19, 32, device=device)
    tritonblas.matmul(a, b, config=DP)
    assert launchcache.FAST[launchcache.fast_key(a, b, None, None, None, DP)].run is None
    monkeypatch.undo()
    tritonblas.clear_caches()
    assert not launchcache.COMPILED


def test_staged_launches_are_never_shared(device, reuse_on_cpu):
    """A launch that copies an operand first (``PreparedLaunch.staged``) needs ``run_kernel``."""
    a, b = _rand(19, 32, device=device), _rand(32, 48, device=device, seed=1)
    p = _prepared(a, b, config=DP)
    out = p.out
    info = dispatch.device_info(a.device)
    lp = dispatch.plan_for(a, b, out, config=DP)
    staged = SimpleNamespace(**{f: getattr(p, f) for f in ("kernel", "grid", "args", "kwargs", "device", "out")},
                             staged=((out, out),))
    assert launchcache._fast_entry(lp, info, None, p, a, b, out, None, 1.0, 0.0) is not None
    assert launchcache._fast_entry(lp, info, None, staged, a, b, out, None, 1.0, 0.0) is None


# --- the raw launcher, rebound ----------------------------------------------------------------
def test_raw_launcher_rebind_takes_the_new_shapes():
    filled, launched = [], []
    meta = {"swizzle": 3, "elem_size": 2, "block_size": [16, 32]}
    raw = _fastlaunch.RawLauncher(lambda *a: launched.append(a), "FN", (4, 1, 0), (False, False),
                                  {0: (meta, [64, 64], [64, 1], 0, 10)},
                                  lambda *a: filled.append(a) or f"map{len(filled)}")
    d = SimpleNamespace(shape=[48, 64], strides=[80, 1], padding="zero")
    new = raw.rebind({0: d})
    assert new is not raw and new.desc[0] == (meta, [48, 64], [80, 1], 0, 10) and raw.desc[0][1] == [64, 64]
    assert new.expand(0, 4096) == ("map1", 48, 64, 80, 1)
    assert filled == [(4096, 3, 2, 10, [16, 32], [48, 64], [80, 1], 0)]
    assert new.rebind({1: d}) is None
    assert new.rebind({0: SimpleNamespace(shape=[48, 64], strides=[1, 80], padding="zero")}) is None
    assert raw.rebind({0: SimpleNamespace(shape=[48, 64], strides=[80, 1], padding="nan")}).desc[0][3] == 1
    new(7, 99, ("x",))
    assert launched == [(7, 1, 1, 99, "FN", False, False, None, None, (4, 1, 0), None, None, None, "x")]

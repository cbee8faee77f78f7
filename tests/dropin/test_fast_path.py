"""The dispatcher's warm fast path (``launchcache.FAST``) and the ops' direct call (``ops._direct``).

The fast path must be invisible: bitwise the same results as the checked path (CPU, interpreter),
hit only when everything that decides the launch is equal, and missed when the alignment class,
the strides, the environment or the device → profile mapping change. The direct call skips the
custom-op dispatcher only when nothing (autograd, compile, modes, functorch) would see the op.
"""

from __future__ import annotations

import inspect
from types import SimpleNamespace

import os

import pytest
import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

import tritonblas
from origami import staging
from origami.config import TileConfig
from tritonblas import _device, dispatch, launchcache, ops
from tritonblas import plan as _plan


@pytest.fixture(autouse=True)
def _profile(device, monkeypatch):
    if device == "cpu":
        monkeypatch.setenv("TRITONBLAS_PROFILE", "h200")
    tritonblas.clear_caches()
    dispatch.reset_stats()
    yield


@pytest.fixture
def fast_launches(monkeypatch):
    """Counts launches that went through a fast entry."""
    calls = []

    def spy(original):
        def counted(self, *args):
            calls.append(self)
            return original(self, *args)
        return counted

    # call: every warm launch; call_ready: the raw launches the warm path found ready (GPU)
    monkeypatch.setattr(launchcache.FastEntry, "call", spy(launchcache.FastEntry.call))
    monkeypatch.setattr(launchcache.FastEntry, "call_ready", spy(launchcache.FastEntry.call_ready))
    return calls


def _rand(*shape, device, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g, dtype=torch.float64).to(dtype).to(device)


CASES = {
    "2d": ((37, 64), (64, 48), False, None),
    "b_transposed": ((37, 64), (64, 48), True, None),
    "batched": ((3, 21, 32), (3, 32, 40), False, None),
    "batch_broadcast": ((1, 21, 32), (3, 32, 40), False, None),
    "nd_folded": ((2, 3, 17, 16), (16, 9), False, None),
    "dp": ((37, 64), (64, 48), False, TileConfig("dp", 32, 32, 32, 4, 2)),
    "streamk": ((37, 64), (64, 48), False, TileConfig("streamk", 32, 32, 16, 4, 2, grid=3)),
    "splitk": ((37, 64), (64, 48), True, TileConfig("splitk", 16, 32, 16, 4, 2, split_k=2)),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("case", list(CASES))
def test_fast_path_is_bitwise_the_checked_path(case, dtype, device, fast_launches):
    sa, sb, bt, cfg = CASES[case]
    a = _rand(*sa, device=device, dtype=dtype)
    b = _rand(*sb, device=device, dtype=dtype, seed=1)
    if bt:
        b = b.mT.contiguous().mT
    slow = tritonblas.matmul(a, b, config=cfg)  # checked path; records the fast entry
    assert not fast_launches and len(launchcache.FAST) == 1
    fast = tritonblas.matmul(a, b, config=cfg)
    assert len(fast_launches) == 1, "the second identical call must take the fast path"
    assert torch.equal(slow, fast) and slow.shape == fast.shape and slow.stride() == fast.stride()
    out = torch.empty_like(slow)
    tritonblas.matmul(a, b, config=cfg, out=out)  # out= is a new key: checked, then fast
    tritonblas.matmul(a, b, config=cfg, out=out.zero_())
    assert len(fast_launches) == 2 and torch.equal(out, slow)
    assert dispatch.stats()["launches"] == 4 and dispatch.stats()["plans"] == 1


def test_addmm_and_linear_fast_path(device, fast_launches):
    a, b, c = _rand(19, 24, device=device), _rand(24, 13, device=device, seed=1), _rand(13, device=device, seed=2)
    for _ in range(2):
        r1 = tritonblas.addmm(c, a, b, alpha=0.5, beta=2.0)
    assert len(fast_launches) == 1
    r2 = tritonblas.addmm(c, a, b, alpha=0.5, beta=2.0)
    assert torch.equal(r1, r2) and len(fast_launches) == 2
    torch.testing.assert_close(r2, torch.addmm(c, a, b, alpha=0.5, beta=2.0), rtol=1.3e-6, atol=1e-5)
    w = _rand(13, 24, device=device, seed=3)
    y1, y2 = tritonblas.linear(a, w, c), tritonblas.linear(a, w, c)
    assert torch.equal(y1, y2) and len(fast_launches) == 3


def test_alignment_and_stride_class_changes_miss(device, fast_launches):
    buf = _rand(16 * 40 + 1, device=device)
    a = buf[:16 * 40].view(16, 40)          # 16-byte aligned
    a_off = buf[1:16 * 40 + 1].view(16, 40)  # 4-byte aligned: another alignment class
    b = _rand(40, 24, device=device, seed=1)
    tritonblas.matmul(a, b)
    tritonblas.matmul(a_off, b)
    assert not fast_launches and len(launchcache.FAST) == 2, "a new alignment class must miss the fast path"
    assert launchcache.fast_key(a, b, None, None, None, None) != launchcache.fast_key(a_off, b, None, None, None, None)
    r = tritonblas.matmul(a_off, b)
    assert len(fast_launches) == 1 and fast_launches[0] is launchcache.FAST[
        launchcache.fast_key(a_off, b, None, None, None, None)]
    torch.testing.assert_close(r, a_off @ b, rtol=1.3e-6, atol=1e-5)
    bt = b.mT.contiguous().mT                 # same shape, transposed strides
    tritonblas.matmul(a, bt)
    assert len(fast_launches) == 1 and len(launchcache.FAST) == 3, "a new stride class must miss"
    torch.testing.assert_close(tritonblas.matmul(a, bt), a @ b, rtol=1.3e-6, atol=1e-5)
    assert len(fast_launches) == 2


def test_dtype_tf32_and_environment_changes_miss(device, fast_launches, monkeypatch):
    a, b = _rand(9, 16, device=device), _rand(16, 8, device=device, seed=1)
    tritonblas.matmul(a, b)
    k0 = launchcache.fast_key(a, b, None, None, None, None)
    original = os.environ.get("TRITONBLAS_PROFILE")  # h200 under the interpreter, unset on a GPU
    monkeypatch.setenv("TRITONBLAS_PROFILE", "h100")  # honoured between calls
    assert launchcache.fast_key(a, b, None, None, None, None) != k0
    tritonblas.matmul(a, b)
    assert not fast_launches and len(launchcache.FAST) == 2
    if original is None:
        monkeypatch.delenv("TRITONBLAS_PROFILE")
    else:
        monkeypatch.setenv("TRITONBLAS_PROFILE", original)
    tritonblas.matmul(a, b)
    assert len(fast_launches) == 1
    old = torch.backends.cuda.matmul.allow_tf32
    try:
        torch.backends.cuda.matmul.allow_tf32 = not old
        assert launchcache.fast_key(a, b, None, None, None, None) != k0
    finally:
        torch.backends.cuda.matmul.allow_tf32 = old
    assert launchcache.fast_key(a.half(), b.half(), None, None, None, None) != k0


def test_cleared_device_cache_misses(device, fast_launches):
    a, b = _rand(9, 16, device=device), _rand(16, 8, device=device, seed=1)
    tritonblas.matmul(a, b)
    _device.clear_device_cache()  # the profile mapping may change: the entry is stale
    assert launchcache.hit(launchcache.fast_key(a, b, None, None, None, None)) is None
    tritonblas.matmul(a, b)  # checked path again, re-records the entry
    tritonblas.matmul(a, b)
    assert len(fast_launches) == 1
    tritonblas.clear_caches()
    assert not launchcache.FAST


def test_fast_workspace_request_matches_prepare_launch(device, monkeypatch):
    requests = []
    original = _plan.workspace

    def record(dev, partial, counters):
        requests.append((partial, counters))
        return original(dev, partial, counters)

    monkeypatch.setattr(_plan, "workspace", record)
    a, b = _rand(37, 64, device=device), _rand(64, 48, device=device, seed=1)
    for cfg in (CASES["streamk"][3], CASES["splitk"][3]):
        requests.clear()
        tritonblas.matmul(a, b, config=cfg)
        tritonblas.matmul(a, b, config=cfg)
        assert len(requests) >= 2 and requests[-1] == requests[0], cfg.short()


def test_shared_memory_out_takes_the_checked_path(device, fast_launches):
    buf = _rand(8, 8, device=device)
    a = buf[:, :4]
    b = _rand(4, 4, device=device, seed=1)
    out = buf[:, 4:]
    ref = a @ b
    tritonblas.matmul(a.clone(), b, out=torch.empty(8, 4, device=device))
    tritonblas.matmul(a, b, out=out)
    torch.testing.assert_close(out, ref, rtol=1.3e-6, atol=1e-5)


def test_warm_out_and_config_calls_skip_the_ops_layer(device, fast_launches, monkeypatch):
    """matmul(out=) and matmul(config=) take the ops layer's warm path (``ops._warm_matmul``) once
    an entry exists: no argument encoding, no ``dispatch.gemm``; the same bits, the version bump."""
    a, b = _rand(37, 64, device=device), _rand(64, 48, device=device, seed=1)
    cfg = CASES["splitk"][3]
    out, out_cfg = torch.empty(37, 48, device=device), torch.empty(37, 48, device=device)
    first = tritonblas.matmul(a, b, out=out).clone()  # checked: records the entries
    first_cfg = tritonblas.matmul(a, b, out=out_cfg, config=cfg).clone()
    forced = tritonblas.matmul(a, b, config=cfg)

    def no_gemm(*args, **kwargs):
        raise AssertionError("the warm call went through dispatch.gemm")

    gemm = dispatch.gemm
    monkeypatch.setattr(dispatch, "gemm", no_gemm)
    version = out._version
    out.zero_()
    out_cfg.zero_()
    assert tritonblas.matmul(a, b, out=out) is out and torch.equal(out, first)
    assert out._version > version + 1, "out= must bump the version counter like the checked path"
    assert tritonblas.matmul(a, b, out=out_cfg, config=cfg) is out_cfg and torch.equal(out_cfg, first_cfg)
    assert torch.equal(tritonblas.matmul(a, b, config=cfg), forced)
    assert len(fast_launches) == 3
    torch.testing.assert_close(first, (a.double() @ b.double()).float(), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(first_cfg, first, rtol=1e-5, atol=1e-5)
    # what the warm path must not take: an out overlapping an input, autograd, another config
    monkeypatch.setattr(dispatch, "gemm", gemm)
    big = _rand(37, 64 + 48, device=device, seed=2)
    a2, o2 = big[:, :64], big[:, 64:]
    other_buf = _rand(37, 64 + 48, device=device, seed=3)  # the same key without the overlap: an entry exists
    tritonblas.matmul(other_buf[:, :64], b, out=_rand(37, 64 + 48, device=device, seed=4)[:, 64:])
    assert launchcache.hit(launchcache.fast_key(a2, b, o2, None, None, None)) is not None
    ref = a2 @ b
    tritonblas.matmul(a2, b, out=o2)
    torch.testing.assert_close(o2, ref, rtol=1.3e-6, atol=1e-5)
    with pytest.raises(RuntimeError, match="automatic differentiation"):
        tritonblas.matmul(a.detach().requires_grad_(), b, out=out)
    other = TileConfig("splitk", 16, 32, 16, 4, 2, split_k=3)
    n = len(fast_launches)
    tritonblas.matmul(a, b, out=out_cfg, config=other)
    assert len(fast_launches) == n, "another config is another key: the checked path"
    torch.testing.assert_close(out_cfg, first, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("profile", ["default", "mi300x"])
def test_staged_launch_gets_a_fast_entry(profile, device, fast_launches, monkeypatch):
    """An alignment-staged launch (operands under 16-byte alignment copied into padded buffers, then
    the TMA kernel, or on an AMD profile the pointer kernel) is recorded as a fast entry; warm calls re-stage
    the operands' current values into fresh buffers and launch on them, never writing the caller's tensors."""
    if profile != "default":  # (on an NVIDIA GPU an AMD profile keeps its tiles, not its AMD-only options)
        monkeypatch.setenv("TRITONBLAS_PROFILE", profile)
        tritonblas.clear_caches()
    monkeypatch.setattr(staging, "STAGED_HOST_NS", 0.0)  # a tiny problem: make origami's rule stage it
    monkeypatch.setattr(staging, "staging_copy_ns", lambda *args: 0.0)
    g = torch.Generator().manual_seed(5)
    wide_a = torch.randn(37, 76, generator=g, dtype=torch.float64).to(torch.bfloat16).to(device)
    wide_b = torch.randn(75, 30, generator=g, dtype=torch.float64).to(torch.bfloat16).to(device)
    a, b = wide_a[:, :75], wide_b[:, :29]  # leading strides 76 and 30 elements: 8- and 4-byte aligned rows
    lp = dispatch.plan_for(a, b)
    assert lp.stage_a or lp.stage_b, "the model is expected to stage this unaligned problem"
    assert lp.tma == (profile == "default")
    a_before, b_before = a.clone(), b.clone()
    first = tritonblas.matmul(a, b)
    assert not fast_launches
    f = launchcache.hit(launchcache.fast_key(a, b, None, None, None, None))
    assert f is not None and tuple(i for i, _ in f.staged) == tuple(i for i, s in enumerate((lp.stage_a, lp.stage_b)) if s)
    second = tritonblas.matmul(a, b)
    assert len(fast_launches) == 1 and torch.equal(first, second)
    ref = a.double() @ b.double()
    torch.testing.assert_close(second.double(), ref, rtol=2e-2, atol=2e-2 * ref.abs().max().item())
    assert torch.equal(a, a_before) and torch.equal(b, b_before)
    a.mul_(-2)  # the next warm call must copy the new values
    third = tritonblas.matmul(a, b)
    assert len(fast_launches) == 2
    torch.testing.assert_close(third.double(), (a.double() @ b.double()), rtol=2e-2,
                               atol=4e-2 * ref.abs().max().item())


@pytest.mark.parametrize("profile", ["default", "mi300x"])
def test_linear_backward_stages_a_ragged_grad_once(profile, device, monkeypatch):
    """F.linear's two backward GEMMs both read the output gradient as their A; when its rows are ragged (an
    lm_head's logits) and both warm entries would copy it into an aligned buffer, the backward copies it once
    (fastpath.stage_shared) and both GEMMs read that copy: one staging copy of the gradient per warm backward
    instead of two, the gradients within the bf16 bound of a float64 reference."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from _check import check_gemm

    if profile != "default":
        monkeypatch.setenv("TRITONBLAS_PROFILE", profile)
        tritonblas.clear_caches()
    monkeypatch.setattr(staging, "STAGED_HOST_NS", 0.0)  # tiny problems: make origami's rule stage them
    monkeypatch.setattr(staging, "staging_copy_ns", lambda *args: 0.0)
    g = torch.Generator().manual_seed(11)
    x = torch.randn(2, 19, 64, generator=g).to(torch.bfloat16).to(device).requires_grad_()
    w = torch.nn.Parameter(torch.randn(29, 64, generator=g).to(torch.bfloat16).to(device))
    gy = torch.randn(2, 19, 29, generator=g).to(torch.bfloat16).to(device)  # rows of 29 bf16: 2-byte aligned
    copies = []
    real_copy = _plan.stage_copy

    def counted(buffer, source):
        copies.append(tuple(source.shape))
        return real_copy(buffer, source)

    monkeypatch.setattr(_plan, "stage_copy", counted)
    with tritonblas.enable():
        for step in range(3):  # cold, then warm twice
            x.grad = w.grad = None
            copies.clear()
            torch.nn.functional.linear(x, w).backward(gy)
            grads = (x.grad.clone(), w.grad.clone())
    grad_copies = sum(1 for shape in copies if sorted(shape) == [29, 38])
    assert grad_copies == 1, copies
    g2 = gy.reshape(38, 29)
    check_gemm(grads[0].reshape(38, 64), g2, w.detach(), what="dX with a ragged grad")
    check_gemm(grads[1], g2.t(), x.detach().reshape(38, 64), what="dW with a ragged grad")


# --- the direct call (no torch.library dispatch) ------------------------------------------------
def test_direct_call_conditions(device):
    a, b = _rand(4, 4, device=device), _rand(4, 4, device=device)
    assert ops._direct(a, b, None)
    assert not ops._direct(a.requires_grad_(), b)
    with torch.no_grad():
        assert ops._direct(a, b)

    class Mode(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    with Mode():
        assert not ops._direct(b)
    with torch.no_grad():
        assert not torch.func.vmap(lambda x: torch.tensor(ops._direct(x)))(torch.ones(2, 3)).any()


def test_dispatch_mode_still_sees_the_custom_op(device):
    seen = []

    class Log(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(str(func))
            return func(*args, **(kwargs or {}))

    a, b = _rand(9, 16, device=device), _rand(16, 8, device=device, seed=1)
    tritonblas.matmul(a, b)  # warm: the fast path exists
    with Log():
        r = tritonblas.matmul(a, b)
    assert any(s.startswith("tritonblas.mm") for s in seen), seen
    torch.testing.assert_close(r, a @ b, rtol=1.3e-6, atol=1e-5)


def test_autograd_goes_through_the_op(device):
    a, b = _rand(9, 16, device=device).requires_grad_(), _rand(16, 8, device=device, seed=1)
    tritonblas.matmul(a.detach(), b)
    r = tritonblas.matmul(a, b)
    assert r.requires_grad and r.grad_fn is not None
    r.sum().backward()
    torch.testing.assert_close(a.grad, torch.ones(9, 8, device=device) @ b.T, rtol=1.3e-6, atol=1e-5)


def test_direct_out_bumps_the_version_counter(device):
    a, b = _rand(9, 16, device=device), _rand(16, 8, device=device, seed=1)
    out = torch.empty(9, 8, device=device)
    v = out._version
    tritonblas.matmul(a, b, out=out)
    assert out._version > v


# --- the GPU launch binding, checked on CPU with Triton's own parameter list --------------------
def test_compiled_launch_binds_arguments_in_parameter_order(monkeypatch):
    from triton.runtime.jit import JITFunction

    from tritonblas import kernels, launchcache

    fn = getattr(kernels.gemm_kernel, "fn", kernels.gemm_kernel)
    jit = JITFunction(fn)
    names = [p.name for p in jit.params]
    n_args = names.index("BLOCK_M")
    args = tuple(range(n_args))
    kwargs = {n: f"<{n}>" for n in names[n_args:]}
    kwargs.update(num_warps=4, num_stages=2)
    launched = []
    compiled = SimpleNamespace(run=lambda *a: launched.append(a), function="FN", packed_metadata="PM")
    prepared = SimpleNamespace(args=args, compile=lambda: compiled)
    f = launchcache.FastEntry()
    f.kernel, f.grid, f.kwargs = jit, (5,), kwargs
    f.run = f.raw = f.a_desc = f.b_desc = None
    launchcache._bind_compiled(f, prepared)
    assert f.run is not None
    monkeypatch.setattr(launchcache, "raw_stream", lambda idx: 1234)
    f._launch_cuda(0, args)
    (call,) = launched
    assert call[:9] == (5, 1, 1, 1234, "FN", "PM", None, None, None)
    bound = inspect.signature(fn).bind(*args, **{k: v for k, v in kwargs.items() if k in names})
    bound.apply_defaults()
    assert list(call[9:]) == list(bound.arguments.values()), "JITFunction.run passes bound_args.values()"


# --- the raw launcher (GPU) ----------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("case", ["tma_dp", "pointer_dp", "tma_splitk", "tma_streamk", "bias_addmm"])
def test_raw_launcher_is_bound_and_exact_over_many_addresses(case):
    """The warm launch goes through ``_fastlaunch.RawLauncher`` (TMA and pointer kernels, with and
    without a workspace) and gives bitwise the checked path's result for 40 operand sets: more
    addresses than the descriptor cache keeps, so entries are evicted and rebuilt."""
    m, n, k = 200, 136, 264
    cfg = {"tma_splitk": TileConfig("splitk", 64, 64, 64, 4, 3, split_k=3),
           "tma_streamk": TileConfig("streamk", 64, 64, 64, 4, 3, grid=5)}.get(case)
    off = 1 if case == "pointer_dp" else 0  # a 2-byte offset: not 16-byte aligned, so the pointer kernel
    sets = []
    for i in range(40):
        a = _rand(m * k + off, device="cuda", dtype=torch.bfloat16, seed=i)[off:].view(m, k)
        b = _rand(k, n, device="cuda", dtype=torch.bfloat16, seed=100 + i)
        c = _rand(n, device="cuda", dtype=torch.bfloat16, seed=200 + i)
        sets.append((a, b, c))
    call = ((lambda a, b, c: tritonblas.addmm(c, a, b, alpha=0.5, beta=2.0)) if case == "bias_addmm"
            else (lambda a, b, c: tritonblas.matmul(a, b, config=cfg)))
    expected = []
    with dispatch_checked():
        for a, b, c in sets:
            expected.append(call(a, b, c))
    call(*sets[0])  # records the fast entry
    (f,) = [e for e in launchcache.FAST.values()]
    assert f.raw is not None, "the raw launcher was not bound"
    assert (f.a_desc is not None) == (case != "pointer_dp")
    for _ in range(2):
        for (a, b, c), want in zip(sets, expected):
            got = call(a, b, c)
            assert torch.equal(got, want)
    assert dispatch.stats()["plans"] == 1


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("case", ["tma_dp", "pointer_dp", "tma_splitk", "bias_addmm", "model"])
def test_misses_reuse_the_compiled_kernel_of_their_specialisation(case, monkeypatch):
    """32 first calls of new keys on consecutive M: each gives bitwise the checked path's result
    (itself checked against torch) and records a fast entry; every miss but the first of its
    specialisation (here M % 16 == 0 or not, and the config where the model picks) launches through
    the compiled kernel and binding that an earlier miss recorded (``launchcache.reuse``), and the warm
    calls of those entries are exact too. With a Triton launch hook installed a miss goes through
    Triton's own launch, as before."""
    n, k = 136, 264
    cfg = {"tma_dp": TileConfig("dp", 64, 64, 64, 4, 3), "pointer_dp": TileConfig("dp", 64, 64, 64, 4, 3),
           "tma_splitk": TileConfig("splitk", 64, 64, 64, 4, 3, split_k=3)}.get(case)  # else the model's
    off = 1 if case == "pointer_dp" else 0
    sets = []
    for i, m in enumerate(range(200, 232)):
        a = _rand(m * k + off, device="cuda", dtype=torch.bfloat16, seed=i)[off:].view(m, k)
        b = _rand(k, n, device="cuda", dtype=torch.bfloat16, seed=100)
        c = _rand(n, device="cuda", dtype=torch.bfloat16, seed=200)
        sets.append((a, b, c))
    call = ((lambda a, b, c: tritonblas.addmm(c, a, b, alpha=0.5, beta=2.0)) if case == "bias_addmm"
            else (lambda a, b, c: tritonblas.matmul(a, b, config=cfg)))
    expected = []
    with dispatch_checked():
        for a, b, c in sets:
            expected.append(call(a, b, c))
    for (a, b, c), want in zip(sets, expected):
        ref = (torch.addmm(c.float(), a.float(), b.float(), alpha=0.5, beta=2.0) if case == "bias_addmm"
               else a.float() @ b.float())
        torch.testing.assert_close(want.float(), ref, rtol=2e-2, atol=2e-2 * k ** 0.5)
    tritonblas.clear_caches()  # forget the plans too: each call below is a plan-cache miss
    dispatch.reset_stats()
    reused = []
    original = launchcache.reuse

    def spy(*args, **kwargs):
        reused.append(original(*args, **kwargs))
        return reused[-1]

    monkeypatch.setattr(launchcache, "reuse", spy)
    for (a, b, c), want in zip(sets, expected):
        assert torch.equal(call(a, b, c), want)
    assert len(reused) == 32 and len(launchcache.FAST) == 32 and dispatch.stats()["plans"] == 32
    bound = {(e.run, e.function) for e in launchcache.COMPILED.values()}
    assert sum(reused) + len(launchcache.COMPILED) == 32 and sum(reused) >= 16, (sum(reused), len(bound))
    if cfg is not None:
        assert len(launchcache.COMPILED) == 2  # M % 16 == 0 (M = 208, 224) or not
    for f in launchcache.FAST.values():
        assert (f.run, f.function) in bound
        assert (f.raw is not None) and (f.a_desc is not None) == (case != "pointer_dp")
    for _ in range(2):
        for (a, b, c), want in zip(sets, expected):
            assert torch.equal(call(a, b, c), want)
    chain = launchcache._triton_knobs().runtime.launch_enter_hook  # Triton 3.6: a HookChain
    seen = []
    hook = lambda *a, **k: seen.append(1)  # noqa: E731
    chain.add(hook)
    try:
        a = _rand(233, k, device="cuda", dtype=torch.bfloat16, seed=7)
        r = call(a, sets[0][1], sets[0][2])
    finally:
        chain.remove(hook)
    assert seen and reused[-1] is False
    with dispatch_checked():
        assert torch.equal(r, call(a, sets[0][1], sets[0][2]))


class dispatch_checked:
    """The dispatcher with its fast path off (every call checked, no fast entry recorded, no
    compiled kernel shared across keys)."""

    def __enter__(self):
        self._hit, self._remember, self._reuse = launchcache.hit, launchcache.remember, launchcache.reuse
        launchcache.hit = lambda key: None
        launchcache.remember = lambda *a, **k: None
        launchcache.reuse = lambda *a, **k: False
        return self

    def __exit__(self, *exc):
        launchcache.hit, launchcache.remember, launchcache.reuse = self._hit, self._remember, self._reuse


def test_negative_bit_views_run_torch_cold_and_warm(device):
    """A lazily negated view (``torch._neg_view``; ``z.conj().imag`` of a complex tensor is one) stores
    the un-negated values: the kernels read them as they are, so the result had the wrong sign, cold
    (the checked path) and warm (the plain twin's signature served it). torch resolves the bit."""
    import torch.nn.functional as F

    x, w = _rand(6, 16, device=device), _rand(24, 16, device=device, seed=1)
    neg = torch._neg_view(x)
    assert neg.is_neg() and neg.stride() == x.stride() and neg.data_ptr() == x.data_ptr()
    imag = torch.complex(torch.zeros_like(x), x).conj().imag  # the public way to get one
    assert imag.is_neg()
    want = -(x.double() @ w.double().T)
    with torch.no_grad():
        for route in (False, True):
            with tritonblas.enable() if route else torch.no_grad():
                for _ in range(2):  # x's signatures are warm
                    F.linear(x, w), torch.matmul(x, w.T), tritonblas.linear(x, w), tritonblas.matmul(x, w.T)
                for got in (F.linear(neg, w), torch.matmul(neg, w.T), tritonblas.linear(neg, w),
                            tritonblas.matmul(neg, w.T), tritonblas.linear(x, torch._neg_view(w)),
                            F.linear(imag, w), tritonblas.matmul(imag, w.T)):
                    torch.testing.assert_close(got.double(), want, rtol=1e-5, atol=1e-4)


def test_efficient_zero_tensors_run_torch(device):
    """autograd's efficient zero tensor (``torch._efficientzerotensor``) has no storage: reading its
    data pointer raised RuntimeError ("invalid python storage") on every entry point, routed calls
    under ``enable()`` included, where torch returns zeros (or C for addmm)."""
    import torch.nn.functional as F

    z = torch._efficientzerotensor(16, 24, device=device)
    b, c = _rand(24, 8, device=device), _rand(16, 8, device=device, seed=2)
    assert z._is_zerotensor()
    cases = {"matmul": lambda: tritonblas.matmul(z, b), "matmul_b": lambda: tritonblas.matmul(b.t(), z.t()),
             "linear": lambda: tritonblas.linear(z, b.t()), "addmm": lambda: tritonblas.addmm(c, z, b),
             "enable_matmul": lambda: _in_enable(lambda: torch.matmul(z, b)),
             "enable_linear": lambda: _in_enable(lambda: F.linear(z, b.t()))}
    for name, call in cases.items():
        for _ in range(2):  # cold, then whatever the warm path holds
            got = call()
            want = c if name == "addmm" else torch.zeros(got.shape, device=device)
            torch.testing.assert_close(got.float(), want.float(), msg=name)


def _in_enable(call):
    with tritonblas.enable():
        return call()


def test_an_efficient_zero_bias_after_a_warm_real_one_runs_torch(device):
    """An efficient zero tensor has the shape, strides and (0 % 16) address class of a real, aligned
    bias: with the warm entry of ``F.linear(x, w, bias)`` in place, ``F.linear(x, w, zero)`` and
    ``addmm(zero, a, b)`` matched that entry and were launched with ``zero``'s null data pointer. The
    warm keys now carry the unreadable bit, so these go the checked path's way (torch)."""
    import torch.nn.functional as F

    x, w, bias = _rand(6, 16, device=device), _rand(24, 16, device=device, seed=1), _rand(24, device=device, seed=2)
    zero = torch._efficientzerotensor(24, device=device)
    assert zero._is_zerotensor() and zero.stride() == bias.stride()
    try:
        same_class = zero.data_ptr() & 15 == bias.data_ptr() & 15
    except RuntimeError:  # a torch whose zero tensors have no data pointer: no key is built for them
        same_class = False
    if not same_class:
        pytest.skip("this torch gives the zero tensor no data pointer or another address class: keys differ anyway")
    want = x.double() @ w.double().T
    with torch.no_grad():
        for route in (False, True):
            with tritonblas.enable() if route else torch.no_grad():
                for _ in range(2):  # the real bias's signatures are warm
                    F.linear(x, w, bias), tritonblas.linear(x, w, bias), tritonblas.addmm(bias, x, w.T)
                for got in (F.linear(x, w, zero), tritonblas.linear(x, w, zero), tritonblas.addmm(zero, x, w.T)):
                    torch.testing.assert_close(got.double(), want, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("vector_first", [False, True])
def test_autograd_leaves_warm_matrix_vector_signatures_to_the_route(device, vector_first):
    """The no-grad path records 1-D matmul signatures (matrix-vector products) in the warm table; the
    autograd Function has no 1-D backward, so under autograd a hit there must not send the call to it:
    outputs and gradients equal torch's."""
    a = torch.randn(6, 5, device=device)
    v = torch.randn(6 if vector_first else 5, device=device)

    def mm(p, q):
        return q @ p if vector_first else p @ q

    with torch.no_grad(), tritonblas.enable():
        mm(a, v)
        mm(a, v)  # warm: the signature is in the table now
    ag, vg = a.clone().requires_grad_(), v.clone().requires_grad_()
    with tritonblas.enable():
        out = mm(ag, vg)
    (out * torch.arange(out.numel(), dtype=out.dtype, device=device)).sum().backward()
    ra, rv = a.clone().requires_grad_(), v.clone().requires_grad_()
    ref = mm(ra, rv)
    (ref * torch.arange(ref.numel(), dtype=ref.dtype, device=device)).sum().backward()
    torch.testing.assert_close(out, ref, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(ag.grad, ra.grad, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(vg.grad, rv.grad, rtol=1e-4, atol=1e-4)


def test_a_dead_functorch_wrapper_under_autograd_matches_torch(device):
    """A tensor leaked out of a finished ``torch.func.grad`` (a dead functorch wrapper, no transform
    active) reaching the warm autograd entry: the result and the weight's gradient are torch's."""
    leaked = []

    def f(t):
        leaked.append(t)
        return t.sum()

    torch.func.grad(f)(torch.randn(3, 4, device=device))
    x = leaked[0]
    assert torch._C._functorch.is_functorch_wrapped_tensor(x)
    w = torch.randn(5, 4, device=device, requires_grad=True)
    ref = torch.nn.functional.linear(x, w)
    (gref,) = torch.autograd.grad(ref.sum(), w)
    with tritonblas.enable():
        for _ in range(2):  # the signature is warm for the third call
            torch.nn.functional.linear(torch.randn(3, 4, device=device), w)
        out = torch.nn.functional.linear(x, w)
    (g,) = torch.autograd.grad(out.sum(), w)
    torch.testing.assert_close(out, ref, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(g, gref, rtol=1e-4, atol=1e-4)

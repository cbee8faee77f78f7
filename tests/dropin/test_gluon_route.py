"""The ``TRITONBLAS_GLUON=1`` experiment (``dispatch.gluon_eligible`` / ``gluon_route.gluon_gemm``):
which GEMMs it takes, and that it never changes a result it does not take.

On CPU: the eligibility rule's reasons, and results under the variable equal to those without it
(every CPU call is ineligible: the kernel needs an sm_90 GPU). On the H200 (``-m gpu``, opt-in with
``TRITONBLAS_TEST_GLUON=1`` like the kernel's own GPU test, in a child process with a timeout so a
hang fails instead of blocking): eligible ``tritonblas.matmul`` / ``F.linear`` calls run the Gluon
kernel and match the float64 reference; ineligible ones (bias, small M) still run origami's pick.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import tritonblas
from tritonblas import dispatch, gluon_route, settings
from _check import assert_gemm_close, reference

ROOT = Path(__file__).resolve().parents[2]


def _t(*shape, dtype=torch.bfloat16):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(sum(shape)), dtype=torch.float32).to(dtype)


@pytest.mark.parametrize("a,b,out,why", [
    (_t(2, 256, 64), _t(64, 256), _t(2, 256, 256), "not a 2-D GEMM"),
    (_t(256, 64, dtype=torch.float32), _t(64, 256, dtype=torch.float32), _t(256, 256, dtype=torch.float32),
     "needs bf16 / fp16"),
    (_t(256, 64), _t(64, 256, dtype=torch.float16), _t(256, 256), "needs bf16 / fp16"),
    (_t(64, 64), _t(64, 256), _t(64, 256), "is under (128, 128, 64)"),
    (_t(256, 32), _t(32, 256), _t(256, 256), "is under (128, 128, 64)"),
    (_t(256, 64), _t(64, 256), _t(256, 256), "cpu is not an sm_90 GPU"),
])
def test_eligibility_names_its_reason(a, b, out, why):
    got = dispatch.gluon_eligible(a, b, out)
    assert got is not None and why in got, got


def test_the_variable_is_read_per_call(monkeypatch):
    monkeypatch.delenv(settings.ENV_GLUON, raising=False)
    assert not settings.gluon()
    monkeypatch.setenv(settings.ENV_GLUON, "1")
    assert settings.gluon()
    monkeypatch.setenv(settings.ENV_GLUON, "0")
    assert not settings.gluon()
    assert settings.ENV_GLUON in settings.ALL


@pytest.mark.usefixtures("cpu_profile")
def test_cpu_scaled_mm_is_unchanged_under_the_variable(monkeypatch, device):
    """fp8 scaled_mm under TRITONBLAS_GLUON=1 on CPU: the Gluon route needs an sm_90 GPU, so the
    result is bit-identical to the one without the variable."""
    if device != "cpu":
        pytest.skip("the CPU half; the GPU half is test_eligible_calls_run_the_gluon_kernel_on_the_h200")
    g = torch.Generator().manual_seed(3)
    a = (torch.randn(130, 64, generator=g) * 2).to(torch.float8_e4m3fn)
    b = (torch.randn(144, 64, generator=g) * 2).to(torch.float8_e4m3fn).t()
    sa, sb = torch.rand(130, 1, generator=g) + 0.5, torch.rand(1, 144, generator=g) + 0.5
    tritonblas.clear_caches()
    plain = tritonblas.scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16)
    monkeypatch.setenv(settings.ENV_GLUON, "1")
    tritonblas.clear_caches()
    under = tritonblas.scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16)
    assert torch.equal(plain, under)


@pytest.mark.usefixtures("cpu_profile")
def test_cpu_results_are_unchanged_under_the_variable(monkeypatch, device):
    if device != "cpu":
        pytest.skip("the CPU half; the GPU half is test_eligible_calls_run_the_gluon_kernel_on_the_h200")
    a, b = _t(130, 70), _t(70, 140)
    ref, mag, _ = reference(a, b)
    tritonblas.clear_caches()
    plain = tritonblas.matmul(a, b)
    monkeypatch.setenv(settings.ENV_GLUON, "1")
    tritonblas.clear_caches()
    under = tritonblas.matmul(a, b)
    assert torch.equal(plain, under)
    assert_gemm_close(under, ref, mag, a.shape[1], what="matmul under TRITONBLAS_GLUON=1 on CPU")


CHILD = r"""
import torch, torch.nn.functional as F
import tritonblas
from tritonblas import dispatch, gluon_route
from tritonblas.kernels import gluon_hopper
from _check import assert_gemm_close, reference
def spy(name, log, what):  # gluon_hopper.<name>, appending what(kwargs) to log at each call
    real = getattr(gluon_hopper, name)
    def wrapper(*args, **kw):
        log.append(what(kw))
        return real(*args, **kw)
    setattr(gluon_hopper, name, wrapper)
ran = []
spy("gluon_matmul", ran, lambda kw: kw.get("block_n"))
spy("raw_launch", ran, lambda kw: "raw")  # a warm GluonEntry's launch (dispatch imports it at each call)
g = torch.Generator(device="cuda").manual_seed(0)
# every shape gives >= 90% of the SMs an output tile (gluon_route.GLUON_FILL): 128x128 tiles for the
# first, second and fourth, 128x256 for the third
for (m, n, k, dt, nt, ta) in [(2048, 1024, 256, torch.bfloat16, False, False), (2000, 1000, 1000, torch.float16, True, False),
                              (4096, 4096, 4096, torch.bfloat16, False, False), (1536, 1280, 1000, torch.bfloat16, False, True)]:
    a = (torch.randn(k, m, device="cuda", generator=g).to(dt).t() if ta else
         torch.randn(m, k, device="cuda", generator=g).to(dt))
    b = (torch.randn(n, k, device="cuda", generator=g).to(dt).t() if nt else
         torch.randn(k, n, device="cuda", generator=g).to(dt))
    before = len(ran)
    out = tritonblas.matmul(a, b)
    torch.cuda.synchronize()
    assert len(ran) == before + 1, ("the Gluon kernel did not run", m, n, k)
    ref, mag, _ = reference(a, b)
    assert_gemm_close(out, ref, mag, k, what=f"gluon route {m}x{n}x{k} {dt} nt={nt} ta={ta}")
x = torch.randn(16, 128, 512, device="cuda", generator=g).to(torch.bfloat16)
w = torch.randn(1024, 512, device="cuda", generator=g).to(torch.bfloat16)
with tritonblas.enable():
    before = len(ran)
    y = F.linear(x, w)
    assert len(ran) == before + 1, "F.linear without bias did not take the Gluon kernel"
    ref, mag, _ = reference(x.reshape(-1, 512), w.t())
    assert_gemm_close(y.reshape(-1, 1024), ref, mag, 512, what="F.linear under the gluon route")
    before = len(ran)
    bias = torch.randn(1024, device="cuda", generator=g).to(torch.bfloat16)
    for _ in range(2):  # the checked call, then the warm entry
        yb = F.linear(x, w, bias)
    assert len(ran) == before + 2 and ran[-1] == "raw", ("F.linear with a bias did not take the Gluon kernel, "
                                                        "checked then raw", ran[before:])
    ref, mag, _ = reference(x.reshape(-1, 512), w.t(), c=bias.expand(2048, 1024), beta=1.0)
    assert_gemm_close(yb.reshape(-1, 1024), ref, mag, 512, what="F.linear + bias under the gluon route")
    before = len(ran)
    small = tritonblas.matmul(x[0, :16], w.t())
    scaled = torch.addmm(bias, x.reshape(-1, 512), w.t(), alpha=0.5)
    few = tritonblas.matmul(x[:4].reshape(-1, 512), w.t())  # 512x1024: 32 tiles, under 90% of the SMs
    assert len(ran) == before, "a 16-row GEMM, alpha != 1 or a grid under 90% of the SMs must keep origami's pick"
ran8 = []
spy("gluon_scaled_mm", ran8, lambda kw: kw.get("use_fast_accum"))
a8 = (torch.randn(2048, 1024, device="cuda", generator=g) * 2).to(torch.float8_e4m3fn)
b8 = (torch.randn(2048, 1024, device="cuda", generator=g) * 2).to(torch.float8_e4m3fn).t()
sa, sb = torch.rand(2048, 1, device="cuda") + 0.5, torch.rand(1, 2048, device="cuda") + 0.5
for fast in (False, True):
    y8 = tritonblas.scaled_mm(a8, b8, sa, sb, out_dtype=torch.bfloat16, use_fast_accum=fast)
    ref, mag, _ = reference(a8, b8, scale_a=sa, scale_b=sb)
    assert_gemm_close(y8, ref, mag, 1024, fp8_mma=True, what=f"scaled_mm under the gluon route fast={fast}")
assert ran8 == [False, True], ran8
print("GLUON ROUTE OK", ran, ran8)
"""


@pytest.mark.gpu
def test_eligible_calls_run_the_gluon_kernel_on_the_h200():
    if not torch.cuda.is_available() or torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("needs an sm_90 GPU (the H200)")
    if os.environ.get("TRITONBLAS_TEST_GLUON") != "1":
        pytest.skip("opt-in, like the kernel's own GPU test: TRITONBLAS_TEST_GLUON=1")
    env = dict(os.environ, TRITONBLAS_GLUON="1", PYTHONPATH=f"{ROOT}{os.pathsep}{ROOT / 'tests'}")
    r = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=240)
    assert r.returncode == 0 and "GLUON ROUTE OK" in r.stdout, r.stdout[-2000:] + r.stderr[-4000:]


@pytest.mark.usefixtures("cpu_profile")
def test_a_taken_call_is_remembered_as_a_warm_entry(monkeypatch, device):
    """The experiment's calls are warm after the first: :class:`dispatch.GluonEntry` under the call's
    fast key (tritonblas.matmul, and F.linear on a 3-D activation inside enable()), each launch the
    Gluon kernel with the experiment's config. A call with C or alpha (not the experiment's) and the
    same operands after the variable is switched off run origami's pick. On CPU with the kernel and
    its eligibility rule stood in for (the real kernel needs an sm_90 GPU)."""
    if device != "cpu":
        pytest.skip("the plumbing, on CPU; the GPU half is test_eligible_calls_run_the_gluon_kernel_on_the_h200")
    import torch.nn.functional as F

    from tritonblas.kernels import gluon_hopper

    ran, asked = [], []

    def stand_in(a, b, out=None, bias=None, **kw):
        ran.append(dict(bias=bias, **kw))
        ref = a.double() @ b.double() + (0 if bias is None else bias.double())
        return out.copy_(ref.to(out.dtype))

    def eligible(a, b, out):
        asked.append(1)
        return None

    monkeypatch.setattr(gluon_hopper, "gluon_matmul", stand_in)
    monkeypatch.setattr(gluon_route, "gluon_eligible", eligible)
    monkeypatch.setenv(settings.ENV_GLUON, "1")
    tritonblas.clear_caches()
    a, b = _t(130, 70), _t(70, 300)
    ref, mag, _ = reference(a, b)
    for _ in range(3):
        got = tritonblas.matmul(a, b)
        assert_gemm_close(got, ref, mag, a.shape[1], what="matmul through the Gluon entry")
    assert len(ran) == 3 and ran[0] == dict(bias=None, block_n=256, stages=3) and len(asked) == 1, (ran, asked)
    assert type(dispatch.fast_lookup(a, b)) is dispatch.GluonEntry

    c = _t(130, 300)
    want = reference(a, b)[0] * 2 + c.double()
    got = tritonblas.addmm(c, a, b, alpha=2.0)
    assert len(ran) == 3, "a call with C and alpha took the experiment"
    torch.testing.assert_close(got.double(), want, rtol=2e-2, atol=2e-1)

    x, w = _t(2, 65, 70), _t(200, 70)
    with torch.no_grad(), tritonblas.enable():
        for _ in range(3):
            y = F.linear(x, w)
    assert len(ran) == 6 and ran[-1] == dict(bias=None, block_n=128, stages=4) and len(asked) == 2, (ran, asked)
    ref2, mag2, _ = reference(x.reshape(-1, 70), w.t())
    assert_gemm_close(y.reshape(-1, 200), ref2, mag2, 70, what="F.linear through the Gluon entry")

    bias = _t(200)
    with torch.no_grad(), tritonblas.enable():
        for _ in range(2):
            yb = F.linear(x, w, bias)
    assert len(ran) == 8 and ran[-1] == dict(bias=ran[-1]["bias"], block_n=128, stages=4), ran
    assert ran[-1]["bias"] is not None and ran[-1]["bias"].shape == (200,)
    torch.testing.assert_close(yb.double(), F.linear(x.double(), w.double(), bias.double()), rtol=2e-2, atol=5e-2)

    monkeypatch.setenv(settings.ENV_GLUON, "0")
    got = tritonblas.matmul(a, b)
    assert len(ran) == 8, "the entry was served with the variable off"
    assert_gemm_close(got, ref, mag, a.shape[1], what="matmul after the experiment")


def test_the_experiment_takes_a_tile_only_where_its_grid_fills_the_machine():
    """The Gluon kernel does not split K: 128x256 where N >= 256 and its tiles give >= 90% of the SMs
    one, else 128x128 where those do, else none (origami's pick, which can split K, runs)."""
    sms = 132  # 90%: 118.8 tiles
    assert gluon_route.gluon_config(4096, 1024, sms) == (256, 3)   # 32 x 4 = 128 tiles of 128x256
    assert gluon_route.gluon_config(2048, 2048, sms) == (256, 3)   # 16 x 8 = 128
    assert gluon_route.gluon_config(2048, 1024, sms) == (128, 4)   # 64 of 128x256, 16 x 8 = 128 of 128x128
    assert gluon_route.gluon_config(128, 28672, sms) == (128, 4)   # 112 of 128x256, 224 of 128x128
    assert gluon_route.gluon_config(4096, 200, sms) is None        # N < 256: 32 x 2 = 64 of 128x128
    assert gluon_route.gluon_config(2048, 512, sms) is None        # 32 / 64 tiles: llama3.2-1b's k/v projections
    assert gluon_route.gluon_config(128, 4096, sms) is None        # 16 / 32 tiles
    assert gluon_route.fills(128, 15360, 128, sms) and not gluon_route.fills(128, 15104, 128, sms)  # 120 / 118 tiles
    assert gluon_route.gluon_config(130, 300, 0) == (256, 3) and gluon_route.gluon_config(130, 200, 0) == (128, 4)


@pytest.mark.usefixtures("cpu_profile")
def test_a_bound_entry_launches_raw_with_the_operands_addresses(monkeypatch, device):
    """With the Gluon kernel's raw launch bound for the key (``gluon_hopper.bound_launch``), warm
    calls skip ``gluon_matmul`` and pass ``raw_launch`` the base addresses of what the model holds
    (the 3-D activation, the Linear's (N, K) weight, the output, the bias) and the key's M, N, K; a
    call that is not the experiment's (alpha) still runs torch. On CPU with the kernel, its
    eligibility rule, its bound launch and the CUDA stream stood in for."""
    if device != "cpu":
        pytest.skip("the plumbing, on CPU; the GPU half is test_eligible_calls_run_the_gluon_kernel_on_the_h200")
    import torch.nn.functional as F

    from tritonblas.kernels import gluon_hopper

    checked, raw, live = [], [], {}

    def stand_in(a, b, out=None, bias=None, **kw):
        checked.append(kw)
        return out.copy_((a.double() @ b.double() + (0 if bias is None else bias.double())).to(out.dtype))

    def raw_launch(warm, stream, pa, pb, po, m, n, k, pbias=None, psa=None, psb=None):
        assert warm == ("bound", 128) and stream == 7
        raw.append((pa, pb, po, m, n, k, pbias))
        x, w, bias = live["x"], live["w"], live["bias"]
        out = next(t for t in live["outs"] if t.data_ptr() == po)
        assert (pa, pb) == (x.data_ptr(), w.data_ptr()) and pbias == (None if bias is None else bias.data_ptr())
        out.copy_(F.linear(x.double(), w.double(), None if bias is None else bias.double()).to(out.dtype))

    monkeypatch.setattr(gluon_hopper, "gluon_matmul", stand_in)
    monkeypatch.setattr(gluon_hopper, "bound_launch", lambda a, b, out, bias=None, **kw: ("bound", kw["block_n"]))
    monkeypatch.setattr(gluon_hopper, "raw_launch", raw_launch)
    monkeypatch.setattr(gluon_route, "gluon_eligible", lambda a, b, out: None)
    monkeypatch.setattr(gluon_route, "raw_stream", lambda idx: 7)
    monkeypatch.setattr(gluon_route, "get_device", lambda: None)
    monkeypatch.setenv(settings.ENV_GLUON, "1")
    tritonblas.clear_caches()
    x, w, bias = _t(2, 65, 70), _t(200, 70), _t(200)
    live.update(x=x, w=w, bias=bias, outs=[])
    from tritonblas import fastpath

    real_empty = torch.empty

    def empty(*args, **kw):  # the allocations of the outputs, so the stand-in finds them by address
        t = real_empty(*args, **kw)
        live["outs"].append(t)
        return t

    real_new_empty = torch.Tensor.new_empty

    def new_empty(like, *args, **kw):
        t = real_new_empty(like, *args, **kw)
        live["outs"].append(t)
        return t

    monkeypatch.setattr(torch, "empty", empty)
    monkeypatch.setattr(fastpath, "_new_empty", new_empty)
    with torch.no_grad(), tritonblas.enable():
        ys = [F.linear(x, w, bias) for _ in range(3)]
    assert len(checked) == 1 and len(raw) == 2, (checked, raw)
    assert all(r[3:6] == (130, 200, 70) for r in raw), raw
    want = F.linear(x.double(), w.double(), bias.double())
    for y in ys:
        torch.testing.assert_close(y.double(), want, rtol=2e-2, atol=5e-2)
    got = tritonblas.addmm(bias, x.reshape(-1, 70), w.t(), alpha=2.0)
    assert len(raw) == 2 and len(checked) == 1, "a call with alpha took the experiment"
    torch.testing.assert_close(got.double(), (x.reshape(-1, 70).double() @ w.t().double()) * 2 + bias.double(),
                               rtol=2e-2, atol=2e-1)


@pytest.mark.usefixtures("cpu_profile")
def test_a_scalar_c_under_the_experiment_runs_like_without_it(monkeypatch, device):
    """``addmm(<0-d bf16 tensor>, a, b)`` runs without the variable (C broadcast); under
    TRITONBLAS_GLUON=1 with an eligible call, ``_gluon_bias`` raised IndexError on ``c.shape[-1]``."""
    if device != "cpu":
        pytest.skip("on CPU with the kernel and its eligibility rule stood in for")
    from tritonblas.kernels import gluon_hopper

    monkeypatch.setattr(gluon_hopper, "gluon_matmul", lambda a, b, out=None, bias=None, **kw: out.copy_(
        (a.double() @ b.double() + (0 if bias is None else bias.double())).to(out.dtype)))
    monkeypatch.setattr(gluon_route, "gluon_eligible", lambda a, b, out: None)
    monkeypatch.setenv(settings.ENV_GLUON, "1")
    tritonblas.clear_caches()
    a, b, c = _t(130, 70), _t(70, 300), torch.tensor(1.5).bfloat16()
    got = tritonblas.addmm(c, a, b)
    torch.testing.assert_close(got.double(), a.double() @ b.double() + 1.5, rtol=2e-2, atol=2e-1)


@pytest.mark.parametrize("bias_dtype", [torch.float64, torch.float8_e4m3fn])
def test_a_scaled_bias_the_kernel_does_not_read_leaves_the_experiment(monkeypatch, bias_dtype):
    """scaled_mm takes a bias of any floating dtype; ``_gluon_scaled`` sent an fp64 / fp8 one to
    ``gluon_scaled_mm``, which raises ValueError("bias: ...") instead of falling back to origami's
    pick. On CPU with tensors that report a CUDA device and an sm_90 capability stood in for."""
    from tritonblas.kernels import gluon_hopper

    if not gluon_hopper.HAS_GLUON:
        pytest.skip("this Triton has no Gluon")

    class OnCuda(torch.Tensor):
        @property
        def device(self):
            return torch.device("cuda", 0)

    def cuda(t):
        return torch.Tensor._make_subclass(OnCuda, t)

    ran = []
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (9, 0))
    monkeypatch.setattr(gluon_route, "sm_count", lambda device: 1)  # the one 128x128 tile fills the machine
    monkeypatch.setattr(gluon_route, "cuda_guard", lambda device: __import__("contextlib").nullcontext())
    monkeypatch.setattr(gluon_hopper, "_launch", lambda *args: ran.append(args) or args[2])
    m, n, k = 128, 128, 64
    a = cuda(torch.zeros(m, k).to(torch.float8_e4m3fn))
    b = cuda(torch.zeros(n, k).to(torch.float8_e4m3fn)).t()
    out = cuda(torch.zeros(m, n, dtype=torch.bfloat16))
    sa, sb = cuda(torch.ones(())), cuda(torch.ones(()))
    assert gluon_route.gluon_scaled(a, b, out, sa, sb, cuda(torch.zeros(n, dtype=torch.bfloat16)), False)
    assert len(ran) == 1
    assert gluon_route.gluon_scaled(a, b, out, sa, sb, cuda(torch.zeros(n).to(bias_dtype)), False) is False
    assert len(ran) == 1


@pytest.mark.usefixtures("cpu_profile")
def test_a_ready_call_that_is_not_the_experiments_runs_torch_on_the_kernel_views(monkeypatch, device):
    """``launch_ready`` takes stand-ins at the key's operands' addresses (the 3-D activation, the
    Linear's (N, K) weight); a call the Gluon entry does not launch (alpha != 1, beta != 1, no bias
    for a bias entry) runs torch on the key's 2-D views of them: ``x @ w.T (+ bias)``, not
    ``x @ w``. Square weight, so ``x @ w`` has the right shape and only the values tell. On CPU
    with the kernel, its eligibility rule, its bound launch and the CUDA stream stood in for."""
    if device != "cpu":
        pytest.skip("CPU only: the kernel, its bound launch and the CUDA stream are stood in for; the GPU half "
                    "is test_eligible_calls_run_the_gluon_kernel_on_the_h200")
    import torch.nn.functional as F

    from tritonblas.kernels import gluon_hopper

    raw = []
    monkeypatch.setattr(gluon_hopper, "gluon_matmul", lambda a, b, out=None, bias=None, **kw: out.copy_(
        (a.double() @ b.double() + (0 if bias is None else bias.double())).to(out.dtype)))
    monkeypatch.setattr(gluon_hopper, "bound_launch", lambda a, b, out, bias=None, **kw: ("bound", kw["block_n"]))
    monkeypatch.setattr(gluon_hopper, "raw_launch", lambda *args: raw.append(args))
    monkeypatch.setattr(gluon_route, "gluon_eligible", lambda a, b, out: None)
    monkeypatch.setattr(gluon_route, "raw_stream", lambda idx: 7)
    monkeypatch.setattr(gluon_route, "get_device", lambda: None)
    monkeypatch.setenv(settings.ENV_GLUON, "1")
    tritonblas.clear_caches()
    x, w, bias = _t(2, 65, 136), _t(136, 136), _t(136)
    with torch.no_grad(), tritonblas.enable():
        F.linear(x, w, bias)
    f = dispatch.fast_lookup(x.view(130, 136), w.t(), None, bias)
    assert type(f) is dispatch.GluonEntry and dispatch.raw_ready(f)
    xd, wd, bd = x.double(), w.double(), bias.double()
    for c, alpha, beta, want in [(bias, 2.0, 1.0, 2 * (xd @ wd.t()) + bd), (bias, 1.0, 0.5, xd @ wd.t() + 0.5 * bd),
                                 (None, 1.0, 0.0, xd @ wd.t())]:
        out = torch.empty(2, 65, 136, dtype=x.dtype)
        dispatch.launch_ready(f, x, w, out, c, alpha, beta)
        torch.testing.assert_close(out.double(), want, rtol=2e-2, atol=2e-1, msg=f"alpha={alpha} beta={beta}")
    assert raw == []

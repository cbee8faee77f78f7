"""``TRITONBLAS_AUTOGRAD=aten`` (tritonblas.below_autograd, an experiment): under enable(), training's GEMMs run
our kernels below torch's C++ autograd. Gradients match torch's in the weights' layouts, forward and backward
GEMMs reach our kernels (the counters), nothing is registered outside a block, another thread and non-default
profiles get torch's kernel, and meta tensors pass through."""

from __future__ import annotations

import copy
import sys
import threading
from pathlib import Path

import pytest
import torch

import tritonblas
from tritonblas import below_autograd, dispatch

import transformers  # noqa: E402,F401  - the test extra installs it (scripts/test.sh)

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import models  # noqa: E402

pytestmark = pytest.mark.usefixtures("cpu_profile")  # tests/dropin/conftest.py


@pytest.fixture
def aten(monkeypatch):
    monkeypatch.setenv("TRITONBLAS_AUTOGRAD", "aten")
    for k in below_autograd.STATS:
        below_autograd.STATS[k] = 0
    yield below_autograd.STATS
    assert not below_autograd.armed()  # every test leaves its blocks: nothing stays registered


def _rel(x, y) -> float:
    x, y = x.double(), y.double()
    return (torch.linalg.vector_norm(x - y) / torch.linalg.vector_norm(y).clamp_min(1e-30)).item()


@pytest.mark.parametrize("name", ["gpt2-medium", "llama3-8b"])
def test_training_gradients_match_torch_and_run_below_autograd(device, aten, name):
    model, inputs, _ = models.build(name, torch.float32, device, tiny=True)
    kw = inputs("train")
    ours = copy.deepcopy(model)
    ref_loss = models.model_loss(model, kw, models.model_forward(model, kw))
    ref_loss.backward()
    with tritonblas.enable():
        assert below_autograd.armed()
        for _ in range(2):  # the second step runs warm
            ours.zero_grad(set_to_none=True)
            dispatch.reset_stats()
            for k in aten:
                aten[k] = 0
            loss = models.model_loss(ours, kw, models.model_forward(ours, kw))
            assert loss.grad_fn is not None
            loss.backward()
    st = dispatch.stats()
    # every GEMM of the warm step under autograd ran warm on our kernels below torch's autograd: each
    # projection's forward, its input gradient and its weight gradient (on a GPU the backward runs in
    # autograd's device thread); the GEMMs outside autograd (Llama's rotary angles) the wrappers route
    gemms = sum(1 for m in ours.modules() if type(m).__name__ in ("Linear", "Conv1D"))
    assert aten["served"] == 3 * gemms and aten["checked"] == aten["handed_on"] == 0, (aten, gemms)
    assert st["launches"] == st["fast_hits"] == st["routed"] >= aten["served"] and st["fallbacks"] == 0, (st, aten)
    assert _rel(loss.detach(), ref_loss.detach()) < 1e-5
    for (n, p), q in zip(model.named_parameters(), ours.parameters()):
        if p.grad is None:
            assert q.grad is None, n
            continue
        assert q.grad.stride() == p.grad.stride(), n
        assert _rel(q.grad, p.grad) < 1e-4, n


def test_no_grad_keeps_the_warm_path_and_nothing_is_registered_outside_a_block(device, aten):
    a = torch.randn(24, 16, device=device)
    b = torch.randn(16, 8, device=device)
    c = torch.randn(8, device=device)
    assert not below_autograd.armed()
    with tritonblas.enable():
        with torch.no_grad():
            torch.addmm(c, a, b)
            dispatch.reset_stats()
            torch.addmm(c, a, b)
        assert dispatch.stats()["fast_hits"] == 1  # the wrappers' warm path, as without the variable
    assert not below_autograd.armed()
    before = dict(aten)
    x = torch.randn(24, 16, device=device, requires_grad=True)
    torch.mm(x, b).sum().backward()  # outside a block: torch's kernels only
    assert aten == before


def test_without_the_variable_nothing_is_registered(device, monkeypatch):
    monkeypatch.delenv("TRITONBLAS_AUTOGRAD", raising=False)
    with tritonblas.enable():
        assert not below_autograd.armed()


def test_another_thread_gets_torchs_kernel_and_a_named_profile_the_wrappers_route(device, aten):
    x = torch.randn(24, 16, device=device, requires_grad=True)
    w = torch.randn(16, 8, device=device, requires_grad=True)
    ref = torch.mm(x, w)
    seen = {}
    with tritonblas.enable():
        def other():
            seen["out"] = torch.mm(x, w)
        t = threading.Thread(target=other)
        t.start()
        t.join()
        assert aten["served"] == aten["checked"] == 0 and aten["handed_on"] == 1, aten
        dispatch.reset_stats()
        with tritonblas.enable(profile="h200"):  # a named profile: the wrappers route it, as without the variable
            named = torch.mm(x, w)
        assert dispatch.stats()["routed"] == 1 and named.grad_fn is not None
    assert aten["served"] == aten["checked"] == 0 and aten["handed_on"] == 1, aten
    assert torch.equal(seen["out"], ref) and _rel(named.detach(), ref.detach()) < 1e-5


def _mm_in(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.mm(a, b)


def test_work_run_for_the_block_in_torchs_threads_is_served(device, aten, monkeypatch):
    """A CUDA backward runs in autograd's device thread, which carries the calling thread's C++ state, not its
    Python thread-locals (the H100 run at f3ff013 handed every backward GEMM to torch). On CPU the same
    hand-over is a scripted ``torch.jit.fork``, whose task runs in torch's inter-op pool."""
    inner = torch.jit.script(_mm_in)

    @torch.jit.script
    def forked(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.jit.wait(torch.jit.fork(inner, a, b))

    threads = []
    run = below_autograd._run
    monkeypatch.setattr(below_autograd, "_run", lambda *args: threads.append(threading.get_ident()) or run(*args))
    a = torch.randn(24, 16, device=device, requires_grad=True)
    b = torch.randn(16, 8, device=device)
    with tritonblas.enable():
        out = forked(a, b)
    assert threads and threads[0] != threading.get_ident()  # the forward GEMM ran in another thread
    assert aten["checked"] + aten["served"] == 1 and aten["handed_on"] == 0, aten
    assert out.grad_fn is not None and _rel(out.detach(), a.detach() @ b) < 1e-5


def test_without_torchs_thread_state_objects_other_threads_get_torchs_kernel(device, aten, monkeypatch):
    """A torch without ``_stash_obj_in_tls``: nothing is carried, so the forked task's GEMM is handed on to
    torch's kernel (the right result, torch's speed), never an error."""
    monkeypatch.setattr(below_autograd, "_HAS_TLS", False)
    inner = torch.jit.script(_mm_in)

    @torch.jit.script
    def forked(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.jit.wait(torch.jit.fork(inner, a, b))

    a = torch.randn(24, 16, device=device, requires_grad=True)
    b = torch.randn(16, 8, device=device)
    with tritonblas.enable():
        out = forked(a, b)
    # (a thread that ran a block before keeps its stash: the check reads _HAS_TLS first)
    assert aten["served"] == aten["checked"] == 0 and aten["handed_on"] == 1, aten
    assert torch.equal(out.detach(), a.detach() @ b)


def test_meta_tensors_and_unroutable_dtypes_pass_through(device, aten):
    with tritonblas.enable():
        m = torch.empty(24, 16, device="meta", requires_grad=True)
        assert torch.mm(m, torch.empty(16, 8, device="meta")).shape == (24, 8)
        x = torch.randn(24, 16, device=device, dtype=torch.float64, requires_grad=True)
        w = torch.randn(16, 8, device=device, dtype=torch.float64)
        out = torch.mm(x, w)
    assert torch.equal(out, torch.mm(x, w))
    assert aten["served"] == aten["checked"] == 0 and aten["handed_on"] == 2, aten


def test_alpha_beta_other_than_one_run_torchs_kernel(device, aten):
    c = torch.randn(24, 8, device=device)
    a = torch.randn(24, 16, device=device, requires_grad=True)
    b = torch.randn(16, 8, device=device)
    with tritonblas.enable():
        out = torch.addmm(c, a, b, beta=0.5, alpha=2.0)
    assert torch.allclose(out, torch.addmm(c, a, b, beta=0.5, alpha=2.0))
    assert aten["handed_on"] == 1 and aten["served"] == aten["checked"] == 0, aten


def _outcome(fn):
    try:
        return fn(), None
    except Exception as e:  # noqa: BLE001 - the error itself is what is compared
        return None, f"{type(e).__name__}: {e}"


@pytest.mark.parametrize("case", ["c0d", "c1", "cN", "cM1", "c1N", "cMN", "c_grad", "a_t", "zero_m", "zero_k",
                                  "neg_a", "zero_tensor_c",
                                  "k_mismatch", "c_bad", "dtype_mismatch", "c_fp64", "one_d"])
def test_shapes_and_bad_input_match_torch(device, aten, case):
    """Below autograd, every broadcast of addmm's c, transposed and empty operands give torch's result; shapes
    and dtypes torch rejects give torch's own error (the kernel hands them on), never ours or a wrong answer."""
    g = torch.Generator(device="cpu").manual_seed(0)
    M, N, K = 24, 8, 16

    def r(*shape, grad=False, dtype=torch.float32):
        return torch.randn(shape, generator=g, dtype=dtype).to(device).requires_grad_(grad)

    a, b = r(M, K, grad=True), r(K, N)
    calls = {
        "c0d": (torch.addmm, r(), a, b), "c1": (torch.addmm, r(1), a, b), "cN": (torch.addmm, r(N), a, b),
        "cM1": (torch.addmm, r(M, 1), a, b), "c1N": (torch.addmm, r(1, N), a, b), "cMN": (torch.addmm, r(M, N), a, b),
        "c_grad": (torch.addmm, r(N, grad=True), a, b), "a_t": (torch.mm, r(K, M, grad=True).t(), b),
        "zero_m": (torch.mm, r(0, K, grad=True), b), "zero_k": (torch.mm, r(M, 0, grad=True), r(0, N)),
        "k_mismatch": (torch.mm, a, r(K + 1, N)), "c_bad": (torch.addmm, r(N + 1), a, b),
        "dtype_mismatch": (torch.mm, a, r(K, N, dtype=torch.float64)),
        "c_fp64": (torch.addmm, r(N, dtype=torch.float64), a, b), "one_d": (torch.mm, r(K, grad=True), b),
        # a lazily negated view and an efficient zero tensor (no storage): never read as plain data
        "neg_a": (torch.mm, torch._neg_view(a), b),
        "zero_tensor_c": (torch.addmm, torch._efficientzerotensor(N, device=device), a, b),
    }
    fn, *args = calls[case]
    ref, ref_err = _outcome(lambda: fn(*args))
    with tritonblas.enable():
        out, err = _outcome(lambda: fn(*args))
    assert err == ref_err
    if ref_err is None:
        assert out.shape == ref.shape and out.grad_fn is not None
        assert out.numel() == 0 or _rel(out.detach(), ref.detach()) < 1e-5
    else:
        assert aten["served"] == aten["checked"] == 0  # handed on: torch's kernel raised its error

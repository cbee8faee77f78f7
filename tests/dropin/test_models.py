"""Real model code through ``enable()``: tiny configurations of the benchmark's model classes
(benchmarks/models.py ``build(..., tiny=True)``: transformers Llama, Qwen2, GPT-2 (Conv1D: torch.addmm), BERT,
ViT and a DLRM MLP).

Outputs and gradients match torch, the routed count proves the GEMMs reached tritonblas, the warm path
serves the repeated calls, and the fall-through cost is checked by counting: with every GEMM falling
through, ``enable()`` intercepts exactly the GEMM calls torch makes and nothing else (no mode, every
other torch function is torch's own object).
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import pytest
import torch

import tritonblas
from tritonblas import dispatch

import transformers  # noqa: E402,F401  - the test extra installs it (scripts/test.sh); missing = a failure

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import models  # noqa: E402

pytestmark = pytest.mark.usefixtures("cpu_profile")  # tests/dropin/conftest.py

GEMM_OPS = {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::matmul", "aten::linear"}


def _aten_gemms(fn) -> int:
    """Leaf GEMM calls torch makes for ``fn()`` (profiler, which does not change dispatch)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fn()
    return sum(1 for e in prof.events() if e.name in ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm"))


_GEMM_NAMES = ("matmul", "mm", "bmm", "addmm", "baddbmm", "addbmm", "mv", "addmv")
_GEMM_FUNCS = frozenset([torch.nn.functional.linear, torch.Tensor.__matmul__, torch._C.TensorBase.__matmul__]
                        + [getattr(torch, n) for n in _GEMM_NAMES]
                        + [getattr(torch._C.TensorBase, n) for n in _GEMM_NAMES])


def _gemm_calls(model, kw) -> int:
    """GEMM entry-point calls (F.linear, matmul, @, mm, bmm, ...) the model code makes in one forward
    with torch alone, counted by a TorchFunctionMode (transformers versions differ: some compute
    the rotary embedding with a float32 ``@``, some without a matmul)."""
    from torch.overrides import TorchFunctionMode

    n = [0]

    class Count(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            if func in _GEMM_FUNCS:
                n[0] += 1
            return func(*args, **(kwargs or {}))

    with torch.inference_mode(), Count():
        models.model_forward(model, kw)
    return n[0]


def _rel(x, y) -> float:
    x, y = x.double(), y.double()
    return (torch.linalg.vector_norm(x - y) / torch.linalg.vector_norm(y).clamp_min(1e-30)).item()


@pytest.mark.parametrize("name", ["llama3-8b", "qwen2.5-7b", "gpt2-medium", "bert-large", "vit-l16", "dlrm-mlp"])
def test_inference_matches_torch_and_routes_every_gemm(name, device):
    model, inputs, _ = models.build(name, torch.float32, device, tiny=True)
    kw = inputs("prefill")
    with torch.inference_mode():
        ref = models.primary_output(models.model_forward(model, kw))
        assert _aten_gemms(lambda: models.model_forward(model, kw)) > 0
        dispatch.reset_stats()
        with tritonblas.enable():
            out = models.primary_output(models.model_forward(model, kw))
        first = dispatch.stats()
        dispatch.reset_stats()
        with tritonblas.enable():
            again = models.primary_output(models.model_forward(model, kw))
        second = dispatch.stats()
    assert _rel(out, ref) < 1e-5 and _rel(again, ref) < 1e-5
    assert first["fallbacks"] == 0 and first["routed"] >= 1
    # every GEMM the model code calls is a launch of ours (attention inside SDPA is torch's own)
    assert second["launches"] == second["routed"] == _gemm_calls(model, kw), second
    assert second["fallbacks"] == 0
    # the repeated forward takes the warm path for its linears: no plan is built, most calls hit
    assert second["plans"] == 0
    assert second["fast_hits"] >= second["routed"] // 2, second


def test_training_gradients_match_torch_in_the_weights_layout(device):
    model, inputs, _ = models.build("llama3-8b", torch.float32, device, tiny=True)
    kw = inputs("train")
    import copy

    ours = copy.deepcopy(model)
    models.model_loss(model, kw, models.model_forward(model, kw)).backward()
    with tritonblas.enable():
        for _ in range(2):  # the second step runs warm
            ours.zero_grad(set_to_none=True)
            dispatch.reset_stats()
            models.model_loss(ours, kw, models.model_forward(ours, kw)).backward()
    st = dispatch.stats()
    assert st["fallbacks"] == 0 and st["routed"] > 0 and st["fast_hits"] > 0 and st["plans"] == 0
    for (n, p), q in zip(model.named_parameters(), ours.parameters()):
        if p.grad is None:
            assert q.grad is None, n
            continue
        assert q.grad.stride() == p.grad.stride(), n  # no layout AccumulateGrad would have to copy
        assert _rel(q.grad, p.grad) < 1e-4, n


def _our_nodes(fn) -> list[str]:
    """The backward nodes reachable from ``fn`` that tritonblas made: its autograd Functions (``_LinearBackward``
    ...) and its custom ops' generated backward (``GeneratedBackwardFor_tritonblas_...``)."""
    out, seen, todo = [], set(), [fn]
    while todo:
        f = todo.pop()
        if f is None or f in seen:
            continue
        seen.add(f)
        owner = getattr(getattr(f, "_forward_cls", None), "__module__", "") or ""
        if owner.startswith("tritonblas") or "tritonblas" in type(f).__name__:
            out.append(type(f).__name__)
        todo.extend(n for n, _ in f.next_functions)
    return out


def test_our_nodes_finds_our_functions_and_custom_ops(device, monkeypatch):
    """The graph walk the default-rule test relies on sees each kind of node we make (and none of torch's)."""
    from tritonblas import settings

    monkeypatch.setenv(settings.ENV_GRAD_MIN_GFLOP, "0")  # routed: our nodes
    g = torch.Generator().manual_seed(3)
    x = torch.randn(8, 16, generator=g).to(device).requires_grad_()
    w = torch.randn(16, 16, generator=g).to(device).requires_grad_()
    assert not _our_nodes(torch.nn.functional.linear(x, w).grad_fn)  # torch alone
    with tritonblas.enable():
        for _ in range(2):  # cold (the checked path) and warm
            assert _our_nodes(torch.nn.functional.linear(x, w).grad_fn) == ["_LinearBackward"]
            assert _our_nodes((x @ w).grad_fn) == ["_MatmulBackward"]
        assert any("tritonblas" in n for n in _our_nodes(torch.addmm(torch.zeros(16, device=device), x, w, beta=0.5)
                                                        .grad_fn))


@pytest.mark.parametrize("name", ["llama3-8b", "gpt2-medium"])
def test_by_default_a_tiny_training_step_runs_torch_gemms_and_its_exact_gradients(device, monkeypatch, name):
    """The drop-in's default (``TRITONBLAS_GRAD_MIN_GFLOP`` unset: 20 GFLOP, ``fastpath.small_grad``) sends the tiny
    twin's training GEMMs (aligned sizes, a few MFLOP) to torch: nothing routed, every call intercepted, and the
    gradients are torch's (bit for bit on CPU); its inference forward still routes (no autograd there)."""
    from tritonblas import settings

    monkeypatch.delenv(settings.ENV_GRAD_MIN_GFLOP, raising=False)
    model, inputs, _ = models.build(name, torch.float32, device, tiny=True)
    kw = inputs("train")
    import copy

    ours = copy.deepcopy(model)
    models.model_loss(model, kw, models.model_forward(model, kw)).backward()
    with tritonblas.enable():
        dispatch.reset_stats()
        loss = models.model_loss(ours, kw, models.model_forward(ours, kw))
        # no node of ours in the graph: every GEMM autograd recorded ran torch's op (a GEMM it does not record may
        # route: transformers 5.17 computes Llama's rotary angles as an fp32 bmm with K = 1, on the GPU suite)
        assert not _our_nodes(loss.grad_fn)
        loss.backward()
        st = dispatch.stats()
        assert st["intercepted"] > 0 and st["routed"] <= st["intercepted"], st
        if device == "cpu":  # (this CPU's transformers computes the rotary angles without a GEMM)
            assert st["routed"] == st["launches"] == 0, st
        with torch.no_grad():
            dispatch.reset_stats()
            models.model_forward(ours, kw)
            assert dispatch.stats()["routed"] > 0
    for (n, p), q in zip(model.named_parameters(), ours.parameters()):
        assert (p.grad is None) == (q.grad is None), n
        if p.grad is not None:  # a GPU's attention backward may accumulate in another order run to run
            assert torch.equal(q.grad, p.grad) if device == "cpu" else _rel(q.grad, p.grad) < 1e-5, n


@pytest.mark.parametrize("name", ["llama3-8b", "gpt2-medium"])
def test_training_step_adds_no_copies(device, name, count_copies):
    """Backward GEMMs take their operands in place and write each gradient in its input's layout:
    a training step of ours makes no more copies than torch's (the custom op's backward made one
    transposing copy per weight). gpt2-medium: Conv1D's torch.addmm under autograd (fastpath._Addmm)."""
    model, inputs, _ = models.build(name, torch.float32, device, tiny=True)
    kw = inputs("train")

    def step():
        model.zero_grad(set_to_none=True)
        models.model_loss(model, kw, models.model_forward(model, kw)).backward()

    step()
    theirs = count_copies(step)
    with tritonblas.enable():
        step()
        step()
        mine = count_copies(step)
    assert mine <= theirs, (mine, theirs)


def test_fall_through_touches_only_gemm_calls(device):
    """With every GEMM falling through (fp64: not a kernel dtype), enable() intercepts exactly the
    GEMM calls and nothing else: no TorchFunctionMode, every other torch function unchanged."""
    model, inputs, _ = models.build("bert-large", torch.float64, device, tiny=True)
    kw = inputs("prefill")
    add, softmax, rms = torch.add, torch.nn.functional.softmax, torch.Tensor.pow
    with torch.inference_mode():
        ref = models.primary_output(models.model_forward(model, kw))
        dispatch.reset_stats()
        with tritonblas.enable():
            assert not torch._C._is_torch_function_mode_enabled()
            assert torch.add is add and torch.nn.functional.softmax is softmax and torch.Tensor.pow is rms
            assert torch.nn.functional.linear is not torch._C._nn.linear  # the GEMM entry point is wrapped
            out = models.primary_output(models.model_forward(model, kw))
        st = dispatch.stats()
    calls = _gemm_calls(model, kw)
    assert torch.equal(out, ref)
    assert st["routed"] == 0 and st["launches"] == 0
    assert st["intercepted"] == calls > 0, (st, calls)  # one interception per GEMM call, nothing more
    assert torch.nn.functional.linear is torch._C._nn.linear  # restored on exit


def test_enable_is_scoped_to_its_thread(device):
    a, b = torch.randn(24, 16, device=device), torch.randn(16, 8, device=device)
    seen = {}

    def other():
        before = dispatch.stats()["intercepted"]
        seen["r"] = torch.mm(a, b)
        seen["intercepted"] = dispatch.stats()["intercepted"] - before

    dispatch.reset_stats()
    with tritonblas.enable():
        t = threading.Thread(target=other)
        t.start()
        t.join()
        mine = torch.mm(a, b)
    assert seen["intercepted"] == 0  # the other thread ran torch's own mm
    assert dispatch.stats()["routed"] == 1
    torch.testing.assert_close(mine, a @ b)
    torch.testing.assert_close(seen["r"], a @ b)


def test_nested_enable_and_reentry(device):
    a, b = torch.randn(9, 7, device=device), torch.randn(7, 5, device=device)
    ctx = tritonblas.enable()
    dispatch.reset_stats()
    with ctx:
        with tritonblas.enable():
            torch.mm(a, b)
        torch.mm(a, b)  # still routed: the outer block is open
        with ctx:       # the same object re-entered
            torch.mm(a, b)
    assert dispatch.stats()["routed"] == 3
    assert torch.mm is torch._C._VariableFunctions.mm
    with pytest.raises(RuntimeError, match="without a matching"):
        ctx.__exit__(None, None, None)


def test_off_switch_takes_the_checked_path(device, monkeypatch):
    w = torch.nn.Linear(16, 12).to(device)
    x = torch.randn(2, 3, 16, device=device)
    with torch.no_grad(), tritonblas.enable():
        w(x)
        monkeypatch.setenv("TRITONBLAS_FAST", "0")
        dispatch.reset_stats()
        y = w(x)
        assert dispatch.stats()["fast_hits"] == 0 and dispatch.stats()["launches"] == 1
        monkeypatch.delenv("TRITONBLAS_FAST")
        dispatch.reset_stats()
        z = w(x)
        assert dispatch.stats()["fast_hits"] == 1
    torch.testing.assert_close(y, z)
    torch.testing.assert_close(y, torch.nn.functional.linear(x, w.weight, w.bias))


def test_compiled_region_with_a_graph_break_runs_cold_calls_eagerly(device):
    """A compiled function that graph-breaks between two routed linears, on shapes no plan exists
    for: both run on our kernels and match eager. (The H200 failure that _compat.dynamo_eager_only
    fixes, a reduce-overhead decode step of transformers' Llama, is checked by benchmarks/models.py;
    this CPU case does not reproduce it.)"""
    torch._dynamo.reset()
    lin1, lin2 = torch.nn.Linear(24, 40).to(device), torch.nn.Linear(40, 8).to(device)

    def f(x):
        y = lin1(x)
        torch._dynamo.graph_break()
        return lin2(torch.relu(y))

    x = torch.randn(7, 3, 24, device=device)  # shapes no other test uses: cold plans
    ref = f(x)
    dispatch.reset_stats()
    with tritonblas.enable():
        got = torch.compile(f, backend="aot_eager")(x)
    assert dispatch.stats()["launches"] == 2
    torch.testing.assert_close(got, ref)


def test_hot_entry_serves_warm_calls_and_steps_aside_otherwise(device, monkeypatch):
    """The routing wrapper's one-call warm entry (fastpath.linear_hot / matmul_hot) serves a warm
    positional call in a default-profile block, bit for bit what the route gives, and returns None
    (the route runs, with its checks) under a profile block, autocast, autograd, keywords or the off
    switch."""
    from tritonblas import fastpath

    lin = torch.nn.Linear(16, 12).to(device)
    x = torch.randn(2, 3, 16, device=device)
    b = torch.randn(16, 5, device=device)
    hot = []
    orig_linear, orig_matmul = fastpath.linear_hot, fastpath.matmul_hot

    def spy(fn):
        def wrapped(*a):
            r = fn(*a)
            hot.append(r is not None)
            return r
        return wrapped

    monkeypatch.setattr(fastpath, "linear_hot", spy(orig_linear))
    monkeypatch.setattr(fastpath, "matmul_hot", spy(orig_matmul))
    from tritonblas import routing
    monkeypatch.setattr(routing, "_WRAPPERS", {})  # wrappers built now bind the spies
    monkeypatch.setattr(routing, "_TARGETS", tuple(
        (o, n, p, r, *((spy(orig_linear),) if n == "linear" else (spy(orig_matmul),) if h else ()))
        for o, n, p, r, *h in routing._TARGETS))
    with torch.no_grad(), tritonblas.enable():
        ref_lin, ref_mm = lin(x), x @ b          # cold: the route plans and records the signatures
        dispatch.reset_stats()
        hot.clear()
        y, z = lin(x), x @ b
        assert hot == [True, True], hot
        assert dispatch.stats()["fast_hits"] == 2 and dispatch.stats()["routed"] == 2
        assert torch.equal(y, ref_lin) and torch.equal(z, ref_mm)
        hot.clear()
        torch.nn.functional.linear(x, lin.weight, bias=lin.bias)  # keyword: the wrapper skips hot
        assert hot == []
        with torch.autocast(device_type=device, dtype=torch.bfloat16):
            hot.clear()
            lin(x)
            assert hot == [False]
        monkeypatch.setenv("TRITONBLAS_FAST", "0")
        hot.clear()
        lin(x)
        assert hot == [False]
        monkeypatch.delenv("TRITONBLAS_FAST")
    with torch.no_grad(), tritonblas.enable(profile="h200"):
        hot.clear()
        lin(x)
        assert hot == []  # a profile block: the route, which applies the profile
    with tritonblas.enable():
        # autograd: a signature the block has seen is served by the hot entry too (the autograd
        # Function straight away), one it has not takes the route, which checks and records it
        xg = x.clone().requires_grad_()
        hot.clear()
        out = lin(xg)
        assert hot == [True] and out.requires_grad and out.grad_fn is not None
        torch.testing.assert_close(out, ref_lin)
        x2 = torch.randn(2, 4, 16, device=device, requires_grad=True)
        hot.clear()
        lin(x2)
        lin(x2).sum().backward()
        assert hot == [False, True]
        ref_grad = lin.weight.detach().sum(0).expand(2, 4, 16)
        torch.testing.assert_close(x2.grad, ref_grad)
        bg = b.clone().requires_grad_()
        hot.clear()
        (x @ bg).sum().backward()
        assert hot == [True]
        torch.testing.assert_close(bg.grad, x.sum((0, 1))[:, None].expand(16, 5))


def test_descriptor_cache_keeps_many_weights_and_evicts_oldest_first():
    """RawLauncher.expand: one encode per address while fewer than _CACHE_MAX addresses cycle (a model's
    layers sharing one key), the oldest evicted first beyond that, and a re-encode never stale."""
    from tritonblas import _fastlaunch

    encoded = []

    def fill(ptr, *rest):
        encoded.append(ptr)
        return ("map", ptr)

    meta = {"swizzle": 0, "elem_size": 2, "block_size": [64, 64]}
    r = _fastlaunch.RawLauncher(None, None, None, (0, 0), {1: (meta, [256, 128], [128, 1], 0, 0)}, fill)
    layers = [0x1000 * (i + 1) for i in range(96)]  # BERT-large: q, k, v, o of 24 layers share a key
    for _ in range(3):
        for p in layers:
            assert r.expand(1, p) == (("map", p), 256, 128, 128, 1)
    assert encoded == layers  # each weight encoded once, not once per call
    encoded.clear()
    many = [0x100000 * (i + 1) for i in range(_fastlaunch._CACHE_MAX + 1)]
    for p in many:
        r.expand(1, p)
    assert len(r.cache[1]) == _fastlaunch._CACHE_MAX
    assert layers[0] not in r.cache[1] and many[-1] in r.cache[1]


def test_enable_exited_in_another_thread(device):
    """__exit__ from a thread that did not enter the block: a clear RuntimeError and nothing changed
    (it popped that thread's empty stack: IndexError, the wrappers stayed installed and the entering
    thread kept routing for good); the entering thread then leaves normally. One object entered in
    two threads at once leaves in each."""
    import threading

    a, b = torch.randn(9, 7, device=device), torch.randn(7, 5, device=device)
    ctx = tritonblas.enable()
    errors = []

    def leave():
        try:
            ctx.__exit__(None, None, None)
        except RuntimeError as e:
            errors.append(str(e))

    ctx.__enter__()
    t = threading.Thread(target=leave)
    t.start()
    t.join()
    assert errors and "thread other than" in errors[0], errors
    assert tritonblas.routing.active()
    ctx.__exit__(None, None, None)
    assert not tritonblas.routing.active() and torch.mm is torch._C._VariableFunctions.mm

    inside, go, done = threading.Event(), threading.Event(), []

    def worker():
        with ctx:
            inside.set()
            go.wait(30)
            done.append(torch.equal(torch.mm(a, b), torch.mm(a, b)))

    ctx.__enter__()
    t = threading.Thread(target=worker)
    t.start()
    inside.wait(30)
    ctx.__exit__(None, None, None)  # the main thread's entry, while the worker's is open
    assert not tritonblas.routing.active()
    go.set()
    t.join()
    assert done == [True] and torch.mm is torch._C._VariableFunctions.mm


@pytest.mark.parametrize("value", ["0", "1"])
def test_a_compiled_llama_traces_whole_under_enable(device, monkeypatch, value):
    """``torch.compile(fullgraph=True)`` of a tiny bf16 ``transformers`` Llama's forward under ``enable()`` traces
    whole (a graph break raises), with the vendor switch's raw read made one dynamo refuses: what torch 2.11's dynamo
    made of the hot path's read (the GPU suite at 5a1b5be; in models.py's compiled rows, a graph break at every routed
    GEMM). At ``0`` our kernels run its GEMMs inside the graph (within bf16's bound of eager torch); at ``1`` (every
    GEMM of this model aligned) torch's ops, nothing of ours launched."""
    import os

    from tritonblas import handover, settings

    monkeypatch.setenv(settings.ENV_VENDOR_ALIGNED, value)
    monkeypatch.setattr(handover, "vendor_aligned_raw",
                        torch._dynamo.disable(lambda: os.environ.get(settings.ENV_VENDOR_ALIGNED)))
    model, inputs, _ = models.build("llama3-8b", torch.bfloat16, device, tiny=True)
    kw = inputs("prefill")
    with torch.inference_mode():
        ref = models.primary_output(models.model_forward(model, kw))
    torch._dynamo.reset()
    try:
        with tritonblas.enable(), torch.inference_mode():
            dispatch.reset_stats()
            f = torch.compile(lambda kw: models.primary_output(models.model_forward(model, kw)), fullgraph=True,
                              backend="aot_eager")
            out = f(kw)
            launches = dispatch.stats()["launches"]
    finally:
        torch._dynamo.reset()
    if value == "0":
        assert launches >= 1 and _rel(out, ref) < 2e-2, (launches, _rel(out, ref))
    else:
        assert launches == 0 and _rel(out, ref) < 1e-2, (launches, _rel(out, ref))

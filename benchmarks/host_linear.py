"""Host time per call of what models call, stage by stage (H200; needs CUDA).

For decode- and prefill-sized ``F.linear`` calls (3-D activation, ``nn.Parameter`` weight, bias or not,
no_grad): torch's ``F.linear``; ``tritonblas.linear``; ``F.linear`` under ``enable()``; and the warm
path's stages alone (the key, the entry lookup, the output allocation, the raw launch). Medians of
``--n`` back-to-back calls timed with perf_counter (the GPU queue is drained between batches, so the
host never waits on a full launch queue). Prints a table; ``--profile`` adds a cProfile of the
``enable()`` path.

    PYTHONPATH=$PWD python3 benchmarks/host_linear.py [--n 2000] [--profile]
    PYTHONPATH=$PWD python3 benchmarks/host_linear.py --split bert-large llama3.2-1b   # in-model split
    PYTHONPATH=$PWD python3 benchmarks/host_linear.py --timeline llama3.2-1b --out $OUT  # decode GPU gaps
    PYTHONPATH=$PWD python3 benchmarks/host_linear.py --train llama3.2-1b   # a training step's host split
    PYTHONPATH=$PWD python3 benchmarks/host_linear.py --train-forward gpt2-medium   # its forward, grad vs no_grad
    python3 benchmarks/host_linear.py --cpu-stub [--n 20000] [--profile]     # no GPU: our host work alone
    python3 benchmarks/host_linear.py --fallthrough [--rounds 7]             # no GPU: enable()'s toll, nothing routed
    python3 benchmarks/host_linear.py --fallthrough-ops [--rounds 7]         # the same per call of every routed op
    python3 benchmarks/host_linear.py --grad-toll [--rounds 7]               # no GPU: the grad rule's fall-through toll
    python3 benchmarks/host_linear.py --inmodel-grad [MODEL ...] [--rounds 9]  # no GPU: autograd's cost a call in a model
    python3 benchmarks/host_linear.py --vendor-toll [--rounds 200]           # no GPU: a handed-over call's toll on decode
    python3 benchmarks/host_linear.py --module-toll [--rounds 300]           # no GPU: the same on a prefill, nn.Linear's forward
    PYTHONPATH=$PWD python3 benchmarks/host_linear.py --handover-gpu  # the vendor rule's toll a call, this host
    python3 benchmarks/host_linear.py --rope-toll [--rounds 200] [--n 200]   # no GPU: the rotary K = 1 matmul, a call

``--cpu-stub`` (no GPU needed; sets ``TRITON_INTERPRET=1`` and ``TRITONBLAS_PROFILE=h200``): the warm
routed call's host cost with the launch stubbed out (:func:`cpu_stub`). ``--fallthrough`` (CPU, no
profile, so every GEMM falls through to torch): a tiny ``transformers`` Llama's greedy decode alone, under
``enable()``, and under ``enable()`` with the hot path's memory of refused signatures switched off
(:func:`fallthrough`).
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for _p in (ROOT, ROOT / "benchmarks"):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))


def per_call_us(fn, n: int, batches: int = 5) -> float:
    import torch

    out = []
    for _ in range(batches):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        out.append((time.perf_counter() - t0) / n * 1e6)
        torch.cuda.synchronize()
    return statistics.median(out)


def inmodel_stub(name: str, rounds: int = 7, loop_n: int = 200) -> list[str]:
    """CPU: does a model's other work inflate each routed GEMM call's host time? The tiny twin of a
    benchmarks/models.py model (no_grad forward, bf16, CPU) runs torch alone and under ``enable()`` with
    every launch stubbed (:func:`stubbed_launches`, :func:`emulate_raw_launch`: the warm path's Python as
    on a GPU, minus the C launch). Per GEMM call, three host times of the same calls: inside the forward
    (models.GemmShim, outermost), each recorded call replayed ``loop_n`` times back to back, and the
    forward's calls replayed in its order with none of its other work between (``loop_n`` passes). Ours
    in-model over ours in a loop is the inflation the H100 showed for gpt2-medium (32.3 us a call in the
    model against 9.6 in ``--cpu-stub``'s loop); torch's ratio beside it is the baseline (its CPU GEMM
    itself runs here, a few us at these sizes). Medians of ``rounds`` alternating rounds."""
    import os

    os.environ.setdefault("TRITON_INTERPRET", "1")
    os.environ.setdefault("TRITONBLAS_PROFILE", "h200")
    import torch

    import models
    import tritonblas

    model, inputs, _ = models.build(name, torch.bfloat16, "cpu", tiny=True)
    kw = inputs("prefill")
    calls: list = []

    class Recorder(models.GemmShim):  # each outermost GEMM call of a forward as (owner, attribute, args, kwargs)
        def _wrap(self, orig, owner=None, attr=None):
            timed = super()._wrap(orig)

            def rec(*args, **kwargs):
                if self.depth == 0:
                    calls.append((owner, attr, args, kwargs))
                return timed(*args, **kwargs)
            return rec

    def record() -> None:
        with torch.no_grad(), Recorder():
            models.model_forward(model, kw)

    def forward() -> tuple[float, int]:
        with torch.no_grad(), models.GemmShim() as shim:
            models.model_forward(model, kw)
        return shim.ns / 1e3, shim.calls

    def loop_us() -> float:  # the recorded calls back to back, each loop_n times, through what the owner holds now
        t0 = time.perf_counter_ns()
        with torch.no_grad():
            for owner, fname, args, kwargs in calls:
                fn = getattr(owner, fname)
                for _ in range(loop_n):
                    fn(*args, **kwargs)
        return (time.perf_counter_ns() - t0) / 1e3 / (loop_n * len(calls))

    def sequence_us() -> float:  # the recorded calls in the model's order, none of its other work between
        t0 = time.perf_counter_ns()
        with torch.no_grad():
            for _ in range(loop_n):
                for owner, fname, args, kwargs in calls:
                    getattr(owner, fname)(*args, **kwargs)
        return (time.perf_counter_ns() - t0) / 1e3 / (loop_n * len(calls))

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    res: dict = {f"{s} {w}": [] for s in ("torch", "ours") for w in ("model", "loop", "sequence")}
    try:
        record()  # the torch functions the model calls, as it calls them
        with stubbed_launches():
            with tritonblas.enable():
                for _ in range(3):
                    forward()  # the checked path records the warm entries
            emulate_raw_launch()
            for r in range(rounds):
                for side in (("torch", "ours") if r % 2 == 0 else ("ours", "torch")):
                    ctx = tritonblas.enable() if side == "ours" else contextlib.nullcontext()
                    with ctx:
                        us, n = forward()
                        res[f"{side} model"].append(us / n)
                        res[f"{side} loop"].append(loop_us())
                        res[f"{side} sequence"].append(sequence_us())
            tritonblas.dispatch.reset_stats()
            with tritonblas.enable():
                forward()
            st = tritonblas.dispatch.stats()
    finally:
        torch.set_num_threads(threads)
    med = {k: statistics.median(v) for k, v in res.items()}
    out = [f"in-model host per GEMM call, {name} (tiny twin, CPU, launches stubbed; {len(calls)} GEMM calls a "
           f"forward, {st['fast_hits']} served warm, {st['routed']} routed; medians of {rounds} rounds, us):"]
    for side in ("torch", "ours"):
        m, lo, sq = med[f"{side} model"], med[f"{side} loop"], med[f"{side} sequence"]
        out.append(f"  {side:6s} in the model {m:7.2f}   each call in a loop {lo:7.2f}   the model's calls in "
                   f"order, nothing between {sq:7.2f}   model / loop x{m / lo:.2f}")
    return out


def inmodel_grad(name: str, rounds: int = 9) -> list[str]:
    """CPU: what autograd recording adds to each routed GEMM call inside a model, ours against torch's. The
    tiny twin of a benchmarks/models.py model (train mode, bf16, CPU) runs its forward with grad (then its
    backward, timed apart) and under no_grad: torch alone; under ``enable()`` (our Python autograd Function);
    and under ``enable()`` with ``TRITONBLAS_AUTOGRAD=aten`` (our kernels below torch's C++ autograd,
    :mod:`tritonblas.below_autograd`; its no_grad path is the same as the Function's), every launch stubbed
    (:func:`stubbed_launches`, :func:`emulate_raw_launch`). Host us per GEMM call from models.GemmShim
    (outermost calls) and the backward's wall us, medians of ``rounds`` rounds. grad - no_grad is the
    autograd recording's cost a call. (Torch's CPU GEMM itself runs in both of its rows and cancels in the
    difference; its backward runs real CPU GEMMs, ours stubbed ones: compare ours with ours there.)"""
    import os

    os.environ.setdefault("TRITON_INTERPRET", "1")
    os.environ.setdefault("TRITONBLAS_PROFILE", "h200")
    import time

    import torch

    import models
    import tritonblas
    from tritonblas import settings

    model, inputs, _ = models.build(name, torch.bfloat16, "cpu", tiny=True)
    model.train()
    kw = inputs("train")

    def fwd():
        return models.model_loss(model, kw, models.model_forward(model, kw))

    @contextlib.contextmanager
    def side(label: str):
        if label == "torch":
            yield
            return
        with models.environ({settings.ENV_AUTOGRAD: "aten" if label == "ours aten" else None}), tritonblas.enable():
            yield

    sides = ("torch", "ours", "ours aten")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    res: dict = {}
    try:
        with stubbed_launches():
            for label in sides[1:]:
                with side(label):
                    for _ in range(3):  # the checked path records the warm entries of both states
                        fwd().backward()
                        model.zero_grad(set_to_none=True)
                        with torch.no_grad():
                            fwd()
            emulate_raw_launch()
            for _ in range(rounds):
                for label in sides:
                    for grad in (True, False):
                        with side(label):
                            with contextlib.nullcontext() if grad else torch.no_grad(), models.GemmShim() as shim:
                                loss = fwd()
                            if grad:
                                t0 = time.perf_counter_ns()
                                loss.backward()
                                res.setdefault((label, "backward"), []).append((time.perf_counter_ns() - t0) / 1e3)
                                model.zero_grad(set_to_none=True)
                        res.setdefault((label, grad), []).append(shim.ns / 1e3 / max(1, shim.calls))
    finally:
        torch.set_num_threads(threads)
    med = {k: statistics.median(v) for k, v in res.items()}
    out = [f"in-model host per GEMM call with and without autograd, {name} (tiny twin, CPU, launches stubbed; "
           f"medians of {rounds} rounds, us):"]
    for label in sides:
        g, n = med[(label, True)], med[(label, False)]
        out.append(f"  {label:9s} grad {g:7.2f}   no_grad {n:7.2f}   autograd's cost a call {g - n:+7.2f}   "
                   f"backward {med[(label, 'backward')]:8.1f}")
    return out


@contextlib.contextmanager
def _nothing_routes():
    """Without a profile or the interpreter for the CPU, so every GEMM under enable() falls through to torch;
    the variables are restored on leaving."""
    import models

    with models.environ({"TRITONBLAS_PROFILE": None, "TRITON_INTERPRET": None}):
        yield


def fallthrough(rounds: int = 7, tokens: int = 24) -> list[str]:
    """enable()'s toll where it does not act: greedy decode of a 4-layer ``transformers`` Llama (hidden
    128) on the CPU without a profile, so every GEMM is intercepted and handed to torch. Three sides in
    alternating order per round, medians: torch alone, ``enable()``, and ``enable()`` with
    fastpath.record_unroutable_* and the wrapper's record_refused_class switched off (every call takes the
    route's checks, as before they existed). Host-bound by construction: the toll per GEMM is the difference
    over the GEMM calls."""
    with _nothing_routes():
        return _fallthrough(rounds, tokens)


def _rotated(sides, rounds: int, timed) -> dict:
    """``timed(side)`` of every side each round, the sides in their order rotated by the round (each takes every
    position equally often): side -> its times, in round order (so paired by index)."""
    sides = tuple(sides)
    res: dict = {side: [] for side in sides}
    for r in range(rounds):
        shift = r % len(sides)
        for side in sides[shift:] + sides[:shift]:
            res[side].append(timed(side))
    return res


def _fallthrough(rounds: int, tokens: int) -> list[str]:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    import tritonblas
    from tritonblas import dispatch

    torch.manual_seed(0)
    cfg = LlamaConfig(hidden_size=128, intermediate_size=256, num_hidden_layers=4, num_attention_heads=4,
                      num_key_value_heads=2, vocab_size=512)
    model = LlamaForCausalLM(cfg).eval()
    ids = torch.randint(0, 512, (1, 16))

    def decode():
        with torch.no_grad():
            model.generate(ids, max_new_tokens=tokens, min_new_tokens=tokens, do_sample=False)

    def timed(side: str) -> float:
        tritonblas.clear_caches()
        t0 = time.perf_counter()
        if side == "torch":
            decode()
        elif side == "enable()":
            with tritonblas.enable():
                decode()
        else:  # the routing wrappers hold fastpath's functions: switch them off where they are read
            from tritonblas import routing

            saved = routing._TARGETS, routing._WRAPPERS, routing.record_refused_class
            routing._TARGETS = tuple(t[:5] for t in saved[0])
            routing._WRAPPERS = {}
            routing.record_refused_class = lambda args, kwargs: None
            try:
                with tritonblas.enable():
                    decode()
            finally:
                routing._TARGETS, routing._WRAPPERS, routing.record_refused_class = saved
        return (time.perf_counter() - t0) * 1e3

    sides = ("torch", "enable()", "enable(), no memory of refusals")
    for side in sides:
        timed(side)  # warm-up
    dispatch.reset_stats()
    with tritonblas.enable():
        decode()
    calls = dispatch.stats()["intercepted"]
    res = _rotated(sides, rounds, timed)
    med = {s: statistics.median(v) for s, v in res.items()}
    out = [f"fall-through decode, {calls} GEMM calls a run ({rounds} rounds, medians, this CPU):"]
    for s in sides:
        ratio = statistics.median(x / t for x, t in zip(res[s], res["torch"]))
        out.append(f"  {s:34s} {med[s]:8.2f} ms   x{ratio:.3f} of torch (paired)   "
                   f"{(med[s] - med['torch']) * 1e3 / calls:+7.1f} us a GEMM")
    return out


def grad_toll(rounds: int = 7, n: int = 4000) -> list[str]:
    """CPU (the interpreter, h200 profile): the toll of ``TRITONBLAS_GRAD_MIN_GFLOP``'s fall-through
    (:func:`tritonblas.fastpath.small_grad`), the path small aligned training GEMMs take by default: F.linear,
    addmm and matmul of 32x64x64 fp32 operands that require grad, forward only (autograd records torch's op),
    ``n`` calls in a loop, torch alone and under ``enable()`` alternating per round, one torch thread; medians of
    the per-call times and of the paired differences. Each enable() call is checked to have routed nothing."""
    import os

    import models

    with models.environ({"TRITON_INTERPRET": os.environ.get("TRITON_INTERPRET", "1"),
                         "TRITONBLAS_PROFILE": os.environ.get("TRITONBLAS_PROFILE", "h200"),
                         "TRITONBLAS_GRAD_MIN_GFLOP": None}):  # (the default)
        return _grad_toll(rounds, n)


def _grad_toll(rounds: int, n: int) -> list[str]:
    import torch
    import torch.nn.functional as F

    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(0)
    x, w, c = (torch.randn(*s, generator=g).requires_grad_() for s in ((32, 64), (64, 64), (64,)))
    cases = {"F.linear": lambda: F.linear(x, w, c), "addmm": lambda: torch.addmm(c, x, w), "matmul": lambda: x @ w}
    out = [f"the grad rule's fall-through toll per call ({rounds} rounds of {n} calls, medians, this CPU, "
           f"torch {torch.__version__}):", f"  {'op':9s} {'torch us':>9s} {'enable() us':>12s} {'toll us':>8s}"]

    for op, f in cases.items():
        def check(st, op=op):
            if st["routed"] or st["intercepted"] != n:
                raise RuntimeError(f"grad_toll: {op} did not fall through on every call: {st}")

        base, ours, toll = _paired_toll(f, rounds, n, check=check)
        out.append(f"  {op:9s} {base:9.2f} {ours:12.2f} {toll:+8.2f}")
    return out


def _loop_us(f, n: int) -> float:
    """Mean host us per call over ``n`` back-to-back calls of ``f`` (CPU tensors: no GPU queue to drain)."""
    t0 = time.perf_counter()
    for _ in range(n):
        f()
    return (time.perf_counter() - t0) / n * 1e6


def _paired_toll(f, rounds: int, n: int, warm_up: bool = False, check=None) -> tuple[float, float, float]:
    """``f`` torch alone and under ``enable()``, ``n`` calls a side, the order flipped every round (``warm_up``: a
    first round not counted); medians of each side's us per call and of the paired differences. ``check``, if
    given, gets the dispatcher's stats of each enable() side (reset before it)."""
    import tritonblas
    from tritonblas import dispatch

    base, ours = [], []
    for i in range(rounds + warm_up):
        pair = {}
        for side in (("torch", "ours") if i % 2 else ("ours", "torch")):
            if side == "torch":
                pair[side] = _loop_us(f, n)
                continue
            with tritonblas.enable():
                if check is not None:
                    dispatch.reset_stats()
                pair[side] = _loop_us(f, n)
                if check is not None:
                    check(dispatch.stats())
        if i or not warm_up:
            base.append(pair["torch"])
            ours.append(pair["ours"])
    return statistics.median(base), statistics.median(ours), statistics.median(o - t for o, t in zip(ours, base))


def fallthrough_ops(rounds: int = 5, n: int = 4000, dtypes=("fp32", "fp64")) -> list[str]:
    """enable()'s toll per call of every routed op where nothing is routed (CPU, no profile; fp32: a device
    without a profile; fp64: a dtype no kernel takes): ``n`` calls of tiny operands in a loop, torch alone and
    under ``enable()`` alternating per round, one torch thread; medians of the per-call times and of the
    paired differences. Keyword forms (``beta=``/``alpha=``) and Tensor methods too."""
    with _nothing_routes():
        return _fallthrough_ops(rounds, n, dtypes)


def _fallthrough_ops(rounds: int, n: int, dtypes) -> list[str]:
    import torch
    import torch.nn.functional as F

    import tritonblas

    torch.set_num_threads(1)
    out = [f"fall-through toll per call, every routed op ({rounds} rounds of {n} calls, medians, this CPU, "
           f"torch {torch.__version__}):", f"  {'dtype':5s} {'op':13s} {'torch us':>9s} {'enable() us':>12s} {'toll us':>8s}"]
    for name in dtypes:
        dt = {"fp32": torch.float32, "fp64": torch.float64}[name]
        g = torch.Generator().manual_seed(0)

        def r(*shape):
            return torch.randn(*shape, generator=g).to(dt)

        c, a, b, w = r(32), r(4, 16), r(16, 32), r(32, 16)
        a3, b3, c3, v, cv = r(2, 4, 16), r(2, 16, 32), r(2, 4, 32), r(16), r(4)
        cases = {
            "F.linear": lambda: F.linear(a, w, c), "matmul": lambda: torch.matmul(a, b), "a @ b": lambda: a @ b,
            "mm": lambda: torch.mm(a, b), "Tensor.mm": lambda: a.mm(b), "bmm": lambda: torch.bmm(a3, b3),
            "addmm": lambda: torch.addmm(c, a, b), "Tensor.addmm": lambda: c.addmm(a, b),
            "baddbmm": lambda: torch.baddbmm(c3, a3, b3),
            "baddbmm kw": lambda: torch.baddbmm(c3, a3, b3, beta=0.5, alpha=2.0),
            "addbmm": lambda: torch.addbmm(c, a3, b3), "mv": lambda: torch.mv(a, v), "addmv": lambda: torch.addmv(cv, a, v),
        }

        for op, f in cases.items():
            tritonblas.clear_caches()  # round 0: warm-up (the first refusal teaches the memory)
            base, ours, toll = _paired_toll(f, rounds, n, warm_up=True)
            out.append(f"  {name:5s} {op:13s} {base:9.2f} {ours:12.2f} {toll:+8.2f}")
    return out


def vendor_toll(rounds: int = 200, tokens: int = 16) -> list[str]:
    """CPU: what a GEMM that ``TRITONBLAS_VENDOR_ALIGNED`` hands to torch's op costs an eager decode: greedy decode
    with a KV cache of a 4-layer ``transformers`` Llama (hidden 64, bf16, a 16-token prompt; every GEMM aligned)
    under ``enable()`` with the variable ``1`` (every GEMM handed over: the wrapper, the rule's reads, torch's op),
    beside torch alone; and with ``0`` (every GEMM ours, served warm, its launch stubbed: :func:`stubbed_launches`,
    :func:`emulate_raw_launch`, the warm path's Python as on a GPU, but without the CPU GEMM the other two sides
    run, so its ratio understates ours). Sides rotated per round; each ratio is the median of per-round ratios to
    torch's. Raises when the ``1`` side routes a GEMM or the ``0`` side serves one cold (then the toll measured
    would be something else)."""
    import torch
    import transformers as tf
    from transformers import LlamaConfig, LlamaForCausalLM

    import models
    import tritonblas
    from tritonblas import dispatch, settings

    with models.environ({"TRITON_INTERPRET": "1", "TRITONBLAS_PROFILE": "h200"}):
        torch.manual_seed(0)
        cfg = LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=4, num_attention_heads=4,
                          num_key_value_heads=2, vocab_size=256)
        model = LlamaForCausalLM(cfg).eval().to(torch.bfloat16)
        prompt = torch.randint(0, 256, (1, 16))

        def step():
            with torch.inference_mode():
                cache = tf.DynamicCache(config=model.config)
                out = model(input_ids=prompt, past_key_values=cache, use_cache=True)
                for _ in range(tokens - 1):
                    out = model(input_ids=out.logits[:, -1:].argmax(-1), past_key_values=cache, use_cache=True)

        handed, ours = "enable(), VENDOR_ALIGNED=1", "enable(), VENDOR_ALIGNED=0"
        sides = {"torch": (contextlib.nullcontext, {}),
                 handed: (tritonblas.enable, {settings.ENV_VENDOR_ALIGNED: "1"}),
                 ours: (tritonblas.enable, {settings.ENV_VENDOR_ALIGNED: "0"})}

        def timed(name: str) -> float:
            ctx, env = sides[name]
            with models.environ(env), ctx():
                t0 = time.perf_counter()
                step()
                return time.perf_counter() - t0

        def counted(name: str) -> dict:
            dispatch.reset_stats()
            with models.environ(sides[name][1]), tritonblas.enable():
                step()
            return dispatch.stats()

        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            with stubbed_launches():
                for name in sides:
                    for _ in range(3):
                        timed(name)  # the checked path records the warm entries
                emulate_raw_launch()
                st = counted(ours)
                if not st["intercepted"] or st["fast_hits"] != st["intercepted"]:
                    raise RuntimeError(f"vendor_toll: not every GEMM served warm with {ours}: {st}")
                st1 = counted(handed)
                if st1["routed"] or st1["intercepted"] != st["intercepted"]:
                    raise RuntimeError(f"vendor_toll: not every GEMM handed to torch with {handed}: {st1}")
                res = _rotated(sides, rounds, timed)
        finally:
            torch.set_num_threads(threads)
    calls = st["intercepted"]
    return [f"VENDOR_ALIGNED's hand-over on an eager decode: {calls} GEMM calls a decode, {st1['intercepted']} handed "
            f"to torch at 1, {st['fast_hits']} served warm at 0 (tiny Llama, CPU, launches stubbed; {rounds} rounds):",
            *_paired_lines(res, calls, 28)]


def _paired_lines(res: dict, calls: int, width: int) -> list[str]:
    """One line a side of :func:`_rotated`'s times ``res`` (torch's under "torch"): its median, the median of its
    per-round ratios to torch's, and the median per-round difference spread over ``calls`` GEMM calls."""
    base = res["torch"]
    out = []
    for k, times in res.items():
        ratio = statistics.median(x / b for x, b in zip(times, base))
        extra = statistics.median((x - b) / calls for x, b in zip(times, base)) * 1e6
        out.append(f"  {k:{width}s} {statistics.median(times) * 1e3:8.3f} ms   x{ratio:.4f} of torch (paired), "
                   f"{extra:+.2f} us a GEMM call")
    return out


def module_toll(rounds: int = 300) -> list[str]:
    """CPU: what ``enable()`` costs a host-bound prefill whose every GEMM the vendor rule hands to torch's op: a tiny
    24-layer ``transformers`` BERT (hidden 64, 4 heads, bf16, 2 x 16 tokens, ``inference_mode``; 145 ``nn.Linear``
    calls a forward, every one aligned) with ``TRITONBLAS_VENDOR_ALIGNED=1``: torch alone; ``enable()`` as shipped
    (``nn.Linear``'s forward replaced: :func:`tritonblas.handover.linear_forward`); and ``enable()`` with torch's
    own forward kept for the block (``TRITONBLAS_LINEAR_FORWARD=0``), so every call meets ``F.linear``'s wrapper and
    its front (the mechanism before). Sides rotated per round, one thread; each ratio is the median of per-round ratios to torch's. Raises
    when a side routes a GEMM or does not intercept every one (then the toll measured would be something else)."""
    import torch
    from transformers import BertConfig, BertModel

    import models
    import tritonblas
    from tritonblas import dispatch, settings

    with models.environ({"TRITON_INTERPRET": "1", "TRITONBLAS_PROFILE": "h200", settings.ENV_VENDOR_ALIGNED: "1"}):
        torch.manual_seed(0)
        cfg = BertConfig(hidden_size=64, intermediate_size=256, num_hidden_layers=24, num_attention_heads=4,
                         vocab_size=512)
        model = BertModel(cfg).eval().to(torch.bfloat16)
        ids = torch.randint(0, 512, (2, 16))

        def step() -> None:
            with torch.inference_mode():
                model(input_ids=ids)

        @contextlib.contextmanager
        def front_only():  # the block without its nn.Linear forward (the switch is read when a block opens)
            with models.environ({settings.ENV_LINEAR_FORWARD: "0"}), tritonblas.enable():
                yield

        sides = {"torch": contextlib.nullcontext, "enable()": tritonblas.enable,
                 "enable(), F.linear's front only": front_only}

        def timed(name: str) -> float:
            with sides[name]():
                t0 = time.perf_counter()
                step()
                return time.perf_counter() - t0

        counts = {}
        for name in sides:
            dispatch.reset_stats()
            with sides[name]():
                step()
            counts[name] = dispatch.stats()
        calls = counts["enable()"]["intercepted"]
        for name in list(sides)[1:]:
            st = counts[name]
            if st["routed"] or not st["intercepted"] or st["intercepted"] != calls:
                raise RuntimeError(f"module_toll: not every GEMM handed to torch with {name}: {st}")
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            for name in sides:
                timed(name)
            res = _rotated(sides, rounds, timed)
        finally:
            torch.set_num_threads(threads)
    return [f"enable()'s hand-over on a host-bound prefill: {calls} GEMM calls a forward, every one handed to torch "
            f"(tiny 24-layer BERT, CPU; {rounds} rounds):", *_paired_lines(res, calls, 34)]


def rope_toll(rounds: int = 200, n: int = 200) -> list[str]:
    """CPU: what the rotary embedding's matmul costs a forward (``transformers`` up to 5.17:
    ``inv_freq[None, :, None].float().expand(1, -1, 1) @ positions[:, None, :].float()``, fp32, K = 1, a stride-0
    operand, once a forward; 32 routed calls of the H100's eager decode at 5a1b5be): torch alone; under ``enable()``
    with ``TRITONBLAS_VENDOR_ALIGNED=0`` and ``TRITONBLAS_FAST=0`` (ours, through the route: on the H100 our warm
    path served none of those calls, while on the CPU it serves them; the launch stubbed: :func:`stubbed_launches`,
    so the route's Python alone); and with ``1`` (the rule hands K under one MMA step to torch's op). Per call, ``n``
    calls a round, sides rotated per round; medians of the rounds. Raises when the ``0`` side does not route the call
    or the ``1`` side does (then the cost measured would be something else)."""
    import torch

    import models
    import tritonblas
    from tritonblas import dispatch, fastpath, settings

    inv = torch.rand(32)
    pos = torch.arange(1, dtype=torch.float32)[None, :] + 130  # a decode step's one position

    def rope():
        return inv[None, :, None].float().expand(1, -1, 1) @ pos[:, None, :].float()

    handed, ours = "enable(), VENDOR_ALIGNED=1", "enable(), VENDOR_ALIGNED=0"
    sides = {"torch": (contextlib.nullcontext, {}),
             handed: (tritonblas.enable, {settings.ENV_VENDOR_ALIGNED: "1"}),
             ours: (tritonblas.enable, {settings.ENV_VENDOR_ALIGNED: "0", fastpath.ENV_FAST: "0"})}
    with models.environ({"TRITON_INTERPRET": "1", "TRITONBLAS_PROFILE": "h200"}), stubbed_launches():
        def timed(name: str) -> float:
            ctx, env = sides[name]
            with models.environ(env), ctx(), torch.autocast("cpu", enabled=False):
                t0 = time.perf_counter()
                for _ in range(n):
                    rope()
                return (time.perf_counter() - t0) / n

        counts = {}
        for name in sides:
            with models.environ(sides[name][1]), tritonblas.enable():
                rope()
                rope()  # (a warm path, were there one, would serve the second)
                dispatch.reset_stats()
                rope()
                counts[name] = dispatch.stats()
        if not counts[ours]["routed"] or counts[ours]["fast_hits"]:
            raise RuntimeError(f"rope_toll: the rotary matmul not routed cold with {ours}: {counts[ours]}")
        if counts[handed]["routed"] or not counts[handed]["intercepted"]:
            raise RuntimeError(f"rope_toll: the rotary matmul not handed to torch with {handed}: {counts[handed]}")
        res = _rotated(sides, rounds, timed)
    out = [f"the rotary embedding's fp32 K = 1 matmul, one call a forward (CPU, launches stubbed; {rounds} rounds "
           f"of {n} calls):"]
    for k in sides:
        out.append(f"  {k:28s} {statistics.median(res[k]) * 1e6:8.2f} us a call")
    return out


def handover_gpu(rounds: int = 9, n: int = 2000) -> list[str]:
    """GPU: what a GEMM the vendor rule hands to torch's op costs per call on this host (session 40: the H100's
    models measured ~4-7 us a GEMM call over torch's, the CPU proxy 1-2). Tiny aligned ``nn.Linear`` calls, and one
    ``F.linear`` call (bf16,
    a ``Parameter`` weight; the GPU's work under the host's, so wall time is host time), under ``inference_mode``,
    torch alone against ``enable()`` at the default, the order flipped every round, ``n`` calls a side timed up to
    the drained queue; medians of each side and of the paired differences. Then the hand-over's stages timed alone
    in a loop: the wrapper's front (``handover.linear_handed``: the sizes and the rule), the rule
    (``handover.vendor_aligned``) and the reads it makes. Raises when the enable() side routes a call (then the toll would be something else)."""
    import torch

    import tritonblas
    from tritonblas import dispatch, handover

    def side_us(f, on: bool) -> float:
        with tritonblas.enable() if on else contextlib.nullcontext():
            dispatch.reset_stats()
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(n):
                f()
            torch.cuda.synchronize()
            us = (time.perf_counter() - t0) / n * 1e6
            if on and dispatch.stats()["routed"]:
                raise RuntimeError(f"handover_gpu: the default routed calls: {dispatch.stats()}")
        return us

    out = [f"hand-over toll on {torch.cuda.get_device_name()} (us per call, medians of {rounds} rounds of {n})",
           f"{'case':34} {'torch':>7} {'enable()':>9} {'toll':>6}"]
    first = None
    for name, rows_m, k, n_out, bias in (("linear 1x1x256 @ 256x256", 1, 256, 256, False),
                                         ("linear+bias 1x1x256 @ 512x256", 1, 256, 512, True),
                                         ("linear 1x16x1024 @ 1024x1024", 16, 1024, 1024, False),
                                         ("F.linear 1x1x256 @ 256x256", 1, 256, 256, False)):
        lin = torch.nn.Linear(k, n_out, bias=bias, device="cuda", dtype=torch.bfloat16)
        x = torch.randn(1, rows_m, k, device="cuda", dtype=torch.bfloat16)
        first = first or (lin.weight, x)
        base, ours = [], []
        with torch.inference_mode():
            # nn.Linear's forward (enable() installs its own), or F.linear itself (its wrapper's front)
            f = (lambda: torch.nn.functional.linear(x, lin.weight)) if name.startswith("F.") else (lambda: lin(x))
            for i in range(rounds + 1):  # the first round warms both sides, not counted
                pair = {on: side_us(f, on) for on in ((True, False) if i % 2 else (False, True))}
                if i:
                    base.append(pair[False])
                    ours.append(pair[True])
        d = statistics.median(o - t for o, t in zip(ours, base))
        out.append(f"{name:34} {statistics.median(base):7.2f} {statistics.median(ours):9.2f} {d:6.2f}")
    out.append("stages alone (inference_mode, the first case's operands), us per call:")
    w, x = first
    raw = handover.vendor_aligned_raw()
    with torch.inference_mode():
        stages = {"handover.linear_handed(x, w)": lambda: handover.linear_handed(x, w),
                  "handover.vendor_aligned(...)": lambda: handover.vendor_aligned(raw, x, 1, 256, 256, False),
                  "handover.vendor_aligned_raw()": handover.vendor_aligned_raw,
                  "w.shape": lambda: w.shape, "x.numel()": x.numel, "x.is_cuda": lambda: x.is_cuda,
                  "torch.is_grad_enabled()": torch.is_grad_enabled, "(empty lambda)": lambda: None}
        for stage, fn in stages.items():
            us = statistics.median(_loop_us(fn, n * 5) for _ in range(rounds))
            out.append(f"  {stage:32} {us:7.3f}")
    return out


def train_forward(name: str, rounds: int = 6, top: int = 12) -> list[str]:
    """A training step's forward alone, torch against ``enable()`` (GPU): with autograd recording and under
    no_grad, the host time to issue it and the time to a device sync (medians of ``rounds`` alternating
    rounds), then torch.profiler's CPU self time per op of one forward with grad on each side. The
    question (session 22): gpt2-medium's training step ran 0.862-0.878x torch on the H100 while its GEMM
    GPU time was 16% under cuBLAS's; which part of the forward's host time is the drop-in's."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    import models
    import tritonblas

    model, inputs, _ = models.build(name, torch.bfloat16, "cuda")
    model.train()
    kw = inputs("train")

    def side(label: str):
        return tritonblas.enable() if label == "ours" else contextlib.nullcontext()

    def one(label: str, grad: bool) -> tuple[float, float]:
        with side(label):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            with contextlib.nullcontext() if grad else torch.no_grad():
                loss = models.model_loss(model, kw, models.model_forward(model, kw))
            t1 = time.perf_counter()
            torch.cuda.synchronize()
            t2 = time.perf_counter()
            if grad:
                loss.backward()
                model.zero_grad(set_to_none=True)
                torch.cuda.synchronize()
        return (t1 - t0) * 1e3, (t2 - t0) * 1e3

    for label in ("torch", "ours", "torch", "ours"):
        one(label, True)
    out = []
    for grad in (True, False):
        res: dict = {"torch": [], "ours": []}
        for r in range(rounds):
            for label in ("torch", "ours") if r % 2 == 0 else ("ours", "torch"):
                res[label].append(one(label, grad))
        for label, v in res.items():
            out.append(f"{name} forward {'grad' if grad else 'no_grad':7s} {label:5s}: host issue "
                       f"{statistics.median(x[0] for x in v):7.2f} ms, to sync {statistics.median(x[1] for x in v):7.2f} ms")
    for label in ("torch", "ours"):
        with side(label):
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                loss = models.model_loss(model, kw, models.model_forward(model, kw))
                torch.cuda.synchronize()
            loss.backward()
            model.zero_grad(set_to_none=True)
        out.append(f"--- {label}, one forward with grad: CPU self time by op (torch.profiler)")
        for e in sorted(prof.key_averages(), key=lambda e: -e.self_cpu_time_total)[:top]:
            out.append(f"  {e.self_cpu_time_total / 1e3:8.3f} ms {e.count:5d}x  {e.key[:90]}")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=None, help="calls per row (default 1000; --cpu-stub: 20000)")
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--model", default=None, help="also profile eager decode of this benchmarks/models.py LLM")
    ap.add_argument("--split", nargs="*", default=None, metavar="MODEL",
                    help="only the in-model split of these benchmarks/models.py models' prefill (see inmodel_split)")
    ap.add_argument("--timeline", default=None, metavar="LLM",
                    help="only the GPU timeline of eager decode tokens of this LLM, torch vs ours (see decode_timeline)")
    ap.add_argument("--out", type=Path, default=None, help="--timeline: also write the two chrome traces here")
    ap.add_argument("--train", nargs="*", default=None, metavar="MODEL",
                    help="only the host split of these benchmarks/models.py models' training step (see train_split)")
    ap.add_argument("--train-forward", nargs="*", default=None, metavar="MODEL",
                    help="only a training step's forward, torch vs enable(), grad and no_grad (see train_forward)")
    ap.add_argument("--cpu-stub", action="store_true",
                    help="only the CPU rows: warm routed calls with the launch stubbed out (see cpu_stub)")
    ap.add_argument("--fallthrough", action="store_true",
                    help="only enable()'s cost with every GEMM falling through (CPU, see fallthrough)")
    ap.add_argument("--inmodel-stub", nargs="*", default=None, metavar="MODEL",
                    help="only the in-model vs in-a-loop host time per GEMM call of these models' tiny twins "
                         "(CPU, launches stubbed; see inmodel_stub)")
    ap.add_argument("--inmodel-grad", nargs="*", default=None, metavar="MODEL",
                    help="only what autograd recording adds per GEMM call inside these models' tiny twins, ours vs "
                         "torch (CPU, launches stubbed; see inmodel_grad)")
    ap.add_argument("--grad-toll", action="store_true",
                    help="only the grad rule's fall-through toll per call (CPU, see grad_toll)")
    ap.add_argument("--fallthrough-ops", action="store_true",
                    help="only enable()'s toll per call of every routed op with nothing routed (CPU, see fallthrough_ops)")
    ap.add_argument("--rope-toll", action="store_true",
                    help="the rotary embedding's K = 1 matmul: torch, ours (cold route), handed over (CPU, see rope_toll)")
    ap.add_argument("--handover-gpu", action="store_true",
                    help="only the vendor rule's hand-over toll per call on this GPU's host, and its stages (see handover_gpu)")
    ap.add_argument("--module-toll", action="store_true",
                    help="what enable() costs a host-bound prefill whose GEMMs are all handed to torch: nn.Linear's "
                         "forward against F.linear's front (CPU, see module_toll)")
    ap.add_argument("--vendor-toll", action="store_true",
                    help="only what a GEMM TRITONBLAS_VENDOR_ALIGNED hands to torch costs an eager decode (CPU, see vendor_toll)")
    ap.add_argument("--rounds", type=int, default=None,
                    help="--fallthrough, --fallthrough-ops, --inmodel-stub, --inmodel-grad (default 7), --vendor-toll "
                         "(default 200): rounds (medians)")
    ap.add_argument("--only", nargs="*", default=(), metavar="TEXT",
                    help="--cpu-stub: only the cases whose name contains one of these")
    args = ap.parse_args(argv)
    import os

    # these time our warm path under enable(): on an NVIDIA GPU the vendor-aligned default would hand their
    # aligned bf16 calls to torch's op (set TRITONBLAS_VENDOR_ALIGNED yourself to time the default instead)
    from tritonblas import settings

    vendor_set = settings.ENV_VENDOR_ALIGNED in os.environ
    os.environ.setdefault(settings.ENV_VENDOR_ALIGNED, "0")
    if args.cpu_stub:
        os.environ.setdefault("TRITON_INTERPRET", "1")
        os.environ.setdefault("TRITONBLAS_PROFILE", "h200")
        for line in cpu_stub_report(cpu_stub(args.n or 20000, profile=args.profile, only=tuple(args.only))):
            print(line)
        return 0
    if args.rounds is not None and args.rounds < 1:
        ap.error(f"--rounds {args.rounds}: expected at least 1")
    if args.rope_toll:
        for line in rope_toll(args.rounds or 200, args.n or 200):
            print(line)
        return 0
    if args.module_toll:
        for line in module_toll(args.rounds or 300):
            print(line)
        return 0
    if args.vendor_toll:
        for line in vendor_toll(args.rounds or 200):
            print(line)
        return 0
    args.rounds = args.rounds or 7
    if args.handover_gpu:  # the default's hand-over: the rule as a user runs it (unset) unless set by hand
        if not vendor_set:
            os.environ.pop(settings.ENV_VENDOR_ALIGNED, None)
        for line in handover_gpu(args.rounds, args.n or 2000):
            print(line)
        return 0
    if args.inmodel_stub is not None:
        for name in args.inmodel_stub or ("gpt2-medium", "bert-large"):
            for line in inmodel_stub(name, args.rounds):
                print(line)
        return 0
    if args.inmodel_grad is not None:
        for name in args.inmodel_grad or ("gpt2-medium", "llama3.2-1b"):
            for line in inmodel_grad(name, args.rounds):
                print(line)
        return 0
    if args.grad_toll:
        for line in grad_toll(args.rounds, args.n or 4000):
            print(line)
        return 0
    if args.fallthrough_ops:
        for line in fallthrough_ops(args.rounds):
            print(line)
        return 0
    if args.fallthrough:
        for line in fallthrough(args.rounds):
            print(line)
        return 0
    if args.train_forward is not None:
        for name in args.train_forward or ("gpt2-medium",):
            for line in train_forward(name):
                print(line)
        return 0
    if args.train is not None:
        for name in args.train or ("llama3.2-1b",):
            train_split(name)
        return 0
    if args.timeline:
        decode_timeline(args.timeline, out=args.out)
        return 0
    if args.split is not None:
        for name in args.split or ("bert-large", "llama3.2-1b", "vit-l16"):
            inmodel_split(name)
        return 0
    args.n = args.n or 1000
    import torch
    import torch.nn.functional as F

    import tritonblas
    from tritonblas import dispatch, fastpath

    dev = "cuda"
    cases = [("decode 1x1x2048 @ 8192x2048", (1, 1, 2048), 8192, 2048, False),
             ("decode+bias 1x1x3584 @ 4608x3584", (1, 1, 3584), 4608, 3584, True),
             ("prefill 4x512x2048 @ 2048x2048", (4, 512, 2048), 2048, 2048, False)]
    print(f"{'case':36} {'stage':34} {'us/call':>8}")
    for name, xs, n_out, k, has_bias in cases:
        lin = torch.nn.Linear(k, n_out, bias=has_bias, device=dev, dtype=torch.bfloat16)
        x = torch.randn(*xs, device=dev, dtype=torch.bfloat16)
        w, b = lin.weight, lin.bias
        with torch.no_grad():
            rows = {}
            rows["torch F.linear"] = per_call_us(lambda: F.linear(x, w, b), args.n)
            tritonblas.linear(x, w, b)
            tritonblas.linear(x, w, b)
            rows["tritonblas.linear"] = per_call_us(lambda: tritonblas.linear(x, w, b), args.n)
            rows["fastpath.linear"] = per_call_us(lambda: fastpath.linear(x, w, b), args.n)
            with tritonblas.enable():
                F.linear(x, w, b)
                rows["F.linear under enable()"] = per_call_us(lambda: F.linear(x, w, b), args.n)
            rows["  key (_linear_key)"] = per_call_us(lambda: fastpath._linear_key(x, w, b), args.n)
            key = fastpath._linear_key(x, w, b)
            hit = fastpath._LINEAR.get(key)
            rows["  lookup"] = per_call_us(lambda: fastpath._LINEAR.get(key), args.n)
            rows["  direct()"] = per_call_us(fastpath.direct, args.n)
            rows["  torch.empty"] = per_call_us(lambda: torch.empty(hit[1], dtype=x.dtype, device=x.device), args.n)
            f = hit[0]
            out = torch.empty(hit[1], dtype=x.dtype, device=x.device)
            rows["  launch_fast (raw)"] = per_call_us(lambda: dispatch.launch_fast(f, x, w, out, b, 1.0, 1.0 if b is not None else 0.0), args.n)
            rows["  raw_ready"] = per_call_us(lambda: dispatch.raw_ready(f), args.n)
            rows["  fast_context"] = per_call_us(lambda: dispatch.fast_context(x.dtype), args.n)
            print(f"  (entry: {f.plan.config.short()}, raw bound: {f.raw is not None}, staged: {bool(f.staged)})")
        for stage, us in rows.items():
            print(f"{name:36} {stage:34} {us:8.2f}")
        if args.profile:
            import cProfile
            import pstats

            with torch.no_grad(), tritonblas.enable():
                pr = cProfile.Profile()
                pr.enable()
                for _ in range(args.n):
                    F.linear(x, w, b)
                pr.disable()
            pstats.Stats(pr).sort_stats("tottime").print_stats(18)
    if args.model:
        decode_profile(args.model, args.n)
    return 0


class _NoKernel:
    """A stand-in for every Triton kernel: ``kernel[grid](*args)`` does nothing."""

    def __getitem__(self, grid):
        return self

    def __call__(self, *args, **kwargs):
        return None


_noop_c = "".format  # a C callable taking any positional arguments and doing nothing (the C launch's stand-in)


@contextlib.contextmanager
def stubbed_launches():
    """Inside: every tritonblas kernel a no-op (cold calls record their fast entries without running the
    interpreter), and every GEMM routed (``TRITONBLAS_GRAD_MIN_GFLOP=0``: the stubs time our path, and the
    default rule would send their small autograd GEMMs to torch's op); on leaving, the kernels, the
    dispatcher's device stand-ins, every cache and the variable are restored."""
    import models
    import tritonblas
    import tritonblas.kernels as kernels
    from tritonblas import launchcache, settings

    saved = {name: getattr(kernels, name) for name in kernels.__all__}
    saved_dev = launchcache.get_device, launchcache.raw_stream
    for name in saved:
        setattr(kernels, name, _NoKernel())
    tritonblas.clear_caches()
    try:
        with models.environ({settings.ENV_GRAD_MIN_GFLOP: "0"}):
            yield
    finally:
        for name, k in saved.items():
            setattr(kernels, name, k)
        launchcache.get_device, launchcache.raw_stream = saved_dev
        tritonblas.clear_caches()


def emulate_raw_launch() -> int:
    """Turn every recorded fast entry into what it is on a GPU with the raw launcher bound: a
    :class:`tritonblas._fastlaunch.RawLauncher` whose C launch (and descriptor encoder) is a C no-op, a
    CUDA index 0, and the dispatcher's current-device and raw-stream queries C stand-ins answering 0. The
    warm path then runs exactly the Python it runs on the H200 (``launch_warm`` → ``call_ready`` →
    ``raw_args`` → ``RawLauncher.__call__``), minus the C launch itself.
    Returns how many entries it changed. Only inside :func:`stubbed_launches`."""
    from tritonblas import _fastlaunch, launchcache

    launchcache.get_device, launchcache.raw_stream = int, abs  # int() == 0, abs(0) == 0: C calls, as on a GPU
    n = 0
    for f in list(launchcache.FAST.values()):
        desc = {pos: ({"swizzle": 0, "elem_size": 2, "block_size": []}, list(t[1]["shape"]),
                      list(t[1]["strides"]), 0, None)
                for pos, t in ((0, f.a_desc), (1, f.b_desc)) if t is not None}
        f.raw = _fastlaunch.RawLauncher(_noop_c, None, (4, 1, 0), (False, False), desc, _noop_c)
        f.cuda_index = 0
        if f.tail is None:  # the constexpr tail a GPU entry binds (CPU entries have none)
            f.tail = tuple(f.kwargs.values())
        n += 1
    return n


def _median_us(fn, n: int) -> float:
    """Median of ``n`` single calls timed with perf_counter_ns (after n // 10 warm calls)."""
    clock = time.perf_counter_ns
    for _ in range(max(1, n // 10)):
        fn()
    ts = []
    for _ in range(n):
        t0 = clock()
        fn()
        ts.append(clock() - t0)
    return statistics.median(ts) / 1e3


def _calls_per_call(fn, n: int) -> tuple[float, float]:
    """cProfile's function calls per call of ``fn``: all (builtins included), and Python functions only."""
    import cProfile
    import pstats

    out = []
    for builtins in (True, False):
        pr = cProfile.Profile(builtins=builtins)
        pr.enable()
        for _ in range(n):
            fn()
        pr.disable()
        st = pstats.Stats(pr)
        out.append((st.total_calls - builtins) / n)  # less the profiler's own disable() call (a builtin)
    return out[0], out[1]


def cpu_stub(n: int = 20000, profile: bool = False, only: tuple = ()) -> list[dict]:
    """Host cost of warm routed calls on the CPU with the launch stubbed out (:func:`emulate_raw_launch`):
    ``F.linear(x3d, weight_param[, bias])`` under no_grad and under autograd (forward alone, and forward
    + backward), ``torch.matmul`` 2-D and batched 3-D, all under ``enable()`` (``TRITONBLAS_PROFILE=h200``,
    ``TRITON_INTERPRET=1``, CPU bf16 tensors). Beside each, torch's own call on CPU tensors of the same
    ranks and tiny sizes (every dim 2-32, so the CPU GEMM itself is a few hundred ns: torch's dispatch,
    autograd, allocation and shape work, what torch's host pays on any device, less cuBLAS's launch).
    Per row: median us of ``n`` single calls, and cProfile's calls per call (all, and Python functions
    only), torch on one CPU thread. ``profile``: print the top of a cProfile of our warm call per case; ``only``: just the cases
    whose name contains one of these strings. Rows are dicts: case,
    side ("ours" / "torch tiny"), us, calls, py_calls (ours: warm, whether every call was served warm).
    Needs ``TRITON_INTERPRET=1`` and ``TRITONBLAS_PROFILE=h200`` set (``--cpu-stub`` sets them)."""
    import torch
    import torch.nn.functional as F

    import tritonblas

    bf = torch.bfloat16

    def linear_case(tiny: bool, bias: bool, grad: str | None):
        g = torch.Generator().manual_seed(0)
        (bt, s, k), nout = ((2, 4, 16), 32) if tiny else ((2, 16, 64), 128)
        x = torch.randn(bt, s, k, dtype=bf, generator=g).requires_grad_(grad is not None)
        w = torch.nn.Parameter(torch.randn(nout, k, dtype=bf, generator=g))
        b = torch.nn.Parameter(torch.randn(nout, dtype=bf, generator=g)) if bias else None
        if grad in (None, "fwd"):  # no_grad, or the autograd forward alone
            return lambda: F.linear(x, w, b)
        gy = torch.ones(bt, s, nout, dtype=bf)

        def step():
            x.grad = w.grad = None
            if b is not None:
                b.grad = None
            F.linear(x, w, b).backward(gy)
        return step

    def autocast_case(tiny: bool):  # mixed precision: fp32 parameters, torch.autocast bf16, forward + backward
        g = torch.Generator().manual_seed(0)
        (bt, s, k), nout = ((2, 4, 16), 32) if tiny else ((2, 16, 64), 128)
        x = torch.randn(bt, s, k, generator=g).requires_grad_()
        w = torch.nn.Parameter(torch.randn(nout, k, generator=g))
        b = torch.nn.Parameter(torch.randn(nout, generator=g))
        gy = torch.ones(bt, s, nout, dtype=bf)

        def step():
            x.grad = w.grad = b.grad = None
            with torch.autocast("cpu", dtype=bf):
                y = F.linear(x, w, b)
            y.backward(gy)
        return step

    def matmul_case(tiny: bool, batched: bool):
        g = torch.Generator().manual_seed(0)
        if batched:
            sa, sb = ((2, 4, 8), (2, 8, 4)) if tiny else ((4, 16, 64), (4, 64, 32))
        else:
            sa, sb = ((4, 16), (16, 8)) if tiny else ((32, 64), (64, 128))
        a = torch.randn(*sa, dtype=bf, generator=g)
        b = torch.randn(*sb, dtype=bf, generator=g)
        return lambda: torch.matmul(a, b)

    def addmm_case(tiny: bool, grad: bool = False):  # GPT-2's Conv1D: addmm(bias, x.view(-1, in), weight (in, out))
        g = torch.Generator().manual_seed(0)
        (m, k), nout = ((8, 16), 32) if tiny else ((32, 64), 128)
        x = torch.randn(m, k, dtype=bf, generator=g).requires_grad_(grad)
        w = torch.nn.Parameter(torch.randn(k, nout, dtype=bf, generator=g))
        b = torch.nn.Parameter(torch.randn(nout, dtype=bf, generator=g))
        if not grad:
            return lambda: torch.addmm(b, x, w)
        gy = torch.ones(m, nout, dtype=bf)

        def step():
            x.grad = w.grad = b.grad = None
            torch.addmm(b, x, w).backward(gy)
        return step

    def bmm_case(tiny: bool):
        g = torch.Generator().manual_seed(0)
        sa, sb = ((2, 4, 8), (2, 8, 4)) if tiny else ((4, 16, 64), (4, 64, 32))
        a = torch.randn(*sa, dtype=bf, generator=g)
        b = torch.randn(*sb, dtype=bf, generator=g)
        return lambda: torch.bmm(a, b)

    cases = [("linear no_grad 2x16x64 @ 128x64", lambda t: linear_case(t, False, None), False),
             ("linear+bias no_grad", lambda t: linear_case(t, True, None), False),
             ("linear autograd fwd", lambda t: linear_case(t, False, "fwd"), True),
             ("linear autograd fwd+bwd", lambda t: linear_case(t, False, "bwd"), True),
             ("linear+bias autograd fwd+bwd", lambda t: linear_case(t, True, "bwd"), True),
             ("linear+bias autocast fwd+bwd", autocast_case, True),
             ("matmul no_grad 32x64 @ 64x128", lambda t: matmul_case(t, False), False),
             ("matmul no_grad 4x16x64 @ 4x64x32", lambda t: matmul_case(t, True), False),
             ("addmm no_grad 32x64 @ 64x128 + b", addmm_case, False),
             ("addmm autograd fwd+bwd", lambda t: addmm_case(t, True), True),
             ("bmm no_grad 4x16x64 @ 4x64x32", bmm_case, False)]
    if only:
        cases = [c for c in cases if any(o in c[0] for o in only)]
    rows = []
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # torch's CPU ops on 2 threads paid ~13 us of thread hand-off per tiny GEMM
    with contextlib.ExitStack() as stack:
        stack.callback(torch.set_num_threads, threads)
        stack.enter_context(stubbed_launches())
        fns = {}
        for name, make, grad in cases:
            fn = make(False)
            with torch.set_grad_enabled(grad), tritonblas.enable():
                for _ in range(3):  # cold: the checked path records the warm entries (backward's too)
                    fn()
            fns[name] = fn
        emulate_raw_launch()
        for name, make, grad in cases:
            fn, ref = fns[name], make(True)
            with torch.set_grad_enabled(grad):
                with tritonblas.enable():
                    stats0 = tritonblas.dispatch.stats()
                    us = _median_us(fn, n)
                    stats1 = tritonblas.dispatch.stats()
                    calls, py_calls = _calls_per_call(fn, min(n, 2000))
                    if profile:
                        import cProfile
                        import pstats

                        pr = cProfile.Profile()
                        pr.enable()
                        for _ in range(min(n, 2000)):
                            fn()
                        pr.disable()
                        print(f"--- {name}")
                        pstats.Stats(pr).sort_stats("tottime").print_stats(25)
                warm = (stats1.get("fast_hits", 0) - stats0.get("fast_hits", 0) >= n
                        and stats1.get("routed", 0) - stats0.get("routed", 0) >= n)
                rows.append({"case": name, "side": "ours", "us": us, "calls": calls, "py_calls": py_calls,
                             "warm": warm})
                us = _median_us(ref, n)
                calls, py_calls = _calls_per_call(ref, min(n, 2000))
                rows.append({"case": name, "side": "torch tiny", "us": us, "calls": calls, "py_calls": py_calls})
    return rows


def cpu_stub_report(rows: list[dict]) -> list[str]:
    """The table :func:`cpu_stub`'s rows print as."""
    out = [f"{'case':36} {'side':11} {'us/call':>8} {'calls':>7} {'py calls':>8}"]
    for r in rows:
        warm = "" if r["side"] != "ours" or r.get("warm", True) else "  (NOT WARM)"
        out.append(f"{r['case']:36} {r['side']:11} {r['us']:8.2f} {r['calls']:7.1f} {r['py_calls']:8.1f}{warm}")
    return out


def decode_ms(model, prompt, k: int, prof=None) -> float:
    """ms per token of ``k`` greedy decode tokens after ``prompt`` (DynamicCache, eager), timed from the
    first decode token to a device sync; ``prof`` (a torch.profiler profile) records just those tokens."""
    import torch
    import transformers as tf

    cache = tf.DynamicCache(config=model.config)
    out = model(input_ids=prompt, past_key_values=cache, use_cache=True)
    tok = out.logits[:, -1:].argmax(-1)
    torch.cuda.synchronize()
    if prof is not None:
        prof.start()
    t0 = time.perf_counter()
    for _ in range(k):
        out = model(input_ids=tok, past_key_values=cache, use_cache=True)
        tok = out.logits[:, -1:].argmax(-1)
    torch.cuda.synchronize()
    ms = (time.perf_counter() - t0) / k * 1e3
    if prof is not None:
        prof.stop()
    return ms


def decode_profile(name: str, n: int) -> None:
    """Per-token wall time of eager greedy decode (DynamicCache) with torch and under enable(), and a
    cProfile of our tokens: where the host time of a real decode step goes."""
    import cProfile
    import pstats

    import torch

    import models
    import tritonblas
    from tritonblas import dispatch

    model, _, _ = models.build(name, torch.bfloat16, "cuda")
    prompt = torch.randint(0, model.config.vocab_size, (1, 64), device="cuda")

    def tokens(k: int):
        return decode_ms(model, prompt, k)

    with torch.inference_mode():
        for label, ctx in (("torch", None), ("ours", tritonblas.enable)):
            for _ in range(2):
                if ctx is None:
                    ms = tokens(16)
                else:
                    with ctx():
                        dispatch.reset_stats()
                        ms = tokens(16)
                        st = dispatch.stats()
            print(f"decode {name} {label}: {ms:.3f} ms/token" + (f" stats {st}" if ctx else ""))
        # two hypotheses for the warm call costing more inside a model than alone: Python's cyclic GC
        # (our keys allocate tuples; a model holds many objects) and TMA descriptors re-encoded for
        # activation addresses the per-operand cache (16) has not seen
        import gc

        from tritonblas import _fastlaunch

        misses = [0, 0]
        orig_expand = _fastlaunch.RawLauncher.expand

        def counting_expand(self, pos, ptr):
            misses[1] += 1
            if ptr not in self.cache[pos]:
                misses[0] += 1
            return orig_expand(self, pos, ptr)

        with tritonblas.enable():
            gc.disable()
            try:
                tokens(4)
                ms_nogc = tokens(16)
            finally:
                gc.enable()
            _fastlaunch.RawLauncher.expand = counting_expand
            try:
                tokens(16)
            finally:
                _fastlaunch.RawLauncher.expand = orig_expand
        print(f"decode {name} ours with gc disabled: {ms_nogc:.3f} ms/token; TMA descriptor expansions "
              f"over 17 tokens: {misses[1]}, of which cache misses (re-encoded): {misses[0]}")
        with tritonblas.enable():
            pr = cProfile.Profile()
            pr.enable()
            tokens(8)
            pr.disable()
        pstats.Stats(pr).sort_stats("tottime").print_stats(30)


def inmodel_split(name: str, iters: int = 10, rounds: int = 7) -> None:
    """Where a routed GEMM's host time goes *inside* a model's inference forward (prefill): per GEMM
    call, the whole call (outermost timer, as models.py's shim), the C launch alone
    (``RawLauncher.__call__``), the output allocation, and the rest (our Python); the TMA descriptor
    expansions and how many were re-encoded (cache misses); the step's wall time for torch, ours,
    and ours with Python's cyclic GC off. The question: why a warm call that costs about what torch's
    does in a loop costs 1.3-2x torch's inside a model."""
    import gc

    import torch

    import models
    import tritonblas
    from tritonblas import _fastlaunch, fastpath

    model, inputs, _ = models.build(name, torch.bfloat16, "cuda")
    kw = inputs("prefill")

    def step():
        with torch.inference_mode():
            return models.model_forward(model, kw)

    def wall(k: int = iters) -> float:
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(k):
            step()
        torch.cuda.synchronize()
        return (time.perf_counter() - t0) / k * 1e3

    for _ in range(3):
        step()
    with tritonblas.enable():
        for _ in range(3):
            step()

    def falling_through():
        """enable() on a GPU it has no profile for (what a user of an unknown GPU gets): every GPU's
        device -> profile answer set to "none" after the caches are dropped, so each GEMM reaches its
        wrapper, is refused by the route once per signature (then by the hot path's memory of refusals)
        and runs torch's own function. Afterwards the caches are dropped again and the ours side is
        warmed up (3 untimed steps) before the next round."""
        from tritonblas import _device

        tritonblas.clear_caches()
        _device.HAS_PROFILE.update({i: False for i in range(torch.cuda.device_count())})
        try:
            with tritonblas.enable():
                step()  # the refusals are recorded on the first call of each signature, as in a model's first step
                return wall()
        finally:
            tritonblas.clear_caches()  # (drops HAS_PROFILE too)
            with tritonblas.enable():
                for _ in range(3):
                    step()

    res = {"torch": [], "ours": [], "ours gc off": [], "enable(), all falling through": []}
    for _ in range(rounds):  # alternating, medians; the ratios are paired per round (machine drift cancels)
        res["torch"].append(wall())
        with tritonblas.enable():
            res["ours"].append(wall())
            gc.disable()
            try:
                res["ours gc off"].append(wall())
            finally:
                gc.enable()
        res["enable(), all falling through"].append(falling_through())
    acc = {"launch_ns": 0, "launches": 0, "empty_ns": 0, "empties": 0, "expand": 0, "miss": 0}
    orig_call, orig_expand, orig_empty = _fastlaunch.RawLauncher.__call__, _fastlaunch.RawLauncher.expand, fastpath._new_empty

    def t_call(self, grid0, stream, args):
        t0 = time.perf_counter_ns()
        orig_call(self, grid0, stream, args)
        acc["launch_ns"] += time.perf_counter_ns() - t0
        acc["launches"] += 1

    def t_expand(self, pos, ptr):
        acc["expand"] += 1
        acc["miss"] += ptr not in self.cache[pos]
        return orig_expand(self, pos, ptr)

    def t_empty(*a, **k):
        t0 = time.perf_counter_ns()
        r = orig_empty(*a, **k)
        acc["empty_ns"] += time.perf_counter_ns() - t0
        acc["empties"] += 1
        return r

    shims = {}
    for label, on in (("torch", False), ("ours", True)):
        ctx = tritonblas.enable() if on else None
        if ctx:
            ctx.__enter__()
        try:
            with models.GemmShim() as shim:
                if on:
                    _fastlaunch.RawLauncher.__call__, _fastlaunch.RawLauncher.expand = t_call, t_expand
                    fastpath._new_empty = t_empty
                try:
                    wall(iters)
                finally:
                    _fastlaunch.RawLauncher.__call__, _fastlaunch.RawLauncher.expand = orig_call, orig_expand
                    fastpath._new_empty = orig_empty
            shims[label] = (shim.ns / 1e3 / max(1, shim.calls), shim.calls // iters)
        finally:
            if ctx:
                ctx.__exit__(None, None, None)
    med = {k: statistics.median(v) for k, v in res.items()}
    paired = {k: statistics.median(x / t for x, t in zip(v, res["torch"])) for k, v in res.items() if k != "torch"}
    n = max(1, acc["launches"])
    print(f"in-model split, {name} prefill (bf16, {iters} iterations, medians of {rounds} alternating runs):")
    print("  step ms: " + ", ".join(f"{k} {v:.3f}" for k, v in med.items()))
    print(f"  step time / torch's, median of {rounds} paired rounds: " +
          ", ".join(f"{k} {v:.4f}" for k, v in paired.items()))
    print(f"  GEMM calls per step: {shims['ours'][1]}; host us per GEMM call (outermost timer): "
          f"torch {shims['torch'][0]:.1f}, ours {shims['ours'][0]:.1f}")
    print(f"  ours per raw launch: C launch {acc['launch_ns'] / n / 1e3:.1f} us over {acc['launches']} launches; "
          f"output allocation {acc['empty_ns'] / max(1, acc['empties']) / 1e3:.1f} us; "
          f"TMA descriptor expansions {acc['expand']}, re-encoded {acc['miss']}")


def train_split(name: str, iters: int = 3, rounds: int = 5) -> None:
    """Where a training step's time goes under ``enable()`` against torch (forward to the loss and
    backward, each timed to a device sync, no optimizer): per side the forward and backward wall
    ms (medians of ``rounds`` alternating rounds), the host us per forward GEMM call (outermost
    timer, as models.py's shim) and the part of it inside our autograd Function's forward; then
    the dispatcher's counters for one step (``triton_launches``: warm launches through Triton's
    own launcher), the TMA descriptor re-encodes, and a cProfile of one step of ours. The question:
    models.py's training rows put ours at 124 us of host time per forward GEMM against torch's
    46 us (dc4724c), and the backward's host time at 40 ms against 24."""
    import cProfile
    import pstats

    import torch

    import models
    import tritonblas
    from tritonblas import _fastlaunch, dispatch, fastpath

    model, inputs, _ = models.build(name, torch.bfloat16, "cuda")
    model.train()
    kw = inputs("train")

    def fwd():
        return models.model_loss(model, kw, models.model_forward(model, kw))

    def split() -> tuple:
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        loss = fwd()
        torch.cuda.synchronize()
        t1 = time.perf_counter()
        loss.backward()
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        model.zero_grad(set_to_none=True)
        return (t1 - t0) * 1e3, (t2 - t1) * 1e3

    for _ in range(2):
        split()
    with tritonblas.enable():
        for _ in range(2):
            split()
    def side(label: str):
        return tritonblas.enable() if label == "ours" else contextlib.nullcontext()

    res = {"torch": [], "ours": []}
    for r in range(rounds):
        for label in ("torch", "ours") if r % 2 == 0 else ("ours", "torch"):
            with side(label):
                res[label] += [split() for _ in range(iters)]
    for label, v in res.items():
        print(f"train split {name} {label}: forward {statistics.median(x[0] for x in v):.3f} ms, "
              f"backward {statistics.median(x[1] for x in v):.3f} ms")
    inner = {"ns": 0, "n": 0, "miss": 0}
    orig_run = fastpath._linear_warm  # the warm body the autograd Function runs

    def timed_run(hit, x, w, bias):
        t0 = time.perf_counter_ns()
        r = orig_run(hit, x, w, bias)
        inner["ns"] += time.perf_counter_ns() - t0
        inner["n"] += 1
        inner["miss"] += r is None
        return r

    for label in ("torch", "ours"):
        with side(label):
            with models.GemmShim() as shim:
                fastpath._linear_warm = timed_run
                try:
                    loss = fwd()
                    torch.cuda.synchronize()
                finally:
                    fastpath._linear_warm = orig_run
            loss.backward()
            model.zero_grad(set_to_none=True)
        print(f"  {label}: {shim.calls} forward GEMM calls, host us per call {shim.ns / 1e3 / max(1, shim.calls):.1f}"
              + (f"; warm forward runs {inner['n']} ({inner['miss']} missed), us inside {inner['ns'] / 1e3 / max(1, inner['n']):.1f}"
                 if label == "ours" else ""))
    exp = {"n": 0, "miss": 0}
    orig_expand = _fastlaunch.RawLauncher.expand

    def t_expand(self, pos, ptr):
        exp["n"] += 1
        exp["miss"] += ptr not in self.cache[pos]
        return orig_expand(self, pos, ptr)

    with tritonblas.enable():
        dispatch.reset_stats()
        _fastlaunch.RawLauncher.expand = t_expand
        try:
            split()
        finally:
            _fastlaunch.RawLauncher.expand = orig_expand
        print(f"  ours, one step: stats {dispatch.stats()}; TMA descriptor expansions {exp['n']}, re-encoded {exp['miss']}")
        pr = cProfile.Profile()
        pr.enable()
        split()
        pr.disable()
    st = pstats.Stats(pr)
    st.sort_stats("tottime").print_stats(28)
    st.sort_stats("cumulative").print_callees(r"fastpath.py:\d+\((forward|linear|linear_hot|_linear_warm)\)")


def gpu_gaps(events: list, tokens: int) -> dict:
    """What a chrome trace (torch.profiler's ``export_chrome_trace`` events) says about the GPU's time,
    per token: kernels, busy and idle time, and the *queued* gaps — idle time before a kernel that was
    already launched (its runtime call ended) before the previous kernel finished, so no host delay
    can explain it (a GPU-side cost between two kernels: e.g. a shared-memory carveout change).
    Queued gaps are split by the (previous, next) kernel families ("triton" for our kernels — names
    starting ``gemm_`` or ``triton`` —, "other" for torch's). Pure; tests/benchmarks/test_host_linear.py."""
    kernels = sorted((e for e in events if e.get("cat") == "kernel" and e.get("ph") == "X"), key=lambda e: e["ts"])
    launched = {}
    for e in events:
        if e.get("cat") in ("cuda_runtime", "cuda_driver") and e.get("ph") == "X" and "correlation" in e.get("args", {}):
            launched[e["args"]["correlation"]] = e["ts"] + e.get("dur", 0.0)

    def family(e) -> str:
        name = e.get("name", "")
        return "triton" if name.startswith(("gemm_", "triton")) else "other"

    busy = sum(e["dur"] for e in kernels)
    span = (kernels[-1]["ts"] + kernels[-1]["dur"] - kernels[0]["ts"]) if kernels else 0.0
    queued: dict[str, list] = {}
    idle = 0.0
    for prev, nxt in zip(kernels, kernels[1:]):
        end = prev["ts"] + prev["dur"]
        gap = nxt["ts"] - end
        if gap <= 0:
            continue
        idle += gap
        t_launch = launched.get(nxt.get("args", {}).get("correlation"))
        if t_launch is not None and t_launch <= end:
            key = f"{family(prev)}->{family(nxt)}"
            queued.setdefault(key, []).append(gap)
    n = max(1, tokens)
    return {"kernels_per_token": len(kernels) / n, "busy_us_per_token": busy / n, "idle_us_per_token": idle / n,
            "span_us_per_token": span / n,
            "queued_gaps": {k: {"count_per_token": len(v) / n, "us_per_token": sum(v) / n,
                                "median_us": statistics.median(v)} for k, v in sorted(queued.items())}}


def decode_timeline(name: str, tokens: int = 4, out: "Path | None" = None) -> None:
    """torch.profiler timeline of ``tokens`` eager decode tokens (DynamicCache, batch 1) with torch and
    under enable(): per token, wall time, kernels, GPU busy / idle time and the queued gaps
    (:func:`gpu_gaps`). The question: is the eager-decode gap that the GEMM calls' host time does not
    explain (session 8: 0.36 of 1.54 ms/token) GPU-side time between kernels?"""
    import json
    import tempfile

    import torch
    from torch.profiler import ProfilerActivity, profile

    import models
    import tritonblas

    model, _, _ = models.build(name, torch.bfloat16, "cuda")
    prompt = torch.randint(0, model.config.vocab_size, (1, 64), device="cuda")

    def run(k: int, prof=None) -> float:
        return decode_ms(model, prompt, k, prof)

    with torch.inference_mode():
        for side in ("torch", "ours"):
            ctx = tritonblas.enable() if side == "ours" else None
            if ctx:
                ctx.__enter__()
            try:
                run(4)
                wall = statistics.median(run(8) for _ in range(3))
                prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
                run(tokens, prof)
            finally:
                if ctx:
                    ctx.__exit__(None, None, None)
            with tempfile.TemporaryDirectory() as d:
                path = Path(d) / f"{side}.json"
                prof.export_chrome_trace(str(path))
                events = json.loads(path.read_text())["traceEvents"]
                if out is not None:
                    out.mkdir(parents=True, exist_ok=True)
                    (out / f"decode_timeline_{name}_{side}.json").write_text(path.read_text())
            g = gpu_gaps(events, tokens)
            print(f"decode timeline {name} {side}: wall {wall:.3f} ms/token (unprofiled); per token: "
                  f"{g['kernels_per_token']:.0f} kernels, GPU busy {g['busy_us_per_token']:.0f} us, "
                  f"idle {g['idle_us_per_token']:.0f} us, span {g['span_us_per_token']:.0f} us")
            for k, v in g["queued_gaps"].items():
                print(f"    queued gaps {k:16}: {v['count_per_token']:.1f}/token, {v['us_per_token']:.1f} us/token, "
                      f"median {v['median_us']:.2f} us")


if __name__ == "__main__":
    sys.exit(main())

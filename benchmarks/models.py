"""End-to-end benchmark on real model code: torch alone vs ``with tritonblas.enable():``, one process.

Models (``transformers`` and ``timm``, random weights, nothing downloaded): decoder LLMs with Llama-3-8B,
Qwen2.5-7B and Llama-3.2-1B dimensions (fewer layers), BERT-large, ViT-L/16 and a DLRM-style MLP with
irregular widths. Modes:

- ``prefill``      inference forward of a batch of prompts (logits / hidden states / class scores);
- ``decode``       greedy decoding with a KV cache (eager, DynamicCache): ms per generated token;
- ``decode_graph`` a decode-sized step (batch 1, one token, no KV context: the decode GEMMs at M = 1)
  captured in a ``torch.cuda.graph``, replayed;
- ``decode_compile`` the same step under ``torch.compile(mode="reduce-overhead")`` (CUDA graphs);
- ``train``        forward, backward and an AdamW step;
- ``compile``      ``torch.compile`` (default mode) inference forward.

Per row: ``model, mode, dtype, torch_ms, ours_ms, speedup`` (torch_ms / ours_ms), ``speedup_q1``/``speedup_q3``
(the quartiles of the per-repetition paired ratios: :func:`paired_spread`), GEMM and non-GEMM GPU
time of each (torch.profiler, one profiled iteration each), host µs per GEMM call of each (a timing
shim around the GEMM entry points, outermost, the same for both), peak GPU memory of each
(``torch.cuda.max_memory_allocated`` over the timed iterations: workspaces, staging buffers and cached
plans count), routed calls and fallbacks per iteration, and the error of each against a float32 copy
of the same model with torch's GEMMs (relative Frobenius error of the outputs, and in ``train`` of all
parameter gradients as one vector), with ``parity`` = ours ≤ 2 × torch's + 1e-4, in ``train`` for the whole
gradient and for each parameter's (:func:`_parity`). Timing: the same run, torch and ours alternating
(ABAB...), ``--reps`` repetitions each, medians of wall time per iteration with a device sync (eager
host cost counts, as a user sees it); CUDA-graph modes time the replays.

    PYTHONPATH=$PWD python3 benchmarks/models.py --out benchmarks/results/models_h200.csv [--models ...] [--modes ...]
    python3 benchmarks/models.py --plot benchmarks/results/models_h200.csv   # -> models_h200.png

``--gluon`` adds a third side in the same alternation: ``enable()`` with ``TRITONBLAS_GLUON=1``
(the experimental warp-specialised kernel on the GEMMs it takes, ``dispatch.gluon_eligible``), in
the ``gluon_*`` columns (``gluon_speedup`` = torch_ms / gluon_ms), so torch, origami's picks and the
Gluon kernel are timed in one run (before: two runs, one per setting, each against its own torch).

``--aten`` adds the side ``aten``: ``enable()`` with ``TRITONBLAS_AUTOGRAD=aten`` (GEMMs under autograd on our
kernels below torch's C++ autograd, :mod:`tritonblas.below_autograd`, instead of our Python autograd
Function), in the ``aten_*`` columns, in the same alternation (for the train rows: its no_grad paths are ours).

``--eager GFLOP`` adds the side ``eager``: ``enable()`` with ``TRITONBLAS_EAGER_MIN_GFLOP=GFLOP`` (eager GEMMs
under it run torch's op, :func:`tritonblas.fastpath.small_eager`; session 23's experiment), in the ``eager_*``
columns, in the same alternation (``eager_gflop`` records the threshold). ``--grad GFLOP`` adds the side ``grad``:
``enable()`` with ``TRITONBLAS_GRAD_MIN_GFLOP=GFLOP`` (:func:`tritonblas.fastpath.small_grad`; ``0`` is the drop-in
without that rule, the ``ours`` side its default), in the ``grad_*`` columns (``grad_gflop``). ``--aligned`` adds the
side ``aligned``: ``enable()`` with ``TRITONBLAS_VENDOR_ALIGNED=1`` (aligned bf16/fp16 GEMMs, decode-sized
ones included, run torch's op, :func:`tritonblas.handover.vendor_aligned`), in the ``aligned_*`` columns. On an NVIDIA GPU that
rule is the default, so the side repeats ``ours`` unless the process runs with ``TRITONBLAS_VENDOR_ALIGNED=0``
(``ours`` then has the rule off; the provenance line ``tritonblas_env`` records it).

``--versus`` adds the side ``versus``: ``enable()`` with the tile table :mod:`tritonblas.versus`
measures in the same process for the problems the ``ours`` side planned (every GEMM the workload ran
through tritonblas, backward included): each problem timed with our pick and with ``torch.matmul``,
a :data:`~tritonblas.tables.VENDOR` entry where ours is not 2% faster; columns ``versus_*``,
``vendor_entries`` / ``versus_problems`` (entries / problems measured). For prefill, train and
decode_graph. ``--versus-table TABLE.json`` gives the ``versus`` side that tile table instead of measuring
one, in every mode (e.g. benchmarks/decode_probe.py's best measured tile per decode GEMM: what a decode step
gains if every GEMM ran its fastest recorded config); ``versus_problems`` is then the table's entries.

``build(name, dtype, device, tiny=True)`` gives the tests the same model classes at toy sizes.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import math
import os
import re
import statistics
import subprocess
import sys
import time
import traceback
from dataclasses import asdict, dataclass, fields
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

MODELS = ("llama3-8b", "qwen2.5-7b", "llama3.2-1b", "gpt2-medium", "bert-large", "vit-l16", "dlrm-mlp")
LLMS = ("llama3-8b", "qwen2.5-7b", "llama3.2-1b", "gpt2-medium")  # gpt2: Conv1D, torch.addmm instead of F.linear
MODES = ("prefill", "decode", "decode_graph", "decode_compile", "train", "compile")
GEMM_KERNEL = re.compile(r"gemm|gemv|nvjet|cutlass|xmma|cublas|splitk|sm90_|sm80_|ampere_|hopper", re.I)


# --- models ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Spec:
    """A workload's model and input sizes (``tiny`` ones for CPU tests under the interpreter)."""

    name: str
    batch: int
    seq: int = 0
    layers: int = 0
    decode_prompt: int = 128
    decode_tokens: int = 32


def llm_config(name: str, tiny: bool):
    import transformers as tf

    if name == "gpt2-medium":  # GPT-2 medium's dimensions, all 24 layers
        return (tf.GPT2Config(n_embd=64, n_layer=2, n_head=4, vocab_size=128, n_positions=256) if tiny else
                tf.GPT2Config(n_embd=1024, n_layer=24, n_head=16, vocab_size=50257, n_positions=1024))
    if tiny:
        cls = tf.Qwen2Config if name.startswith("qwen") else tf.LlamaConfig
        return cls(hidden_size=64, intermediate_size=96, num_attention_heads=4, num_key_value_heads=2,
                   num_hidden_layers=2, vocab_size=128, max_position_embeddings=256, tie_word_embeddings=False)
    if name == "llama3-8b":
        return tf.LlamaConfig(hidden_size=4096, intermediate_size=14336, num_attention_heads=32, num_key_value_heads=8,
                              num_hidden_layers=4, vocab_size=128256, max_position_embeddings=8192,
                              rope_theta=500000.0, tie_word_embeddings=False)
    if name == "qwen2.5-7b":
        return tf.Qwen2Config(hidden_size=3584, intermediate_size=18944, num_attention_heads=28, num_key_value_heads=4,
                              num_hidden_layers=4, vocab_size=152064, max_position_embeddings=8192,
                              rope_theta=1000000.0, tie_word_embeddings=False)
    if name == "llama3.2-1b":
        return tf.LlamaConfig(hidden_size=2048, intermediate_size=8192, num_attention_heads=32, num_key_value_heads=8,
                              num_hidden_layers=8, vocab_size=128256, max_position_embeddings=8192,
                              rope_theta=500000.0, tie_word_embeddings=True)
    raise ValueError(f"model: unknown LLM {name!r}")


def _dlrm(tiny: bool):
    import torch.nn as nn

    # DLRM-style: bottom MLP over dense features, top MLP over the interaction vector; odd widths
    widths = (13, 24, 40, 17, 1) if tiny else (1000, 1057, 479, 1024, 3333, 256, 1)
    layers: list = []
    for i, (a, b) in enumerate(zip(widths, widths[1:])):
        layers.append(nn.Linear(a, b))
        if i < len(widths) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def build(name: str, dtype, device, *, tiny: bool = False):
    """(model, inputs(mode) -> kwargs or tensor, spec) for ``name`` in ``dtype`` on ``device``,
    random weights (seed 0)."""
    import torch

    torch.manual_seed(0)
    if name in LLMS:
        import transformers as tf

        cfg = llm_config(name, tiny)
        cfg._attn_implementation = "sdpa"
        model = tf.AutoModelForCausalLM.from_config(cfg, dtype=dtype)
        spec = Spec(name, batch=2 if tiny else 4, seq=8 if tiny else 512, decode_prompt=6 if tiny else 128,
                    decode_tokens=3 if tiny else 32)
        vocab = cfg.vocab_size
    elif name == "bert-large":
        import transformers as tf

        cfg = (tf.BertConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=96,
                             vocab_size=128, max_position_embeddings=64) if tiny else
               tf.BertConfig(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096))
        cfg._attn_implementation = "sdpa"
        model = tf.BertModel(cfg).to(dtype)
        spec = Spec(name, batch=2 if tiny else 8, seq=8 if tiny else 512)
        vocab = cfg.vocab_size
    elif name == "vit-l16":
        if tiny:
            import transformers as tf

            cfg = tf.ViTConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=96,
                               image_size=32, patch_size=8, num_labels=10)
            model = tf.ViTForImageClassification(cfg).to(dtype)
        else:
            import timm

            model = timm.create_model("vit_large_patch16_224", pretrained=False).to(dtype)
        spec = Spec(name, batch=2 if tiny else 64, seq=32 if tiny else 224)
        vocab = 0
    elif name == "dlrm-mlp":
        model = _dlrm(tiny).to(dtype)
        spec = Spec(name, batch=6 if tiny else 16384)
        vocab = 0
    else:
        raise ValueError(f"model: unknown {name!r} (known: {', '.join(MODELS)})")
    model = model.to(device).eval()  # no dropout: both sides compute the same function

    def inputs(mode: str):
        g = torch.Generator(device="cpu").manual_seed(1)
        if name in LLMS or name == "bert-large":
            ids = torch.randint(0, vocab, (spec.batch, spec.seq), generator=g).to(device)
            return {"input_ids": ids}
        if name == "vit-l16":
            x = torch.randn(spec.batch, 3, spec.seq, spec.seq, generator=g).to(device, dtype)
            return {"pixel_values": x} if tiny else {"x": x}
        return {"input": torch.randn(spec.batch, 1000 if not tiny else 13, generator=g).to(device, dtype)}

    return model, inputs, spec


def model_forward(model, kw: dict):
    if "x" in kw:
        return model(kw["x"])
    if "input" in kw:
        return model(kw["input"])
    return model(**kw)


def primary_output(out):
    """The tensor to compare: logits / last hidden state / the output itself."""
    if hasattr(out, "logits") and out.logits is not None:
        return out.logits
    if hasattr(out, "last_hidden_state"):
        return out.last_hidden_state
    return out


def model_loss(model, kw: dict, out):
    import torch

    t = primary_output(out).float()
    if "input_ids" in kw and t.dim() == 3 and hasattr(out, "logits"):
        ids = kw["input_ids"]
        return torch.nn.functional.cross_entropy(t[:, :-1].reshape(-1, t.shape[-1]), ids[:, 1:].reshape(-1))
    return t.pow(2).mean()


# --- measurement helpers -----------------------------------------------------------------------
class GemmShim:
    """Counts and times (host, perf_counter) every call of torch's GEMM entry points; installed
    outermost (after ``enable()``'s wrappers), so torch's and our calls are timed the same way. ``nn.Linear``'s
    forward is one of them (under ``enable()`` it calls no ``F.linear`` for a call it hands to torch): its calls are
    timed whole, attribute reads included, on both sides."""

    NAMES = (("torch.nn.functional", "linear"), ("torch", "matmul"), ("torch", "mm"), ("torch", "bmm"),
             ("torch", "addmm"), ("torch", "baddbmm"), ("torch.Tensor", "__matmul__"), ("torch.Tensor", "matmul"),
             ("torch.nn.Linear", "forward"))

    def __init__(self):
        self.calls = 0
        self.ns = 0
        self.depth = 0  # > 0 inside a timed call: nested GEMM calls are part of it
        self.saved = []

    def __enter__(self):
        import importlib

        import torch

        classes = {"torch.Tensor": torch.Tensor, "torch.nn.Linear": torch.nn.Linear}
        for mod, name in self.NAMES:
            owner = classes.get(mod) or importlib.import_module(mod)
            orig = getattr(owner, name)
            own = name in vars(owner)
            self.saved.append((owner, name, own, orig))
            setattr(owner, name, self._wrap(orig, owner, name))
        return self

    def _wrap(self, orig, owner=None, name=None):
        """The timed stand-in for ``owner.name`` (``orig``); subclasses may record what is called."""
        shim = self

        def timed(*args, **kwargs):
            if shim.depth:
                return orig(*args, **kwargs)
            shim.depth += 1
            t0 = time.perf_counter_ns()
            try:
                return orig(*args, **kwargs)
            finally:
                shim.ns += time.perf_counter_ns() - t0
                shim.calls += 1
                shim.depth -= 1

        return timed

    def __exit__(self, *exc):
        while self.saved:
            owner, name, own, orig = self.saved.pop()
            if own:
                setattr(owner, name, orig)
            else:
                delattr(owner, name)


def _sync():
    import torch

    torch.cuda.synchronize()


def _gpu_split(fn) -> tuple[float, float]:
    """(GEMM kernel ms, other kernel ms) of one call of ``fn`` under torch.profiler."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    _sync()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        _sync()
    gemm = other = 0.0
    by: dict = {}
    for e in prof.events():
        if e.device_type != torch.autograd.DeviceType.CUDA:
            continue
        us = e.device_time if hasattr(e, "device_time") else e.cuda_time
        if GEMM_KERNEL.search(e.name or ""):
            gemm += us
        else:
            other += us
        n, t = by.get(e.name, (0, 0.0))
        by[e.name] = (n + 1, t + us)
    top = sorted(by.items(), key=lambda kv: -kv[1][1])[:8]
    for name, (n, t) in top:
        print(f"    kernel {t / 1e3:8.3f} ms {n:5d}x  {name[:110]}")
    return gemm / 1e3, other / 1e3


def backward_host_ms(events) -> float:
    """Host ms the autograd engine spent evaluating backward nodes (the CPU total of every
    ``autograd::engine::evaluate_function: ...`` event of a CPU profile; the events do not nest).
    The non-GEMM nodes of one model are the same on both sides, so the difference between torch's
    and ours is what the GEMMs' backward costs the host (the timing shim sees forward calls only)."""
    return sum(e.cpu_time_total for e in events if e.name.startswith("autograd::engine::evaluate_function:")) / 1e3


def _backward_split(side: "Side", step) -> float:
    from torch.profiler import ProfilerActivity, profile

    with side.ctx():
        _sync()
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            step()
            _sync()
    return backward_host_ms(prof.events())


def _rel(x, ref) -> float:
    import torch

    x, ref = x.double(), ref.double()
    den = torch.linalg.vector_norm(ref).item()
    return torch.linalg.vector_norm(x - ref).item() / max(den, 1e-30)


# --- one workload ------------------------------------------------------------------------------
@dataclass
class Row:
    model: str
    mode: str
    dtype: str
    torch_ms: float = math.nan
    ours_ms: float = math.nan
    speedup: float = math.nan
    speedup_q1: float = math.nan  # quartiles of the per-repetition paired ratios (paired_spread)
    speedup_q3: float = math.nan
    torch_gemm_gpu_ms: float = math.nan
    ours_gemm_gpu_ms: float = math.nan
    torch_other_gpu_ms: float = math.nan
    ours_other_gpu_ms: float = math.nan
    torch_host_us_per_gemm: float = math.nan
    ours_host_us_per_gemm: float = math.nan
    torch_bwd_host_ms: float = math.nan
    ours_bwd_host_ms: float = math.nan
    gemm_calls: int = 0
    fast_hits: int = 0
    torch_peak_mb: float = math.nan
    ours_peak_mb: float = math.nan
    routed: int = 0
    fallbacks: int = 0
    torch_err: float = math.nan
    ours_err: float = math.nan
    gluon_ms: float = math.nan
    gluon_speedup: float = math.nan
    gluon_gemm_gpu_ms: float = math.nan
    gluon_other_gpu_ms: float = math.nan
    gluon_host_us_per_gemm: float = math.nan
    gluon_bwd_host_ms: float = math.nan
    gluon_peak_mb: float = math.nan
    gluon_err: float = math.nan
    aten_ms: float = math.nan
    aten_speedup: float = math.nan
    aten_gemm_gpu_ms: float = math.nan
    aten_other_gpu_ms: float = math.nan
    aten_host_us_per_gemm: float = math.nan
    aten_bwd_host_ms: float = math.nan
    aten_peak_mb: float = math.nan
    aten_err: float = math.nan
    eager_ms: float = math.nan
    eager_speedup: float = math.nan
    eager_gemm_gpu_ms: float = math.nan
    eager_other_gpu_ms: float = math.nan
    eager_host_us_per_gemm: float = math.nan
    eager_bwd_host_ms: float = math.nan
    eager_peak_mb: float = math.nan
    eager_err: float = math.nan
    eager_gflop: float = math.nan
    grad_ms: float = math.nan
    grad_speedup: float = math.nan
    grad_gemm_gpu_ms: float = math.nan
    grad_other_gpu_ms: float = math.nan
    grad_host_us_per_gemm: float = math.nan
    grad_bwd_host_ms: float = math.nan
    grad_peak_mb: float = math.nan
    grad_err: float = math.nan
    grad_gflop: float = math.nan
    aligned_ms: float = math.nan
    aligned_speedup: float = math.nan
    aligned_gemm_gpu_ms: float = math.nan
    aligned_other_gpu_ms: float = math.nan
    aligned_host_us_per_gemm: float = math.nan
    aligned_bwd_host_ms: float = math.nan
    aligned_peak_mb: float = math.nan
    aligned_err: float = math.nan
    front_ms: float = math.nan
    front_speedup: float = math.nan
    front_gemm_gpu_ms: float = math.nan
    front_other_gpu_ms: float = math.nan
    front_host_us_per_gemm: float = math.nan
    front_bwd_host_ms: float = math.nan
    front_peak_mb: float = math.nan
    front_err: float = math.nan
    versus_ms: float = math.nan
    versus_speedup: float = math.nan
    versus_gemm_gpu_ms: float = math.nan
    versus_other_gpu_ms: float = math.nan
    versus_host_us_per_gemm: float = math.nan
    versus_bwd_host_ms: float = math.nan
    versus_peak_mb: float = math.nan
    versus_err: float = math.nan
    vendor_entries: int = -1
    versus_problems: int = -1
    parity: str = ""
    shape: str = ""
    reps: int = 0
    error: str = ""


FIELDS = tuple(f.name for f in fields(Row))  # the CSV's columns, in Row's order


class Side:
    """One side of a comparison: ``ctx()`` enters torch-alone or tritonblas routing, with ``env``
    (environment variables, e.g. ``TRITONBLAS_GLUON=1``) set inside and restored after."""

    def __init__(self, name: str, profile=None, env: dict | None = None, table=None):
        self.name = name
        self.profile = profile
        self.env = dict(env or {})
        self.table = table  # a tritonblas tile table active inside the side's block (None: none)

    def ctx(self):
        if self.name == "torch":
            return contextlib.nullcontext()
        import tritonblas

        stack = contextlib.ExitStack()
        stack.enter_context(environ(self.env))
        if self.table is not None:
            stack.enter_context(_table(self.table))
        stack.enter_context(tritonblas.enable(self.profile))
        return stack


@contextlib.contextmanager
def _table(table):
    """``table`` the active tile table for the block, the previous one restored after."""
    from tritonblas import tables

    old = tables.explicit_table()
    tables.set_table(table)
    try:
        yield
    finally:
        tables.set_table(old)


@contextlib.contextmanager
def environ(env: dict):
    """``env`` set in os.environ for the block (a value of None: the variable unset), each variable as it was
    (set or not) after. Also benchmarks/host_linear.py's."""
    old = {k: os.environ.get(k) for k in env}
    for k, v in env.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def parse_job(spec: str) -> tuple[str, str, str]:
    """``MODEL:MODE:DTYPE`` of ``--jobs`` as a tuple; a ValueError naming the job and what it may be otherwise
    (checked before any GPU work: a misspelt mode used to fail in each workload's own process, after its build)."""
    parts = spec.split(":")
    if len(parts) != 3:
        raise ValueError(f"--jobs {spec!r}: expected MODEL:MODE:DTYPE")
    model, mode, dtype = parts
    for what, value, allowed in (("model", model, MODELS), ("mode", mode, MODES), ("dtype", dtype, ("bf16", "fp16"))):
        if value not in allowed:
            raise ValueError(f"--jobs {spec!r}: unknown {what} {value!r} (one of {', '.join(allowed)})")
    if mode.startswith("decode") and model not in LLMS:
        raise ValueError(f"--jobs {spec!r}: mode {mode} is for the decoder LLMs ({', '.join(LLMS)})")
    return model, mode, dtype


def make_sides(gluon: bool, aten: bool = False, eager: float | None = None, grad: float | None = None,
               aligned: bool = False, front: bool = False) -> dict:
    """torch, ours (origami's picks) and, with ``gluon``, ours with TRITONBLAS_GLUON=1; with ``aten``, ours
    with TRITONBLAS_AUTOGRAD=aten; with ``eager`` (GFLOP), ours with TRITONBLAS_EAGER_MIN_GFLOP=eager; with
    ``grad`` (GFLOP), ours with TRITONBLAS_GRAD_MIN_GFLOP=grad; with ``aligned``, ours with
    TRITONBLAS_VENDOR_ALIGNED=1; with ``front``, ours with TRITONBLAS_LINEAR_FORWARD=0 (nn.Linear's calls meet
    F.linear's wrapper and its front, the hand-over before session 41)."""
    from tritonblas import settings

    sides = {"torch": Side("torch"), "ours": Side("ours")}
    if gluon:
        sides["gluon"] = Side("gluon", env={settings.ENV_GLUON: "1"})
    if aten:
        sides["aten"] = Side("aten", env={settings.ENV_AUTOGRAD: "aten"})
    if eager is not None:
        sides["eager"] = Side("eager", env={settings.ENV_EAGER_MIN_GFLOP: f"{eager:g}"})
    if grad is not None:
        sides["grad"] = Side("grad", env={settings.ENV_GRAD_MIN_GFLOP: f"{grad:g}"})
    if aligned:
        sides["aligned"] = Side("aligned", env={settings.ENV_VENDOR_ALIGNED: "1"})
    if front:
        sides["front"] = Side("front", env={settings.ENV_LINEAR_FORWARD: "0"})
    return sides


def paired_spread(base_ms: list, side_ms: list) -> tuple[float, float]:
    """The lower and upper quartile of the per-repetition ratios ``base_ms[r] / side_ms[r]`` (a speedup: the two
    sides' times of one rotation round of :func:`timeit_sides`, run back to back); NaN for both under 4 pairs.
    Why: a host-bound row's run-to-run spread (±5-8% on the H100's eager decode, sessions 40-41) exceeds the
    effects measured on it, and the quartiles of the paired ratios say within one run how far its ratio of medians
    can be trusted."""
    if len(base_ms) != len(side_ms):
        raise ValueError(f"paired_spread: {len(base_ms)} base times against {len(side_ms)} side times")
    if len(base_ms) < 4:
        return math.nan, math.nan
    q1, _, q3 = statistics.quantiles([b / s for b, s in zip(base_ms, side_ms)], n=4, method="inclusive")
    return q1, q3


def timeit_sides(step_by_side: dict, reps: int) -> dict:
    """Interleaved timing of each side's ``step()`` (wall ms with a device sync): per side (median ms, peak MiB over
    its repetitions, every repetition's ms in order). Repetition r runs the sides in their order rotated by r, so
    every side takes every position equally often (two sides: ABAB)."""
    import torch

    times = {k: [] for k in step_by_side}
    peaks = {k: 0 for k in step_by_side}
    order = list(step_by_side)
    for r in range(reps):
        shift = r % len(order)
        for k in order[shift:] + order[:shift]:
            side, step = step_by_side[k]
            with side.ctx():
                _sync()
                torch.cuda.reset_peak_memory_stats()
                t0 = time.perf_counter()
                step()
                _sync()
                times[k].append((time.perf_counter() - t0) * 1e3)
                peaks[k] = max(peaks[k], torch.cuda.max_memory_allocated())
    return {k: (statistics.median(v), peaks[k] / 2**20, v) for k, v in times.items()}


def _profile_side(side: Side, step) -> tuple:
    """(gemm gpu ms, other gpu ms, host us per gemm call, gemm calls, routed, fallbacks, warm hits) of one step."""
    from tritonblas import dispatch

    print(f"  profile of {side.name}:")
    with side.ctx():
        g, o = _gpu_split(step)
        dispatch.reset_stats()
        with GemmShim() as shim:
            step()
            _sync()
        st = dispatch.stats()
    if st["routed"]:  # what reached our kernels, named (session 39 had to deduce the rotary matmul from a count)
        planned = dispatch.planned_problems()
        named = "; ".join(p.describe() for p in planned[:16]) + (" ..." if len(planned) > 16 else "")
        print(f"    routed {st['routed']} calls ({st['fast_hits']} served warm); problems planned so far "
              f"({len(planned)}): {named}")
    per = shim.ns / 1e3 / shim.calls if shim.calls else math.nan
    return g, o, per, shim.calls, st["routed"], st["fallbacks"], st["fast_hits"]


def _build_steps(name, mode, model, inputs, spec, sides):
    if mode in ("prefill", "compile"):
        return _infer_steps(model, inputs, sides, compiled=(mode == "compile"))
    if mode == "train":
        return _train_steps(name, model, inputs, sides)
    if mode.startswith("decode"):
        if name not in LLMS:
            raise ValueError(f"mode {mode}: only for decoder LLMs")
        return _decode_steps(model, inputs, spec, sides, mode)
    raise ValueError(f"mode: unknown {mode!r}")


def _versus_side(row: Row, table_path: str | None = None) -> "Side":
    """The ``versus`` side: the table tritonblas.versus measures for what the ``ours`` side planned, or the
    tile table file ``table_path`` (loaded strictly: a stale or foreign table is an error, not an empty side)."""
    from tritonblas import dispatch, tables, versus

    if table_path is not None:
        table = tables.load_table(table_path, strict=True)
        entries = dict(table.entries)
        row.vendor_entries = sum(v is tables.VENDOR for v in entries.values())
        row.versus_problems = len(entries)
        print(f"  versus: the table {table_path}, {len(entries)} entries", flush=True)
        return Side("versus", table=table)
    problems = dispatch.planned_problems()
    t0 = time.time()
    table, measured = versus.measure_table(problems)
    row.vendor_entries, row.versus_problems = len(table), sum(m.ours_ms is not None for m in measured)
    for m in measured:
        print(f"  versus {m.problem.describe()}: ours {m.ours_ms} torch {m.torch_ms} -> "
              f"{'torch' if m.vendor else 'ours'} {m.note}", flush=True)
    print(f"  versus: {row.vendor_entries} VENDOR entries of {row.versus_problems} problems measured "
          f"({time.time() - t0:.1f} s)", flush=True)
    return Side("versus", table=table)


def run_workload(name: str, mode: str, dtype_name: str, reps: int, device: str = "cuda", gluon: bool = False,
                 versus: bool = False, aten: bool = False, eager: float | None = None,
                 grad: float | None = None, aligned: bool = False, versus_table: str | None = None,
                 front: bool = False) -> Row:
    import torch

    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}[dtype_name]
    row = Row(name, mode, dtype_name, reps=reps)
    sides = make_sides(gluon, aten, eager, grad, aligned, front)
    if eager is not None:
        row.eager_gflop = eager
    if grad is not None:
        row.grad_gflop = grad
    model, inputs, spec = build(name, dtype, device)
    try:
        steps, ref_out, outs = _build_steps(name, mode, model, inputs, spec, sides)
        if mode.startswith("decode"):
            row.shape = (f"batch 1 prompt {spec.decode_prompt} tokens {spec.decode_tokens}" if mode == "decode"
                         else "batch 1, one token, no KV context")
        else:
            row.shape = _shape_of(inputs(mode))
        if versus_table or (versus and mode in ("prefill", "train", "decode_graph")):
            vs = {"versus": _versus_side(row, versus_table)}
            model.to(device)  # _train_steps left the original on the CPU
            v_steps, _, v_outs = _build_steps(name, mode, model, inputs, spec, vs)
            sides.update(vs)
            steps.update(v_steps)
            if outs is not None and v_outs is not None:
                outs.update(v_outs)
        timed = timeit_sides(steps, reps)
        for k in sides:
            setattr(row, f"{k}_ms", timed[k][0])
            setattr(row, f"{k}_peak_mb", timed[k][1])
        row.speedup = row.torch_ms / row.ours_ms
        row.speedup_q1, row.speedup_q3 = paired_spread(timed["torch"][2], timed["ours"][2])
        for k in sides:
            if k not in ("torch", "ours"):  # gluon, aten, eager, grad, aligned, front, versus
                setattr(row, f"{k}_speedup", row.torch_ms / getattr(row, f"{k}_ms"))
        for k in sides:
            g, o, per, calls, routed, fb, hits = _profile_side(*steps[k])
            setattr(row, f"{k}_gemm_gpu_ms", g)
            setattr(row, f"{k}_other_gpu_ms", o)
            setattr(row, f"{k}_host_us_per_gemm", per)
            if mode == "train":
                setattr(row, f"{k}_bwd_host_ms", _backward_split(*steps[k]))
            if k == "ours":
                row.gemm_calls, row.routed, row.fallbacks, row.fast_hits = calls, routed, fb, hits
        if ref_out is not None:
            for k in sides:
                setattr(row, f"{k}_err", _err(outs[k], ref_out))
            # every routed side within the bound (all(): a NaN error on any side fails, which max() can drop)
            ok = all(_parity(outs[k], outs["torch"], ref_out) for k in sides if k != "torch")
            row.parity = "ok" if ok else "FAIL"
    except Exception as e:  # noqa: BLE001 - one workload's failure is a row, not the end of the run
        row.error = f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"
        traceback.print_exc()
    finally:
        del model
        torch.cuda.empty_cache()
        torch._dynamo.reset()
    return row


def _shape_of(kw: dict) -> str:
    return " ".join(f"{k}{tuple(v.shape)}" for k, v in kw.items())


def _norms(out, ref) -> list[tuple[float, float]]:
    """Per tensor of a list (``out``, ``ref`` paired): (‖out − ref‖, ‖ref‖) in float64."""
    import torch

    return [(float(torch.linalg.vector_norm(o.double() - r.double())), float(torch.linalg.vector_norm(r.double())))
            for o, r in zip(out, ref)]


def _whole(norms) -> float:
    """The relative error of tensors' :func:`_norms` taken as one vector."""
    return math.sqrt(sum(d * d for d, _ in norms)) / max(math.sqrt(sum(r * r for _, r in norms)), 1e-30)


def _err(out, ref) -> float:
    """Relative Frobenius error of ``out`` against ``ref`` (RELIABILITY.md's aggregate check); for a list (a
    training step's parameter gradients) of all of them as one vector. Why not the worst parameter's own
    relative error: a gradient that is zero in exact arithmetic makes that ratio roundoff over roundoff
    (BERT's attention key bias, whose gradient softmax's shift invariance cancels: 5e-19 in the fp32
    reference against 2e-10 in bf16 on the tiny twin, 2.7e7 on bert-large for torch and for ours alike)."""
    return _whole(_norms(out, ref)) if isinstance(out, (list, tuple)) else _rel(out, ref)


# per-parameter parity: a gradient's error is taken relative to at least this share of the whole gradient's norm
GRAD_FLOOR = 1e-3


def _parity(out, base, ref) -> bool:
    """Whether ``out`` is within RELIABILITY.md's parity of ``base`` (torch's result on the same inputs), both
    against ``ref``: error <= 2 x torch's + 1e-4. For a list of gradients, the whole vector's error and each
    parameter's, the latter relative to max(its reference norm, GRAD_FLOOR x the whole reference's norm), so a
    wrong small parameter fails the row while a gradient that is zero in exact arithmetic cannot. NaN fails."""
    def ok(e, b):
        return e <= 2 * b + 1e-4  # False for a NaN e

    if not isinstance(out, (list, tuple)):
        return ok(_rel(out, ref), _rel(base, ref))
    mine, theirs = _norms(out, ref), _norms(base, ref)
    if not ok(_whole(mine), _whole(theirs)):
        return False
    floor = GRAD_FLOOR * math.sqrt(sum(r * r for _, r in mine))
    return all(ok(d / max(r, floor, 1e-30), db / max(r, floor, 1e-30)) for (d, r), (db, _) in zip(mine, theirs))


def _fp32_copy(model):
    import copy

    import torch

    return copy.deepcopy(model).to(torch.float32)


def _infer_steps(model, inputs, sides, compiled: bool):
    import torch

    kw = inputs("prefill")
    ref = None
    with torch.inference_mode():
        m32 = _fp32_copy(model)
        kw32 = {k: (v.float() if v.is_floating_point() else v) for k, v in kw.items()}
        ref = primary_output(model_forward(m32, kw32)).float()
        del m32
    torch.cuda.empty_cache()
    outs = {}
    steps = {}
    for k, side in sides.items():
        fn = torch.compile(model) if compiled else model

        def step(fn=fn):
            with torch.inference_mode():
                return model_forward(fn, kw)

        with side.ctx():
            for _ in range(3):  # warm-up: plans, compiles, autotune caches
                out = step()
            outs[k] = primary_output(out).float()
        steps[k] = (side, step)
    return steps, ref, outs


def _train_steps(name, model, inputs, sides):
    import copy

    import torch

    kw = inputs("train")
    # the reference: one fp32 forward/backward from the same initial weights
    m32 = _fp32_copy(model)
    kw32 = {k: (v.float() if v.is_floating_point() else v) for k, v in kw.items()}
    model_loss(m32, kw32, model_forward(m32, kw32)).backward()
    ref = [p.grad.float() for p in m32.parameters() if p.grad is not None]
    del m32
    torch.cuda.empty_cache()
    outs, steps = {}, {}
    for k, side in sides.items():
        m = copy.deepcopy(model)
        m.train()
        with side.ctx():
            model_loss(m, kw, model_forward(m, kw)).backward()
            outs[k] = [p.grad.float().clone() for p in m.parameters() if p.grad is not None]
        m.zero_grad(set_to_none=True)
        opt = torch.optim.AdamW(m.parameters(), lr=1e-5, foreach=True)

        def step(m=m, opt=opt):
            loss = model_loss(m, kw, model_forward(m, kw))
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)

        with side.ctx():
            for _ in range(2):
                step()
        steps[k] = (side, step)
    model.to("cpu")  # the two training copies hold their own weights
    return steps, ref, outs


def _decode_steps(model, inputs, spec, sides, mode):
    import torch
    import transformers as tf

    g = torch.Generator(device="cpu").manual_seed(2)
    dev = next(model.parameters()).device
    prompt = torch.randint(0, model.config.vocab_size, (1, spec.decode_prompt), generator=g).to(dev)
    steps, outs = {}, {}
    if mode == "decode":
        def make(side):
            def step():
                with torch.inference_mode():
                    cache = tf.DynamicCache(config=model.config)
                    out = model(input_ids=prompt, past_key_values=cache, use_cache=True)
                    tok = out.logits[:, -1:].argmax(-1)
                    toks = [tok]
                    for _ in range(spec.decode_tokens - 1):
                        out = model(input_ids=tok, past_key_values=cache, use_cache=True)
                        tok = out.logits[:, -1:].argmax(-1)
                        toks.append(tok)
                    return torch.cat(toks, 1)
            return step

        for k, side in sides.items():
            step = make(side)
            with side.ctx():
                outs[k] = step()
                step()
            steps[k] = (side, step)
        # greedy tokens: report agreement as the error (fraction of differing tokens)
        agree = (outs["torch"] == outs["ours"]).float().mean().item()
        print(f"  decode: torch and ours agree on {agree:.3f} of the greedy tokens")
        return steps, None, outs

    # one decode-sized step (batch 1, one token, no KV context: the GEMMs of a decode step, M = 1)
    # captured in a CUDA graph or compiled with reduce-overhead. (A StaticCache step hit an
    # index_copy_ bounds assert under capture with transformers 5.17, 2026-12-01.)
    tok = torch.randint(0, model.config.vocab_size, (1, 1), generator=g).to(dev)
    for k, side in sides.items():
        with side.ctx(), torch.inference_mode():
            if mode == "decode_compile":
                fwd = torch.compile(model.forward, mode="reduce-overhead")

                def step(fwd=fwd):
                    with torch.inference_mode():
                        return fwd(input_ids=tok, use_cache=False).logits

                for _ in range(4):
                    out = step()
                outs[k] = out.float().clone()
                steps[k] = (side, step)
            else:
                for _ in range(2):
                    model(input_ids=tok, use_cache=False)
                _sync()
                g_ = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g_):
                    static = model(input_ids=tok, use_cache=False).logits

                def step(g_=g_):
                    g_.replay()

                step()
                _sync()
                outs[k] = static.float().clone()
                steps[k] = (side, step)
    ref = None
    with torch.inference_mode():
        m32 = _fp32_copy(model)
        ref = m32(input_ids=tok, use_cache=False).logits.float()
        del m32
    return steps, ref, outs


# --- run / csv / plot ---------------------------------------------------------------------------
def provenance() -> dict:
    from _harness import provenance as run_provenance

    versions = {}
    for mod in ("transformers", "timm"):
        try:
            versions[mod] = __import__(mod).__version__
        except ImportError:
            versions[mod] = "none"
    from tritonblas import settings  # the switches that change what "ours" runs, when set

    switches = " ".join(f"{k}={os.environ[k]}" for k in settings.ALL if k.startswith("TRITONBLAS_") and k in os.environ)
    return run_provenance(short_sha=True, **versions, tritonblas_env=switches or "none")


def write_rows(path: Path, rows: list, prov: dict) -> None:
    """Atomic write: header comment lines with provenance, then the CSV (``_harness.write_csv``)."""
    from _harness import write_csv

    write_csv(path, [asdict(r) for r in rows], FIELDS, prov, digits=4)


def read_rows(path: Path) -> list[dict]:
    with open(path) as fh:
        return list(csv.DictReader(line for line in fh if not line.startswith("#")))


def _quartiles(r: dict) -> str:
    """A row's paired-ratio quartiles as ``q1-q3`` (``-`` where the row has none: under 4 reps, or a CSV before the
    columns)."""
    q1, q3 = r.get("speedup_q1"), r.get("speedup_q3")
    if q1 in (None, "", "nan") or q3 in (None, "", "nan"):
        return "-"
    return f"{float(q1):.3f}-{float(q3):.3f}"


def summary(rows: list[dict]) -> str:
    ok = [r for r in rows if not r["error"] and r["speedup"] not in ("", "nan")]
    lines = [f"{'model':12} {'mode':15} {'dtype':5} {'torch_ms':>9} {'ours_ms':>9} {'x':>6} {'x q1-q3':>13} {'gemm t/o':>13} "
             f"{'other t/o':>13} {'host us t/o':>12} {'peak MB t/o':>15} {'err t/o':>17}"]
    for r in rows:
        if r["error"]:
            lines.append(f"{r['model']:12} {r['mode']:15} {r['dtype']:5} ERROR {r['error'][:90]}")
            continue
        lines.append(f"{r['model']:12} {r['mode']:15} {r['dtype']:5} {float(r['torch_ms']):9.3f} {float(r['ours_ms']):9.3f} "
                     f"{float(r['speedup']):6.3f} {_quartiles(r):>13} {float(r['torch_gemm_gpu_ms']):6.2f}/{float(r['ours_gemm_gpu_ms']):<6.2f} "
                     f"{float(r['torch_other_gpu_ms']):6.2f}/{float(r['ours_other_gpu_ms']):<6.2f} "
                     f"{float(r['torch_host_us_per_gemm']):5.1f}/{float(r['ours_host_us_per_gemm']):<6.1f} "
                     f"{float(r['torch_peak_mb']):7.0f}/{float(r['ours_peak_mb']):<7.0f} "
                     f"{r['torch_err']}/{r['ours_err']} {r['parity']}"
                     + (f"  backward host ms {float(r['torch_bwd_host_ms']):.2f}/{float(r['ours_bwd_host_ms']):.2f}"
                        if r.get("torch_bwd_host_ms") not in (None, "", "nan") else "")
                     + (f"  gluon {float(r['gluon_ms']):.3f} ms x{float(r['gluon_speedup']):.3f} "
                        f"gemm {float(r['gluon_gemm_gpu_ms']):.2f} host us {float(r['gluon_host_us_per_gemm']):.1f}"
                        if r.get("gluon_ms") not in (None, "", "nan") else "")
                     + (f"  aten {float(r['aten_ms']):.3f} ms x{float(r['aten_speedup']):.3f} "
                        f"host us {float(r['aten_host_us_per_gemm']):.1f}"
                        + (f" backward host ms {float(r['aten_bwd_host_ms']):.2f}"
                           if r.get("aten_bwd_host_ms") not in (None, "", "nan") else "")
                        if r.get("aten_ms") not in (None, "", "nan") else "")
                     + (f"  eager<{float(r['eager_gflop']):g}GF {float(r['eager_ms']):.3f} ms x{float(r['eager_speedup']):.3f} "
                        f"host us {float(r['eager_host_us_per_gemm']):.1f}"
                        if r.get("eager_ms") not in (None, "", "nan") else "")
                     + (f"  grad<{float(r['grad_gflop']):g}GF {float(r['grad_ms']):.3f} ms x{float(r['grad_speedup']):.3f} "
                        f"host us {float(r['grad_host_us_per_gemm']):.1f}"
                        if r.get("grad_ms") not in (None, "", "nan") else "")
                     + (f"  aligned {float(r['aligned_ms']):.3f} ms x{float(r['aligned_speedup']):.3f} "
                        f"gemm {float(r['aligned_gemm_gpu_ms']):.2f} host us {float(r['aligned_host_us_per_gemm']):.1f}"
                        if r.get("aligned_ms") not in (None, "", "nan") else "")
                     + (f"  front {float(r['front_ms']):.3f} ms x{float(r['front_speedup']):.3f} "
                        f"host us {float(r['front_host_us_per_gemm']):.1f}"
                        if r.get("front_ms") not in (None, "", "nan") else ""))
    if ok:
        gm = math.exp(statistics.fmean(math.log(float(r["speedup"])) for r in ok))
        lines.append(f"geomean speedup over {len(ok)} workloads: {gm:.3f}; min {min(float(r['speedup']) for r in ok):.3f}")
        for side, label in (("gluon", "with TRITONBLAS_GLUON=1:"), ("aten", "with TRITONBLAS_AUTOGRAD=aten:"),
                            ("eager", "with TRITONBLAS_EAGER_MIN_GFLOP:"),
                            ("grad", "with the grad side's TRITONBLAS_GRAD_MIN_GFLOP:"),
                            ("aligned", "with TRITONBLAS_VENDOR_ALIGNED=1:"),
                            ("front", "with TRITONBLAS_LINEAR_FORWARD=0:")):
            xs = [float(r[f"{side}_speedup"]) for r in ok if r.get(f"{side}_speedup") not in (None, "", "nan")]
            if xs:
                lines.append(f"{label} geomean {math.exp(statistics.fmean(math.log(x) for x in xs)):.3f} "
                             f"over {len(xs)}; min {min(xs):.3f}")
    return "\n".join(lines)


def _header(path: Path) -> dict:
    out = {}
    with open(path) as fh:
        for line in fh:
            if not line.startswith("#"):
                break
            k, _, v = line[1:].strip().partition(":")
            out[k.strip()] = v.strip()
    return out


def merge(paths: list, out: Path) -> None:
    """One CSV from several runs: per (model, mode, dtype) the newest run's row unless it is an error
    row and an older run measured it; a ``git_sha`` column says which run each row is from (an input that is
    itself a merge keeps its rows' own)."""
    best: dict = {}
    provs = []
    for p in paths:
        prov = _header(p)
        provs.append(prov)
        for r in read_rows(p):
            key = (r["model"], r["mode"], r["dtype"])
            # a merged input keeps each row's own run (its git_sha and date columns)
            r = {**r, "git_sha": r.get("git_sha") or prov.get("git_sha", "unknown"),
                 "date": r.get("date") or prov.get("date", "")}
            if key not in best or not r["error"] or best[key]["error"]:
                best[key] = r
    import io

    from tritonblas.tables import AtomicFile

    fh = io.StringIO()
    fh.write("# merged from: " + ", ".join(p.name for p in paths) + "\n")
    for k in ("gpu", "torch", "triton", "transformers", "timm", "python"):
        fh.write(f"# {k}: {provs[-1].get(k, '')}\n")
    w = csv.DictWriter(fh, fieldnames=(*FIELDS, "git_sha", "date"))
    w.writeheader()
    for r in best.values():
        w.writerow({k: r.get(k, "") for k in (*FIELDS, "git_sha", "date")})
    with AtomicFile(out) as f:
        f.write(fh.getvalue())


def recorded_gpu(path: Path) -> str:
    """The GPU a results CSV names in its provenance (``# gpu: ...``), or "an unnamed GPU"."""
    return _header(path).get("gpu") or "an unnamed GPU"


def plot(path: Path) -> Path:
    """A bar per workload of torch time / ours (blue at or above 1, vermillion below); where the run also timed
    the vendor-aligned side (``--aligned``), its ratio as a hatched grey bar beside it. Writes PATH.png."""
    import math

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in read_rows(path) if not r["error"]]
    labels = [f"{r['model']}\n{r['mode']} {r['dtype']}" + (f" @{r['git_sha']}" if r.get("git_sha") else "")
              for r in rows]
    sp = [float(r["speedup"]) for r in rows]
    al = [float(r.get("aligned_speedup") or "nan") for r in rows]
    paired = any(math.isfinite(a) for a in al)
    w = 0.4 if paired else 0.8
    x = [i - (w / 2 if paired else 0.0) for i in range(len(sp))]
    fig, ax = plt.subplots(figsize=(max(6, 0.55 * len(rows) + 2), 4.4))
    colours = ["#0072B2" if v >= 1 else "#D55E00" for v in sp]
    ax.bar(x, sp, width=w, color=colours, label="default")
    if paired:
        ax.bar([i + w / 2 for i in range(len(al))], [a if math.isfinite(a) else 0.0 for a in al], width=w,
               color="#999999", hatch="//", label="TRITONBLAS_VENDOR_ALIGNED=1")
        ax.legend(fontsize=7, loc="upper left")
    ax.axhline(1.0, color="black", lw=0.8)
    ax.set_xticks(range(len(sp)), labels, rotation=70, fontsize=7)
    ax.set_ylabel("torch time / tritonblas time")
    ax.set_title(f"Real models on {recorded_gpu(path)}\ntorch alone vs tritonblas.enable() ({path.name})", fontsize=9)
    fig.tight_layout()
    out = path.with_suffix(".png")
    fig.savefig(out, dpi=110)
    return out


def run_isolated(model: str, mode: str, dtype: str, reps: int, timeout_s: float, gluon: bool = False,
              versus: bool = False, aten: bool = False, eager: float | None = None, grad: float | None = None,
              aligned: bool = False, versus_table: str | None = None, front: bool = False) -> Row:
    """One workload in its own process: a device-side assert, a hang or a leak ends only its row."""
    import json

    cmd = [sys.executable, __file__, "--one", model, mode, dtype, "--reps", str(reps), *(["--gluon"] if gluon else []),
           *(["--versus"] if versus else []), *(["--aten"] if aten else []),
           *(["--eager", f"{eager:g}"] if eager is not None else []),
           *(["--grad", f"{grad:g}"] if grad is not None else []), *(["--aligned"] if aligned else []),
           *(["--versus-table", str(versus_table)] if versus_table else []), *(["--front"] if front else [])]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return Row(model, mode, dtype, reps=reps, error=f"timeout after {timeout_s:.0f} s")
    sys.stdout.write("".join(line + "\n" for line in p.stdout.splitlines()[-60:] if not line.startswith("ROW ")))
    sys.stderr.write(p.stderr[-3000:] if p.returncode or "Traceback" in p.stderr else "")
    for line in p.stdout.splitlines():
        if line.startswith("ROW "):
            return Row(**json.loads(line[4:]))
    tail = (p.stderr.strip().splitlines() or ["no output"])[-1]
    return Row(model, mode, dtype, reps=reps, error=f"process exited {p.returncode}: {tail[:300]}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    ap.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    ap.add_argument("--dtypes", nargs="+", default=["bf16"], choices=("bf16", "fp16"))
    ap.add_argument("--jobs", nargs="+", default=None, help="explicit MODEL:MODE:DTYPE list (overrides the above)")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--budget-s", type=float, default=1e9,
                    help="stop starting new workloads after this many seconds; a workload started at t s gets at most "
                         "budget - t + 30 s (at least 30) of its --job-timeout-s (CUDA-graph decode rows took over 90 s "
                         "on an H100)")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--plot", type=Path, default=None, help="draw the plot of an existing CSV and exit")
    ap.add_argument("--merge", nargs="+", type=Path, default=None, metavar="CSV",
                    help="combine run CSVs (oldest first) into --out: one row per workload, the newest run's "
                         "unless it is an error row, each with its run's git_sha")
    ap.add_argument("--one", nargs=3, metavar=("MODEL", "MODE", "DTYPE"), help=argparse.SUPPRESS)
    ap.add_argument("--job-timeout-s", type=float, default=240,
                    help="seconds one workload may run (its own process), capped by what --budget-s leaves")
    ap.add_argument("--gluon", action="store_true",
                    help="a third side: enable() with TRITONBLAS_GLUON=1 (the gluon_* columns), in the same alternation")
    ap.add_argument("--aten", action="store_true",
                    help="a side: enable() with TRITONBLAS_AUTOGRAD=aten (the aten_* columns), in the same alternation")
    ap.add_argument("--eager", type=float, default=None, metavar="GFLOP",
                    help="a side: enable() with TRITONBLAS_EAGER_MIN_GFLOP=GFLOP (eager GEMMs under it on torch's op; "
                         "the eager_* columns), in the same alternation")
    ap.add_argument("--grad", type=float, default=None, metavar="GFLOP",
                    help="a side: enable() with TRITONBLAS_GRAD_MIN_GFLOP=GFLOP (0: without the training rule; the "
                         "grad_* columns), in the same alternation")
    ap.add_argument("--aligned", action="store_true",
                    help="a side: enable() with TRITONBLAS_VENDOR_ALIGNED=1 (aligned bf16/fp16 GEMMs, decode-sized ones "
                         "included, on torch's op; the aligned_* columns), in the same alternation")
    ap.add_argument("--front", action="store_true",
                    help="a side: enable() with TRITONBLAS_LINEAR_FORWARD=0 (nn.Linear's calls through F.linear's "
                         "wrapper and its front; the front_* columns), in the same alternation")
    ap.add_argument("--versus", action="store_true",
                    help="a side with the ours-or-torch table tritonblas.versus measures (the versus_* columns)")
    ap.add_argument("--versus-table", default=None, metavar="TABLE.json",
                    help="the versus side with this tile table instead of measuring one, in every mode")
    args = ap.parse_args(argv)
    jobs = None
    if args.jobs:
        try:
            jobs = [parse_job(j) for j in args.jobs]
        except ValueError as e:
            ap.error(str(e))
    if args.versus_table and not Path(args.versus_table).is_file():
        ap.error(f"--versus-table {args.versus_table}: no such file")
    if args.merge:
        if args.out is None:
            ap.error("--merge needs --out")
        merge(args.merge, args.out)
        print(summary(read_rows(args.out)))
        return 0
    if args.one:
        import json

        r = run_workload(*args.one, args.reps, gluon=args.gluon, versus=args.versus, aten=args.aten, eager=args.eager,
                         grad=args.grad, aligned=args.aligned, versus_table=args.versus_table, front=args.front)
        print("ROW " + json.dumps(asdict(r)), flush=True)
        return 0
    if args.plot is not None:
        print(summary(read_rows(args.plot)))
        print("plot:", plot(args.plot))
        return 0
    import torch

    if not torch.cuda.is_available():
        print("models.py: needs a CUDA GPU (the tests run the same model classes at toy sizes on CPU)", file=sys.stderr)
        return 2
    if not jobs:
        jobs = [(m, mo, d) for d in args.dtypes for m in args.models for mo in args.modes
                if not (mo.startswith("decode") and m not in LLMS)]
    prov = provenance()
    print(prov)
    rows = []
    start = time.time()
    for (m, mo, d) in jobs:
        if time.time() - start > args.budget_s:
            print(f"budget reached: skipping {m} {mo} {d}")
            continue
        t0 = time.time()
        r = run_isolated(m, mo, d, args.reps, min(args.job_timeout_s, max(30.0, args.budget_s - (t0 - start) + 30)),
                      gluon=args.gluon, versus=args.versus, aten=args.aten, eager=args.eager, grad=args.grad,
                      aligned=args.aligned, versus_table=args.versus_table, front=args.front)
        rows.append(r)
        print(f"{m} {mo} {d}: torch {r.torch_ms:.3f} ms ours {r.ours_ms:.3f} ms x{r.speedup:.3f} "
              f"(paired q1-q3 {r.speedup_q1:.3f}-{r.speedup_q3:.3f}) "
              f"versus {r.versus_ms:.3f} ms x{r.versus_speedup:.3f} "
              + (f"front {r.front_ms:.3f} ms x{r.front_speedup:.3f} " if args.front else "")
              + f"({time.time() - t0:.0f} s) {r.error}", flush=True)
        if args.out:
            write_rows(args.out, rows, prov)
    print(summary([{k: (str(v) if not isinstance(v, float) else f"{v:.4g}") for k, v in asdict(r).items()}
                   for r in rows]))
    return 0


if __name__ == "__main__":
    sys.exit(main())

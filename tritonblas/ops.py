"""The PyTorch drop-in layer: ``matmul``, ``addmm``, ``bmm``, ``linear``, ``explain`` and ``enable()``.

Each public function checks its inputs the way torch does (the same exception type, ``RuntimeError``,
with a message naming the shapes, dtypes or devices), reduces the call to a GEMM on 2-D or batched
3-D operands with views only (batch broadcasting through stride-0 ``expand``; a copy only where
batch dims cannot be merged into one), and calls one of the custom ops below, which run
:func:`tritonblas.dispatch.gemm`:

- ``tritonblas::mm(Tensor a, Tensor b, str? profile, str? config) -> Tensor``
- ``tritonblas::addmm(Tensor c, Tensor a, Tensor b, float alpha, float beta, str? profile, str? config) -> Tensor``
- ``tritonblas::gemm_out(Tensor a, Tensor b, Tensor(a!) out, Tensor? c, float alpha, float beta, str? profile, str? config) -> ()``

They have fake (meta) implementations, so ``torch.compile(fullgraph=True)`` and ``opcheck`` see
through them, and autograd through ``register_autograd``: the backward is two GEMMs through the
same ops (only those whose inputs need a gradient); gradients of broadcast (expanded, stride-0)
inputs are summed by the ``expand`` that made them. ``profile`` is a profile name or path (or a
loaded profile, passed by its content hash); ``config`` a forced ``TileConfig`` as JSON. A forced
config applies to the forward GEMM only.

``out=`` follows torch: it works under ``no_grad`` (or when nothing requires grad) and raises
torch's ``RuntimeError`` when an argument requires grad; a wrong-shaped ``out`` is resized with
torch's warning, a wrong dtype or device raises.
"""

from __future__ import annotations

import dataclasses
import json
import math
import numbers
import operator
import os
import warnings
from functools import lru_cache
from typing import Any, NamedTuple, Optional

import torch
from origami.config import TileConfig
from origami.hardware import HardwareProfile, profile_by_hash
from tritonblas import _compat, dispatch, fastpath

__all__ = ["matmul", "addmm", "bmm", "baddbmm", "addbmm", "mv", "addmv", "linear", "explain", "clear_caches",
           "expands_to", "real_scalar", "scale_overflows"]

Tensor = torch.Tensor


# --- argument encoding for the custom ops ----------------------------------------------------
_PROFILES: dict[str, HardwareProfile] = {}  # "hash:<content hash>" → a profile passed as an object


def _profile_arg(profile: Any) -> Optional[str]:
    if profile is None:
        return None
    if isinstance(profile, HardwareProfile):
        if torch.compiler.is_compiling():  # no store while tracing; _profile_obj resolves the hash
            return f"hash:{profile.content_hash}"
        return _register_profile(profile)
    if isinstance(profile, (str, os.PathLike)):
        return os.fspath(profile)
    raise TypeError(f"profile: expected a profile name, a path or a HardwareProfile, got {type(profile).__name__}")


def _register_profile(profile: HardwareProfile) -> str:
    key = f"hash:{profile.content_hash}"
    _PROFILES[key] = profile
    return key


def _profile_obj(profile: Optional[str]) -> Any:
    """The profile a custom op's ``profile`` string names. A profile object passed while dynamo traced
    arrives as ``hash:<content hash>`` with no store behind it (a store while tracing is a side effect
    dynamo replays only after the graph, whose op had already looked the key up; and torch 2.11 cannot
    hand a frozen dataclass to ``assume_constant_result``, seen on the H200, 2026-12-01): origami knows
    every profile it built by hash (``origami.hardware.profile_by_hash``)."""
    if profile is not None and profile.startswith("hash:"):
        hit = _PROFILES.get(profile)
        if hit is None:
            hit = profile_by_hash(profile[5:])
        if hit is None:
            raise ValueError(f"profile: the HardwareProfile with content hash {profile[5:]} was not built by "
                             "origami (load_profile / calibrate); under torch.compile pass one of those, or its name")
        return hit
    return profile


@lru_cache(maxsize=256)
def _config_obj(text: str) -> TileConfig:
    return TileConfig.from_dict(json.loads(text))


_CONFIG_FIELDS = tuple(sorted(f.name for f in dataclasses.fields(TileConfig)))


def _config_text(config: TileConfig) -> str:
    """The JSON text of ``config.to_dict()`` (keys sorted), written out field by field. Dynamo traces
    this where it cannot trace ``json.dumps`` (its C encoder), and nothing here hands the frozen
    dataclass to ``assume_constant_result``, which torch 2.11 cannot ("can't reconstruct arbitrary
    frozen dataclass instances", seen on the H200, 2026-12-01): a ``config=`` call compiles with
    fullgraph=True on every torch we support. Fields are ints, None or the kind's name."""
    parts = []
    for name in _CONFIG_FIELDS:
        v = getattr(config, name)
        if name == "kind":
            text = '"' + v.value + '"'
        elif v is None:
            text = "null"
        else:
            text = str(operator.index(v))
        parts.append('"' + name + '": ' + text)
    return "{" + ", ".join(parts) + "}"


def _config_arg(config: Any) -> Optional[str]:
    if config is None:
        return None
    if not isinstance(config, TileConfig):
        raise TypeError(f"config: expected an origami.TileConfig, got {type(config).__name__}")
    return _config_text(config)


def _decode(profile: Optional[str], config: Optional[str]):
    return _profile_obj(profile), (None if config is None else _config_obj(config))


# --- the custom ops --------------------------------------------------------------------------
def _kernel_out_shape(a: Tensor, b: Tensor) -> list:
    if a.dim() == 2 and b.dim() == 2:
        return [a.shape[0], b.shape[1]]
    ba = a.shape[0] if a.dim() == 3 else 1
    bb = b.shape[0] if b.dim() == 3 else 1
    return [ba if bb == 1 else bb, a.shape[-2], b.shape[-1]]


@torch.library.custom_op("tritonblas::mm", mutates_args=())
def _mm(a: Tensor, b: Tensor, profile: Optional[str] = None, config: Optional[str] = None) -> Tensor:
    """a @ b for 2-D or 3-D operands (a size-1 or 2-D operand broadcasts over the batch)."""
    prof, cfg = _decode(profile, config)
    return dispatch.gemm(a, b, profile=prof, config=cfg, op="mm")


@_mm.register_fake
def _mm_fake(a, b, profile=None, config=None):
    return a.new_empty(_kernel_out_shape(a, b))


@torch.library.custom_op("tritonblas::addmm", mutates_args=())
def _addmm(c: Tensor, a: Tensor, b: Tensor, alpha: float = 1.0, beta: float = 1.0,
           profile: Optional[str] = None, config: Optional[str] = None) -> Tensor:
    """alpha·(a @ b) + beta·c, c broadcast to the result (ignored when beta = 0)."""
    prof, cfg = _decode(profile, config)
    return dispatch.gemm(a, b, c=c, alpha=alpha, beta=beta, profile=prof, config=cfg, op="addmm")


@_addmm.register_fake
def _addmm_fake(c, a, b, alpha=1.0, beta=1.0, profile=None, config=None):
    return a.new_empty(_kernel_out_shape(a, b))


@torch.library.custom_op("tritonblas::gemm_out", mutates_args=("out",))
def _gemm_out(a: Tensor, b: Tensor, out: Tensor, c: Optional[Tensor], alpha: float, beta: float,
              profile: Optional[str], config: Optional[str]) -> None:
    """out = alpha·(a @ b) + beta·c, written in place (the ``out=`` variants)."""
    prof, cfg = _decode(profile, config)
    dispatch.gemm(a, b, out, c=c, alpha=alpha, beta=beta, profile=prof, config=cfg, op="out")


@_gemm_out.register_fake
def _gemm_out_fake(a, b, out, c, alpha, beta, profile, config):
    return None


def _reduce_like(g: Tensor, x: Tensor) -> Tensor:
    """A batched gradient summed over the batch that ``x`` (2-D, or batch 1) was broadcast over."""
    if g.dim() > x.dim():
        return g.sum(0)
    if x.dim() == 3 and x.shape[0] == 1 and g.shape[0] != 1:
        return g.sum(0, keepdim=True)
    return g


def _mm_setup(ctx, inputs, output):
    a, b, profile, _ = inputs
    ctx.profile = profile
    ctx.save_for_backward(a, b)


def _grad_b(a: Tensor, grad: Tensor, b: Tensor, profile) -> Tensor:
    """dL/db = a.T @ grad, produced in b's layout: when b is a transposed view (e.g. ``w.t()`` of a
    row-major weight), as ``(grad.T @ a).T``, so the gradient reaches the weight without a copy."""
    if fastpath.transposed_view(b):
        return _reduce_like(torch.ops.tritonblas.mm(grad.mT, a, profile, None), b.mT).mT
    return _reduce_like(torch.ops.tritonblas.mm(a.mT, grad, profile, None), b)


def _mm_backward(ctx, grad):
    a, b = ctx.saved_tensors
    ga = gb = None
    if ctx.needs_input_grad[0]:
        ga = _reduce_like(torch.ops.tritonblas.mm(grad, b.mT, ctx.profile, None), a)
    if ctx.needs_input_grad[1]:
        gb = _grad_b(a, grad, b, ctx.profile)
    return ga, gb, None, None


_mm.register_autograd(_mm_backward, setup_context=_mm_setup)


def _addmm_setup(ctx, inputs, output):
    c, a, b, alpha, beta, profile, _ = inputs
    ctx.profile, ctx.alpha, ctx.beta, ctx.c_shape = profile, alpha, beta, c.shape
    ctx.save_for_backward(a, b)


def _addmm_backward(ctx, grad):
    a, b = ctx.saved_tensors
    gc = ga = gb = None
    if ctx.needs_input_grad[0]:
        gc = grad if ctx.beta == 1 else grad * ctx.beta
        gc = gc.sum_to_size(ctx.c_shape) if tuple(gc.shape) != tuple(ctx.c_shape) else gc
    if ctx.needs_input_grad[1]:
        ga = _reduce_like(torch.ops.tritonblas.mm(grad, b.mT, ctx.profile, None), a)
        ga = ga if ctx.alpha == 1 else ga * ctx.alpha
    if ctx.needs_input_grad[2]:
        gb = _grad_b(a, grad, b, ctx.profile)
        gb = gb if ctx.alpha == 1 else gb * ctx.alpha
    return gc, ga, gb, None, None, None, None


_addmm.register_autograd(_addmm_backward, setup_context=_addmm_setup)


# --- checks with torch's exception types -----------------------------------------------------
def _shape(t: Tensor) -> str:
    return str(tuple(t.shape))


_OPTIONAL = frozenset(("bias",))


def _check_tensors(name: str, **tensors: Any) -> None:
    """TypeError (torch's wording) for an argument that is not a Tensor; None only where optional."""
    for arg, t in tensors.items():
        if t is None and arg in _OPTIONAL:
            continue
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name}(): argument '{arg}' must be Tensor, not {type(t).__name__}")


def _check_same(name: str, **tensors: Tensor | None) -> None:
    """dtype and device of every given tensor equal the first's (RuntimeError naming both)."""
    items = [(k, t) for k, t in tensors.items() if t is not None]
    (k0, t0) = items[0]
    for k, t in items[1:]:
        if t.device != t0.device:
            raise RuntimeError(f"{name}(): expected all tensors to be on the same device, but {k0} "
                               f"{_shape(t0)} is on {t0.device} and {k} {_shape(t)} is on {t.device}")
    for k, t in items[1:]:
        if t.dtype != t0.dtype:
            raise RuntimeError(f"{name}(): expected {k0} and {k} to have the same dtype, but got "
                               f"{k0} {_shape(t0)} {t0.dtype} and {k} {_shape(t)} {t.dtype}")


def _broadcast(name: str, x: tuple, y: tuple, what: str) -> tuple:
    """torch's broadcasting of two shapes (pure Python, so torch.compile traces it)."""
    n = max(len(x), len(y))
    x, y = (1,) * (n - len(x)) + tuple(x), (1,) * (n - len(y)) + tuple(y)
    out = []
    for i, (p, q) in enumerate(zip(x, y)):
        if p != q and p != 1 and q != 1:
            raise RuntimeError(f"{name}(): {what} do not broadcast: {tuple(x)} and {tuple(y)} "
                               f"(size {p} vs {q} at dim {i})")
        out.append(q if p == 1 else p)
    return tuple(out)


def expands_to(shape: tuple, target: tuple) -> bool:
    """Whether a tensor of ``shape`` broadcasts to ``target`` (torch's rule, trailing dims)."""
    return _expands_to(shape, target)


def _expands_to(shape: tuple, target: tuple) -> bool:
    if len(shape) > len(target):
        return False
    return all(s == 1 or s == t for s, t in zip(reversed(tuple(shape)), reversed(tuple(target))))


def _mergeable(t: Tensor, start: int, end: int) -> bool:
    """Whether dims start..end-1 of t can be viewed as one dim (no copy)."""
    dims = [(t.shape[i], t.stride(i)) for i in range(start, end) if t.shape[i] != 1]
    return all(s0 == n1 * s1 for (_, s0), (n1, s1) in zip(dims, dims[1:]))


class _Views(NamedTuple):
    a: Tensor             # kernel-level A: (M, K) or (B, M, K)
    b: Tensor             # kernel-level B: (K, N) or (B, K, N)
    kernel_shape: tuple   # the kernel's output shape
    shape: tuple          # the user-visible result shape (a view of the kernel's output)


def _matmul_views(name: str, a: Tensor, b: Tensor) -> _Views:
    """torch.matmul's semantics as one 2-D or batched GEMM on views of a and b."""
    da, db = a.dim(), b.dim()
    if da == 0 or db == 0:
        raise RuntimeError(f"{name}(): both arguments need to be at least 1-D, but they are {da}-D "
                           f"{_shape(a)} and {db}-D {_shape(b)}")
    ka = a.shape[-1]
    kb = b.shape[0] if db == 1 else b.shape[-2]
    if ka != kb:
        raise RuntimeError(f"{name}(): shapes cannot be multiplied: a {_shape(a)} and b {_shape(b)} "
                           f"(a's last dim {ka} != b's {'only' if db == 1 else 'second-to-last'} dim {kb}); "
                           f"dtypes {a.dtype} and {b.dtype}")
    a2 = a.unsqueeze(0) if da == 1 else a
    b2 = b.unsqueeze(-1) if db == 1 else b
    m_dims = a.shape[-2:-1] if da >= 2 else ()
    n_dims = b.shape[-1:] if db >= 2 else ()
    if da <= 2 and db <= 2:
        return _Views(a2, b2, (a2.shape[0], b2.shape[1]), (*m_dims, *n_dims))
    n = b2.shape[-1]
    if db <= 2 and _mergeable(a, 0, da - 1):  # fold a's batch into M: one 2-D GEMM
        rows = math.prod(a.shape[:-1])
        return _Views(a.reshape(rows, ka), b2, (rows, n), (*a.shape[:-2], *m_dims, *n_dims))
    batch = _broadcast(name, a2.shape[:-2], b2.shape[:-2], "batch dims of a and b")
    bsz = math.prod(batch)
    m = a2.shape[-2]
    a3 = a2.expand(*batch, m, ka).reshape(bsz, m, ka)
    b3 = b2.expand(*batch, ka, n).reshape(bsz, ka, n)
    return _Views(a3, b3, (bsz, m, n), (*batch, *m_dims, *n_dims))


def _check_out(name: str, out: Tensor, shape: tuple, like: Tensor, *args: Tensor | None) -> None:
    if not isinstance(out, torch.Tensor):
        raise TypeError(f"{name}(): argument 'out' must be a Tensor, not {type(out).__name__}")
    if torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in (*args, out)):
        raise RuntimeError(f"{name}(): functions with out=... arguments don't support automatic "
                           "differentiation, but one of the arguments requires grad.")
    if _inference_outside(out):
        raise RuntimeError(f"{name}(): Inplace update to inference tensor outside InferenceMode is not allowed. "
                           f"You can make a clone to get a normal tensor before doing inplace update "
                           f"(out {_shape(out)} was created under torch.inference_mode())")
    if out.dtype != like.dtype:
        raise RuntimeError(f"{name}(): expected out tensor to have dtype {like.dtype}, but got {out.dtype} instead")
    if out.device != like.device:
        raise RuntimeError(f"{name}(): expected out tensor to be on {like.device}, but it is on {out.device}")
    if any(st == 0 and sz > 1 for st, sz in zip(out.stride(), out.shape)):
        raise RuntimeError(f"{name}(): unsupported operation: more than one element of the written-to tensor "
                           f"refers to a single memory location (out {_shape(out)} has strides {out.stride()})")
    if tuple(out.shape) != tuple(shape):
        if out.numel() != 0:
            warnings.warn(f"An output with one or more elements was resized since it had shape {list(out.shape)}, "
                          f"which does not match the required output shape {list(shape)}. This behavior is "
                          "deprecated, and in a future PyTorch release outputs will not be resized unless they "
                          "have zero elements. You can explicitly reuse an out tensor t by resizing it, inplace, "
                          "to zero elements with t.resize_(0).", UserWarning, stacklevel=3)
        out.resize_(shape)


def _inference_outside(out: Tensor) -> bool:
    """Whether ``out`` is an inference tensor written outside ``torch.inference_mode()`` (torch refuses
    that in-place update; dynamo cannot trace the query, and a traced graph has no inference tensors)."""
    if torch.compiler.is_dynamo_compiling():
        return False
    return out.is_inference() and not torch.is_inference_mode_enabled()


_PLAIN = (torch.Tensor, torch.nn.Parameter)
_is_compiling = torch.compiler.is_compiling
_grad_enabled = torch.is_grad_enabled


def _direct(*tensors: Tensor | None) -> bool:
    """Whether calling :func:`dispatch.gemm` directly gives exactly what the custom op would: no
    autograd to record (grad off, or no input requires grad) and :func:`fastpath.direct` (plain
    tensors, nothing intercepting ops). Otherwise the op runs through ``torch.ops.tritonblas``."""
    return not fastpath.needs_grad(*tensors) and fastpath.direct(*tensors)


def _warm_matmul(a: Tensor, b: Tensor, out: Tensor | None = None, config: Any = None) -> Tensor | None:
    """``matmul(a, b[, out=out][, config=config])`` when the dispatcher already holds a fast entry for
    exactly these operands (shapes, strides, dtypes, devices, alignment: see :func:`dispatch.fast_lookup`;
    the output and the forced config are part of that key) and the call may skip the custom op
    (:func:`_direct`); None otherwise. A fast entry for (a, b[, out]) exists only after a call with
    these very tensors as the kernel operands passed every check (the config's predicates
    included), and the kernel's output shape is then torch.matmul's (2-D @ 2-D, or 3-D with one
    batch), so the checks and the views would give the same launch again. An ``out`` that overlaps
    ``a`` or ``b`` goes the checked way (compute, then copy)."""
    if type(a) not in _PLAIN or type(b) not in _PLAIN or a.dtype is not b.dtype:
        return None
    if (config is not None and type(config) is not TileConfig) or (out is not None and (
            type(out) not in _PLAIN or _inference_outside(out))):
        return None  # (an inference-tensor out: the checked path raises torch's error)
    f = dispatch.fast_lookup(a, b, out, None, config)
    if f is None or not _direct(a, b, out):
        return None
    return dispatch.run_fast(f, a, b) if out is None else dispatch.run_fast_out(f, a, b, out)


def _check_out_overlap(name: str, out: Tensor, c: Tensor | None) -> None:
    """torch's error for an ``out`` that partly overlaps the accumulated input ``c`` (out being c
    itself, as in an in-place addmm, is allowed; an ``out`` sharing memory with a or b is computed
    into a temporary and copied by :func:`dispatch.gemm`)."""
    if c is None or torch.compiler.is_dynamo_compiling():
        return  # dynamo cannot trace storage pointers; the traced graph is functionalized (no aliasing left)
    if dispatch.overlap(out, c) == "partial":
        raise RuntimeError(f"{name}(): unsupported operation: some elements of the input tensor and the written-to "
                           "tensor refer to a single memory location. Please clone() the tensor before performing "
                           "the operation.")


def _run(name: str, v: _Views, out: Tensor | None, *, c: Tensor | None = None, alpha: float = 1.0,
         beta: float = 0.0, profile: Any = None, config: Any = None, grad_args: tuple = ()) -> Tensor:
    prof, cfg = _profile_arg(profile), _config_arg(config)
    if fastpath.forward_ad():  # forward-mode AD: torch's ops carry the tangents (our kernels drop them)
        if out is not None:
            _check_out(name, out, v.shape, v.a, *grad_args)
        r = dispatch.torch_gemm(v.a, v.b, None, c, alpha, beta).reshape(v.shape)
        return r if out is None else out.copy_(r)
    if out is None and _direct(v.a, v.b, c):  # the custom op's own implementation, minus the dispatcher
        p, k = _decode(prof, cfg)
        if c is None:
            r = dispatch.gemm(v.a, v.b, profile=p, config=k, op="mm")
        else:
            r = dispatch.gemm(v.a, v.b, c=c, alpha=float(alpha), beta=float(beta), profile=p, config=k, op="addmm")
        # not a view of the kernel-shaped buffer: a view made under no_grad refuses a later in-place op in grad mode
        return r if r.shape == v.shape else r.reshape(v.shape).detach()
    if out is None:
        if c is None:
            r = torch.ops.tritonblas.mm(v.a, v.b, prof, cfg)
        else:
            r = torch.ops.tritonblas.addmm(c, v.a, v.b, float(alpha), float(beta), prof, cfg)
        return r.reshape(v.shape)
    _check_out(name, out, v.shape, v.a, *grad_args)
    try:
        out_k = out.view(v.kernel_shape)
    except RuntimeError:  # not viewable as the kernel's output: compute, then copy
        out_k = None
    # c is kernel-level (addmv's (N,) input is an (N, 1) view): compare it with out's kernel-level view,
    # so ``addmv(c, a, v, out=c)`` is out being c, not a partial overlap
    _check_out_overlap(name, out if out_k is None else out_k, c if beta != 0 else None)
    if out_k is None:
        with torch.no_grad():
            r = _run(name, v, None, c=c, alpha=alpha, beta=beta, profile=profile, config=config)
        return out.copy_(r)
    if _direct(v.a, v.b, out_k, c):
        p, k = _decode(prof, cfg)
        version = None if out_k.is_inference() else out_k._version  # (an inference tensor has no counter)
        dispatch.gemm(v.a, v.b, out_k, c=c, alpha=float(alpha), beta=float(beta), profile=p, config=k, op="out")
        if version is None or out_k._version == version:  # our kernel wrote it (torch's ops count their own write)
            torch.autograd.graph.increment_version(out_k)  # what the op's ADInplaceOrView kernel does
    else:
        torch.ops.tritonblas.gemm_out(v.a, v.b, out_k, c, float(alpha), float(beta), prof, cfg)
    return out


# --- public API ------------------------------------------------------------------------------
def matmul(a: Tensor, b: Tensor, *, out: Tensor | None = None, config: TileConfig | None = None,
           profile: Any = None) -> Tensor:
    """``torch.matmul(a, b)`` on tritonblas kernels (1-D, 2-D and batched operands, with broadcasting).

    ``config`` forces a TileConfig (checked with the shared predicates: ``ValueError`` naming each
    violation); ``profile`` (a name or YAML path) overrides $TRITONBLAS_PROFILE and the device.
    Dtypes other than fp32/fp16/bf16, and CPU tensors outside the interpreter, run torch.matmul.
    """
    if profile is None and not _is_compiling():
        if out is None and config is None:
            r = fastpath.matmul(a, b)
            if r is fastpath.TORCH:  # a tile table's VENDOR entry: torch's own matmul
                return torch.matmul(a, b)
            if r is not None:
                return r
        r = _warm_matmul(a, b, out, config)
        if r is not None:
            return r
    _check_tensors("matmul", input=a, other=b)
    _check_same("matmul", a=a, b=b)
    v = _matmul_views("matmul", a, b)
    r = _run("matmul", v, out, profile=profile, config=config, grad_args=(a, b))
    if out is None and profile is None and config is None and _direct(a, b):
        fastpath.record_matmul(a, b, v.a, v.b)
    return r


def bmm(a: Tensor, b: Tensor, *, out: Tensor | None = None, config: TileConfig | None = None,
        profile: Any = None) -> Tensor:
    """``torch.bmm``: (B, M, K) @ (B, K, N), no broadcasting."""
    _check_tensors("bmm", input=a, mat2=b)
    if a.dim() != 3 or b.dim() != 3:
        raise RuntimeError(f"bmm(): expected 3-D tensors, got a {_shape(a)} and b {_shape(b)}")
    _check_same("bmm", a=a, b=b)
    if b.shape[0] != a.shape[0] or b.shape[1] != a.shape[2]:
        raise RuntimeError(f"bmm(): expected b's first two dims to be [{a.shape[0]}, {a.shape[2]}] for "
                           f"a {_shape(a)}, but b is {_shape(b)}")
    shape = (a.shape[0], a.shape[1], b.shape[2])
    return _run("bmm", _Views(a, b, shape, shape), out, profile=profile, config=config, grad_args=(a, b))


def real_scalar(x: Any) -> bool:
    """Whether ``x`` is what torch takes as a real ``alpha`` / ``beta`` (a Python or numpy real number,
    a bool, or a 0-D real tensor); a string, a list, None, a 1-element 1-D tensor, a tensor that requires
    grad (torch's argument parser refuses it, even under no_grad) or an int outside [-2^63, 2^64)
    (torch's OverflowError) is not."""
    if isinstance(x, torch.Tensor):
        return x.dim() == 0 and not x.is_complex() and not x.requires_grad
    if isinstance(x, int) and not _INT_MIN <= x < _INT_END:
        return False
    return isinstance(x, numbers.Real)


_INT_MIN, _INT_END = -(1 << 63), 1 << 64  # the ints torch's Scalar takes (int64, and uint64 above it)


def _scalar(name: str, arg: str, x: Any) -> float:
    if isinstance(x, complex) or (isinstance(x, torch.Tensor) and x.is_complex()):
        raise RuntimeError(f"{name}(): complex {arg}={x!r} is not supported for real tensors")
    if isinstance(x, int) and not _INT_MIN <= x < _INT_END:
        raise OverflowError(f"{name}(): argument '{arg}': int too big to convert ({x})")
    if isinstance(x, torch.Tensor) and x.requires_grad:
        raise TypeError(f"{name}(): argument '{arg}' must be a Number (or a 0-D tensor that does not require "
                        "grad), not a tensor that requires grad")
    if not real_scalar(x):
        raise TypeError(f"{name}(): argument '{arg}' must be a Number (or a 0-D tensor), not "
                        f"{type(x).__name__}{'' if not isinstance(x, torch.Tensor) else f' of shape {_shape(x)}'}")
    if scale_overflows(x):  # torch's own error: its kernels take alpha/beta as float
        raise RuntimeError(f"{name}(): value cannot be converted to type float without overflow: {arg}={x!r}")
    return float(x)


def scale_overflows(x: Any, dtype: torch.dtype = torch.float32) -> bool:
    """Whether a real alpha/beta ``x`` (:func:`real_scalar`) is finite but beyond the largest value of ``dtype``
    (float32: what torch converts alpha/beta to; an operand's type: what some of its paths convert to), where torch
    raises "value cannot be converted ... without overflow" and a kernel would compute with inf."""
    v = float(x)
    return math.isfinite(v) and abs(v) > torch.finfo(dtype).max


def addmm(c: Tensor, a: Tensor, b: Tensor, *, alpha: float = 1, beta: float = 1, out: Tensor | None = None,
          config: TileConfig | None = None, profile: Any = None) -> Tensor:
    """``torch.addmm(c, a, b, beta=beta, alpha=alpha)`` = beta·c + alpha·(a @ b), c broadcast to (M, N).

    With beta = 0, c is ignored (NaN or Inf in it do not propagate); with K = 0 the result is beta·c.
    """
    _check_tensors("addmm", input=c, mat1=a, mat2=b)
    for arg, t in (("a (mat1)", a), ("b (mat2)", b)):
        if t.dim() != 2:
            raise RuntimeError(f"addmm(): {arg} must be a matrix, got a {t.dim()}-D tensor of shape {_shape(t)}")
    _check_same("addmm", a=a, b=b, c=c)
    if a.shape[1] != b.shape[0]:
        raise RuntimeError(f"addmm(): shapes cannot be multiplied: a {_shape(a)} and b {_shape(b)}; "
                           f"dtypes {a.dtype} and {b.dtype}")
    shape = (a.shape[0], b.shape[1])
    if not _expands_to(tuple(c.shape), shape):
        raise RuntimeError(f"addmm(): c {_shape(c)} does not broadcast to the result {shape} of "
                           f"a {_shape(a)} @ b {_shape(b)}")
    alpha, beta = _scalar("addmm", "alpha", alpha), _scalar("addmm", "beta", beta)
    return _run("addmm", _Views(a, b, shape, shape), out, c=c, alpha=alpha, beta=beta, profile=profile,
                config=config, grad_args=(a, b, c))


def _check_batched(name: str, a: Tensor, b: Tensor) -> None:
    for arg, t in (("batch1", a), ("batch2", b)):
        if t.dim() != 3:
            raise RuntimeError(f"{name}(): {arg} must be a 3D tensor, got a {t.dim()}-D tensor of shape {_shape(t)}")
    if a.shape[0] != b.shape[0] or a.shape[2] != b.shape[1]:
        raise RuntimeError(f"{name}(): expected batch2 of shape [{a.shape[0]}, {a.shape[2]}, *] for batch1 "
                           f"{_shape(a)}, but got {_shape(b)}")


def baddbmm(c: Tensor, a: Tensor, b: Tensor, *, alpha: float = 1, beta: float = 1, out: Tensor | None = None,
            config: TileConfig | None = None, profile: Any = None) -> Tensor:
    """``torch.baddbmm(c, a, b, beta=beta, alpha=alpha)`` = beta·c + alpha·(a @ b) per batch, with
    a (B, M, K), b (B, K, N) and c broadcast to (B, M, N); beta = 0 ignores c."""
    _check_tensors("baddbmm", input=c, batch1=a, batch2=b)
    _check_batched("baddbmm", a, b)
    _check_same("baddbmm", batch1=a, batch2=b, input=c)
    shape = (a.shape[0], a.shape[1], b.shape[2])
    if not _expands_to(tuple(c.shape), shape):
        raise RuntimeError(f"baddbmm(): input {_shape(c)} does not broadcast to the result {shape}")
    alpha, beta = _scalar("baddbmm", "alpha", alpha), _scalar("baddbmm", "beta", beta)
    return _run("baddbmm", _Views(a, b, shape, shape), out, c=c, alpha=alpha, beta=beta, profile=profile,
                config=config, grad_args=(a, b, c))


def addbmm(c: Tensor, a: Tensor, b: Tensor, *, alpha: float = 1, beta: float = 1, out: Tensor | None = None,
           config: TileConfig | None = None, profile: Any = None) -> Tensor:
    """``torch.addbmm(c, a, b, beta=beta, alpha=alpha)`` = beta·c + alpha·Σ_i a[i] @ b[i], with
    a (B, M, K), b (B, K, N), c broadcast to (M, N): one GEMM over the concatenated K (B·K), on a
    (M, B·K) copy of a (a view where a's layout allows) and the (B·K, N) view of b."""
    _check_tensors("addbmm", input=c, batch1=a, batch2=b)
    _check_batched("addbmm", a, b)
    _check_same("addbmm", batch1=a, batch2=b, input=c)
    nb, m, k = a.shape
    n = b.shape[2]
    shape = (m, n)
    if not _expands_to(tuple(c.shape), shape):
        raise RuntimeError(f"addbmm(): input {_shape(c)} does not broadcast to the result {shape}")
    alpha, beta = _scalar("addbmm", "alpha", alpha), _scalar("addbmm", "beta", beta)
    a2 = a.transpose(0, 1).reshape(m, nb * k)
    b2 = b.reshape(nb * k, n)
    return _run("addbmm", _Views(a2, b2, shape, shape), out, c=c, alpha=alpha, beta=beta, profile=profile,
                config=config, grad_args=(a, b, c))


def mv(a: Tensor, v: Tensor, *, out: Tensor | None = None, config: TileConfig | None = None,
       profile: Any = None) -> Tensor:
    """``torch.mv(a, v)``: (N, M) @ (M,) -> (N,)."""
    _check_tensors("mv", input=a, vec=v)
    if a.dim() != 2 or v.dim() != 1:
        raise RuntimeError(f"mv(): vector + matrix @ vector expected, got input {a.dim()}-D {_shape(a)} and "
                           f"vec {v.dim()}-D {_shape(v)}")
    _check_same("mv", input=a, vec=v)
    if a.shape[1] != v.shape[0]:
        raise RuntimeError(f"mv(): size mismatch, got input ({a.shape[0]}x{a.shape[1]}), vec ({v.shape[0]})")
    shape = (a.shape[0],)
    return _run("mv", _Views(a, v.unsqueeze(-1), (a.shape[0], 1), shape), out, profile=profile, config=config,
                grad_args=(a, v))


def addmv(c: Tensor, a: Tensor, v: Tensor, *, alpha: float = 1, beta: float = 1, out: Tensor | None = None,
          config: TileConfig | None = None, profile: Any = None) -> Tensor:
    """``torch.addmv(c, a, v, beta=beta, alpha=alpha)`` = beta·c + alpha·(a @ v), c broadcast to (N,)."""
    _check_tensors("addmv", input=c, mat=a, vec=v)
    if a.dim() != 2 or v.dim() != 1:
        raise RuntimeError(f"addmv(): vector + matrix @ vector expected, got mat {a.dim()}-D {_shape(a)} and "
                           f"vec {v.dim()}-D {_shape(v)}")
    _check_same("addmv", mat=a, vec=v, input=c)
    if a.shape[1] != v.shape[0]:
        raise RuntimeError(f"addmv(): size mismatch, got mat ({a.shape[0]}x{a.shape[1]}), vec ({v.shape[0]})")
    shape = (a.shape[0],)
    if c.dim() > 1 or not _expands_to(tuple(c.shape), shape):
        raise RuntimeError(f"addmv(): input {_shape(c)} does not broadcast to the result {shape}")
    alpha, beta = _scalar("addmv", "alpha", alpha), _scalar("addmv", "beta", beta)
    c2 = c.unsqueeze(-1) if c.dim() == 1 else c
    return _run("addmv", _Views(a, v.unsqueeze(-1), (a.shape[0], 1), shape), out, c=c2, alpha=alpha, beta=beta,
                profile=profile, config=config, grad_args=(a, v, c))


def linear(x: Tensor, w: Tensor, bias: Tensor | None = None, profile: Any = None, *,
           config: TileConfig | None = None) -> Tensor:
    """``F.linear(x, w, bias)`` = x @ w.T + bias, with w (out, in) read through the w.t() view
    (layout T, no copy) and bias (out,), () or (1, out) fused into the epilogue. N-D activations,
    ``nn.Parameter`` weights and autograd take the warm path (:mod:`tritonblas.fastpath`) once a
    call of the same signature has run."""
    if profile is None and config is None and not _is_compiling():
        r = fastpath.linear(x, w, bias)
        if r is fastpath.TORCH:  # a tile table's VENDOR entry: torch's own F.linear
            return torch.nn.functional.linear(x, w, bias)
        if r is not None:
            return r
    _check_tensors("linear", input=x, weight=w, bias=bias)
    if w.dim() not in (1, 2):
        raise RuntimeError(f"linear(): weight must be 2-D (out_features, in_features) or 1-D, got {_shape(w)}")
    if w.dim() == 1 and bias is not None:
        raise RuntimeError(f"linear(): mat2 must be a matrix: a 1-D weight {_shape(w)} takes no bias "
                           f"(got bias {_shape(bias)}), as in F.linear")
    _check_same("linear", x=x, w=w, bias=bias)
    if x.dim() == 0 or x.shape[-1] != w.shape[-1]:
        raise RuntimeError(f"linear(): shapes cannot be multiplied: x {_shape(x)} and weight {_shape(w)} "
                           f"(x's last dim must equal in_features {w.shape[-1]}); dtype {x.dtype}")
    v = _matmul_views("linear", x, w.t() if w.dim() == 2 else w)
    if bias is None:
        r = _run("linear", v, None, profile=profile, config=config)
    elif _expands_to(tuple(bias.shape), v.kernel_shape):
        r = _run("linear", v, None, c=bias, alpha=1.0, beta=1.0, profile=profile, config=config)
    elif not _expands_to(tuple(bias.shape), v.shape):
        raise RuntimeError(f"linear(): bias {_shape(bias)} does not broadcast to the result {v.shape} of "
                           f"x {_shape(x)} and weight {_shape(w)}")
    else:
        return _run("linear", v, None, profile=profile, config=config) + bias
    if profile is None and config is None and _direct(x, w, bias):
        fastpath.record_linear(x, w, bias)
    return r


def explain(a: Tensor, b: Tensor, *, config: TileConfig | None = None, profile: Any = None) -> str:
    """What ``tritonblas.matmul(a, b)`` would run: the profile, the config (the model's pick or the
    forced one), the kernel, the predicted time and the model's breakdown of it."""
    _check_tensors("explain", input=a, other=b)
    _check_same("explain", a=a, b=b)
    v = _matmul_views("explain", a, b)
    what = f"matmul {_shape(a)} @ {_shape(b)} -> kernel {tuple(v.a.shape)} @ {tuple(v.b.shape)}"
    return dispatch.explain(v.a, v.b, profile=profile, config=config, what=what)


def clear_caches() -> None:
    """Drop every cached plan, warm entry, workspace, device profile mapping and model selection."""
    fastpath.clear()
    dispatch.clear_caches()


_compat.dynamo_eager_only(matmul, bmm, addmm, baddbmm, addbmm, mv, addmv, linear, dispatch.gemm)

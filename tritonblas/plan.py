"""Launch plans: a ``TileConfig`` for a ``GemmProblem`` on a profile → kernel, grid, constexprs, workspace.

``make_plan`` is pure (no tensors, no device): it checks the config with ``origami.space.violations``
and maps it to a kernel. ``launch`` is what the dispatcher calls with tensors: it validates them,
derives the per-launch layout/alignment classes, gets a workspace and launches on the current
stream of the tensors' device.

TileConfig → launch arguments, in one place (``CONSTEXPR_FIELDS`` …): every TileConfig field is in
exactly one of the tuples below (a test enforces it, so a new field cannot be silently dropped).
"""

from __future__ import annotations

import contextlib
import math
import threading
from collections import OrderedDict
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import torch

from origami._encoding import persistent_grid
from origami.config import Kind, TileConfig
from origami.hardware import HardwareProfile
from origami.problem import DType, GemmProblem, Layout, layout_order, stride_align_bytes, tma_store_exact
from origami.space import smem_bytes, violations
from origami.kmajor import KMAJOR_ONLY_DTYPES, STAGING_MIN_DIM, has_tma, kmajor_staging
from origami.staging import staging_copy_ns  # the copy cost (origami's policy), named here for plan's callers
from tritonblas import _interpreter

__all__ = [
    "LaunchPlan", "PreparedLaunch", "make_plan", "launch", "prepare_launch", "precompile", "clear_workspaces",
    "resolve_kernel_name", "tma_supported", "staging_for", "align_staging_for", "reads_as_is", "staging_copy_ns", "STAGING_MIN_DIM",
    "TMA_KERNELS", "problem_from_tensors", "fp8_promote_k",
    "alignment_bytes", "edge_alignment_bytes", "operand_order", "layout_info", "staging_buffer",
    "workspace", "WORKSPACES", "MAX_WORKSPACES",
    "align_class", "align_elements", "CONSTEXPR_FIELDS", "OPTION_FIELDS", "AMD_OPTION_FIELDS", "GRID_FIELDS", "TORCH_DTYPES", "FROM_TORCH",
]

# --- TileConfig field roles ------------------------------------------------------------------
CONSTEXPR_FIELDS = ("block_m", "block_n", "block_k", "group_m", "num_chiplets", "chunk")  # → UPPER constexprs
OPTION_FIELDS = ("num_warps", "num_stages")                      # → Triton launch options, every vendor
AMD_OPTION_FIELDS = ("waves_per_eu", "matrix_instr_nonkdim", "kpack")  # → launch options on AMD only
GRID_FIELDS = ("kind", "grid", "split_k")                        # → kernel choice, grid, runtime split count

# DType ↔ torch dtype, the one table of it: fp32 storage serves fp32 and tf32, so torch.float32 maps
# back to FP32 (TF32 is a compute mode the caller picks; dispatch.dtype_of). FROM_TORCH is the
# inverse; dispatch.DTYPES is derived from TORCH_DTYPES the same way.
TORCH_DTYPES: Mapping[DType, torch.dtype] = {
    DType.FP32: torch.float32, DType.TF32: torch.float32, DType.FP16: torch.float16, DType.BF16: torch.bfloat16,
    DType.FP8_E4M3: torch.float8_e4m3fn, DType.FP8_E5M2: torch.float8_e5m2,
    DType.FP8_E4M3_FNUZ: torch.float8_e4m3fnuz, DType.FP8_E5M2_FNUZ: torch.float8_e5m2fnuz,
}
FROM_TORCH: Mapping[torch.dtype, DType] = {t: d for d, t in TORCH_DTYPES.items() if d is not DType.TF32}
_FNUZ = (torch.float8_e4m3fnuz, torch.float8_e5m2fnuz)  # AMD gfx942's fp8 encodings (HardwareProfile.rate_key)
_FP8 = (torch.float8_e4m3fn, torch.float8_e5m2, *_FNUZ)
_OUT_DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.float8_e4m3fn, torch.float8_e5m2)
_ACTIVATIONS = {None: 0, "none": 0, "relu": 1, "gelu": 2, "gelu_tanh": 2}
_TMA_MAX_BLOCK = 256  # TMA box dims are at most 256 elements
# kind → (TMA kernel, pointer kernel it falls back to when the operands are not 16-byte aligned)
_KERNELS = {
    Kind.DP: ("gemm_tma_kernel", "gemm_kernel"),
    Kind.PERSISTENT: ("gemm_tma_kernel", "gemm_persistent_kernel"),
    Kind.STREAMK: ("gemm_streamk_tma_kernel", "gemm_streamk_kernel"),
    Kind.SPLITK: ("gemm_splitk_tma_kernel", "gemm_splitk_kernel"),
    Kind.WS: ("gluon_ws", "gluon_ws"),  # tritonblas.kernels.gluon_hopper (TMA only: origami.space.check_ws)
}
WS_KERNEL = "gluon_ws"  # LaunchPlan.kernel_name of kind 'ws': _WsKernel, not an attribute of tritonblas.kernels
_FLAT_KERNEL = "gemm_tma_flat_kernel"  # dp / persistent with make_plan(..., flat=True)
TMA_KERNELS = frozenset([*(tma for tma, _ in _KERNELS.values()), _FLAT_KERNEL])
# Operand staging (staging_for): the rule, its dtypes (KMAJOR_ONLY_DTYPES), its threshold and the TMA
# architectures live in origami.kmajor, which the scorer reads too (model.mn_major_tile_cost);
# _stage_order writes an alignment copy of these dtypes K-major as well (origami.kmajor.aligned_view)
# fp8 tl.dot's max_num_imprecise_acc unless fast accumulation is asked for: promote the MMA's
# reduced-precision sum into the fp32 accumulator after every K = 128 (four Hopper wgmmas, CUTLASS's
# interval), or once a K-step where BLOCK_K is smaller (:func:`fp8_promote_k`: Triton refuses a value
# above the dot's K). Values below 32 make Triton 3.6 give up wgmma for fp16 mma.sync (seen in the sm_90
# PTX); None = never. Evidence (H100, scaled_mm_compare.py, llm set, row-wise scales, bf16 out, origami's
# picks; benchmarks/results/scaled_mm_h100_*_9786cb3.csv): every 32 K 0.715x torch._scaled_mm, 8192^3 506
# TFLOP/s; every 128 K 0.887x, 856 TFLOP/s; the relative error against the float64 reference the same at
# both as torch's (0.00166 on every shape).
_FP8_PROMOTE_K = 128


def fp8_promote_k(block_k: int) -> int:
    """max_num_imprecise_acc of an fp8 dot of ``block_k`` K that promotes every :data:`_FP8_PROMOTE_K`: that
    interval, at most the dot's own K (a larger value is a compile error: "max_num_imprecise_acc must be <= K")."""
    return min(_FP8_PROMOTE_K, block_k)


# --- the plan --------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class LaunchPlan:
    """Everything needed to launch one config on one problem, except the tensors. Hashable, picklable.

    ``kernel_name`` names a kernel in ``tritonblas.kernels`` (resolved lazily by :attr:`kernel`, so
    building a plan never imports Triton). ``grid`` is the 1-D launch grid (batch folded into axis 0,
    so batch > 65535 is fine). The workspace is ``workspace_tiles`` fp32 tiles of BLOCK_M × BLOCK_N
    plus ``counters`` int32 counters (Stream-K / split-K only). ``stage_a`` / ``stage_b``: the launch
    binds the kernel to a K-major copy of that operand (:func:`staging_for`); ``problem`` still
    describes the caller's tensors.
    """

    config: TileConfig
    problem: GemmProblem
    kernel_name: str
    grid: tuple[int]
    workspace_tiles: int = 0
    counters: int = 0
    tma: bool = False
    is_amd: bool = False
    stage_a: bool = False
    stage_b: bool = False

    @property
    def constexprs(self) -> dict[str, int]:
        """The config's compile-time constants: each CONSTEXPR_FIELDS field under its UPPER name."""
        return {name.upper(): getattr(self.config, name) for name in CONSTEXPR_FIELDS}

    @property
    def options(self) -> dict[str, int]:
        """Triton launch options: num_warps, num_stages, and the AMD knobs on AMD profiles only."""
        opts = {name: getattr(self.config, name) for name in OPTION_FIELDS}
        if self.is_amd:
            opts.update({name: getattr(self.config, name) for name in AMD_OPTION_FIELDS})
        return opts

    @property
    def split_k(self) -> int:
        return self.config.split_k

    @property
    def workspace_bytes(self) -> int:
        return self.workspace_tiles * self.config.block_m * self.config.block_n * 4

    @property
    def counter_bytes(self) -> int:
        return self.counters * 4

    @property
    def kernel(self):
        if self.kernel_name == WS_KERNEL:
            return _WsKernel(self.config)
        from tritonblas import kernels

        return getattr(kernels, self.kernel_name)

    @property
    def pointer_kernel_name(self) -> str:
        """The pointer kernel a TMA plan falls back to when the tensors are not 16-byte aligned."""
        if self.kernel_name not in TMA_KERNELS:
            return self.kernel_name
        return _KERNELS[self.config.kind][1]


def _num_tiles(cfg: TileConfig, p: GemmProblem) -> int:
    return p.batch * math.ceil(p.m / cfg.block_m) * math.ceil(p.n / cfg.block_n)


def tma_supported(cfg: TileConfig, problem: GemmProblem, hw: HardwareProfile) -> str | None:
    """None if the TMA kernel may serve this config/problem, else why not."""
    if not has_tma(hw):
        return f"TMA: {hw.arch} has no tensor memory accelerator"
    if cfg.kind not in _KERNELS:
        return f"TMA: no TMA variant for kind {cfg.kind.value}"
    if problem.align_bytes < 16:
        return f"TMA: operands are {problem.align_bytes}-byte aligned, TMA needs 16"
    if problem.k == 0:
        return "TMA: K = 0"
    if max(cfg.block_m, cfg.block_n, cfg.block_k) > _TMA_MAX_BLOCK:
        return f"TMA: block dims must be <= {_TMA_MAX_BLOCK}"
    return None


def staging_for(problem: GemmProblem, hw: HardwareProfile) -> tuple[bool, bool]:
    """(stage A?, stage B?): whether a TMA launch should copy that operand to K-major first
    (:func:`origami.kmajor.kmajor_staging`, where the rule and its evidence live: tf32 and fp8 wgmma
    read shared-memory operands K-major only; an N-major B or M-major A otherwise goes through
    registers, 78 against 346 TFLOP/s tf32 at 8192³ on the H200). Not origami's ``register_staged``
    (unaligned loads)."""
    return kmajor_staging(problem, hw)


def align_staging_for(problem: GemmProblem, ab_align: tuple[int, int], orders: tuple[int, int]) -> tuple[bool, bool]:
    """(stage A?, stage B?): which operands a launch could bind to a 16-byte-aligned copy.

    ``ab_align``: the operands' alignment in bytes (:func:`alignment_bytes`), ``orders``: their
    :func:`operand_order`. An operand under 16 bytes rules out TMA and 16-byte vector loads (and under 4
    bytes, cp.async: origami's ``register_staged``), and such problems ran at 100-130 TFLOP/s bf16 on the
    H200 for torch and for our pointer kernels alike (benchmarks/results/compare_dlrm.csv, 2026-11-30),
    against 500+ for the aligned TMA kernels; AMD's pointer kernels compile such operands to short loads
    instead of dwordx4 (gfx942, tests/kernels/test_aot_compile.py). A copy whose leading dimension is padded
    to 16 bytes (same major, or K-major for the dtypes :func:`staging_for` stages) makes the operand
    TMA-legal and vector-loadable at the cost of one read and one write of it
    (``origami.staging.staging_copy_ns``); whether that pays is origami's policy
    (``origami.staging.staged_pick``, which the dispatcher calls). Every GPU (TMA descriptors on NVIDIA
    TMA architectures, the pointer kernels elsewhere), for operands contiguous along one of their last two
    dims (orders 0 and 1), with K > 0.
    """
    if problem.k == 0:
        return False, False
    return tuple(align < 16 and order in (0, 1) for align, order in zip(ab_align, orders))


def reads_as_is(problem: GemmProblem, ab_align: tuple[int, int], orders: tuple[int, int]) -> bool:
    """Whether the kernels read A and B as they are at the aligned problem's rate: K > 0, and both operands
    16-byte aligned (:func:`alignment_bytes`) and contiguous along one of their last two dims. Then a problem
    under 16 bytes aligned is so for its ``out`` alone. Every kernel reads each operand at that operand's own
    alignment class (:func:`align_elements`: TMA descriptors on NVIDIA TMA architectures, 16-byte vector loads
    in the pointer kernels, AMD's included) and stores ``out`` at out's, so such a call's plan is the aligned
    problem's, nothing copied (``origami.staging.unaligned_out_pick``, which the dispatcher calls)."""
    if problem.k == 0:
        return False
    return all(align >= 16 and order in (0, 1) for align, order in zip(ab_align, orders))


def _flat_smem_ok(cfg: TileConfig, problem: GemmProblem, hw: HardwareProfile) -> bool:
    """Whether the flattened TMA kernel fits: the operand pipeline plus a whole output tile of
    staging (its TMA stores, or the pointer store's layout-conversion scratch, stay live next to the
    pipeline buffers in the flattened loop). Conservative: the sm_90 builds add 32 KB for 128×256
    bf16 and 64 KB for 128×128 fp32 (tests/kernels/_aot_compile.py)."""
    staging = cfg.block_m * cfg.block_n * max(2, problem.c_dtype.bytes)
    return smem_bytes(cfg, problem, hw) + staging + 1024 <= hw.compute["smem_bytes_per_block"]


def make_plan(cfg: TileConfig, problem: GemmProblem, hw: HardwareProfile, *, tma: bool = False,
              flat: bool = False, checked: bool = False, stage: tuple[bool, bool] = (False, False)) -> LaunchPlan:
    """Map a config to a kernel launch. Raises ValueError naming every violated predicate.

    ``tma=True`` asks for the Hopper tensor-descriptor kernel of the kind (every kind has one); when the
    problem is not 16-byte aligned (``problem.align_bytes``), or the GPU has no TMA, the plan uses
    the pointer kernel instead (``plan.tma`` says which). ``launch`` re-checks the real tensors.

    ``flat=True`` (with ``tma=True``; dp and persistent kinds) asks for ``gemm_tma_flat_kernel``:
    the tile loop flattened into the K loop (the next tile's loads overlap this tile's epilogue)
    and a TMA-store epilogue. The TileConfig is the same; the plan keeps ``gemm_tma_kernel`` when
    the extra staging would not fit in shared memory. ``checked=True`` skips the predicates for a
    config that ``origami.select`` just chose for this problem and profile.

    A TMA plan (``plan.tma``) also says which operands the launch copies to K-major first
    (``stage_a`` / ``stage_b``, from :func:`staging_for`). ``stage`` = (A?, B?) adds operands to stage
    (alignment staging, :func:`align_staging_for`; TMA and pointer plans alike): ``problem`` is then the
    problem as the kernel sees it (16-byte aligned), not the caller's.
    """
    if not isinstance(cfg, TileConfig):
        raise TypeError(f"make_plan: cfg must be a TileConfig, got {type(cfg).__name__}")
    if problem.a_dtype not in TORCH_DTYPES or problem.b_dtype not in TORCH_DTYPES:
        raise ValueError(f"make_plan: no kernel for {problem.a_dtype.value} x {problem.b_dtype.value} inputs "
                         f"(supported: {', '.join(d.value for d in TORCH_DTYPES)})")
    # ``checked=True``: cfg is origami's pick for this very problem and profile, drawn from
    # origami.candidates, which the same predicates built — re-checking costs ~7 µs of a plan miss
    bad = () if checked else violations(cfg, problem, hw)
    if bad:
        raise ValueError(f"invalid config {cfg.short()} for {problem.describe()} on {hw.name}: " + "; ".join(bad))
    tiles = _num_tiles(cfg, problem)
    kind = cfg.kind
    use_tma = bool(tma) and tma_supported(cfg, problem, hw) is None
    if kind not in _KERNELS:  # pragma: no cover - a Kind added to origami without a kernel
        raise ValueError(f"make_plan: no kernel for kind {kind.value!r}")
    if kind is Kind.WS:  # check_ws (in violations) holds the TMA conditions; nothing is staged
        if any(stage):  # its launch binds the caller's tensors, and staging never aligns out
            raise ValueError(f"make_plan: {cfg.short()}: the 'ws' kernel runs no alignment staging "
                             f"(stage={tuple(bool(s) for s in stage)}); plan another kind for a staged problem")
        return LaunchPlan(config=cfg, problem=problem, kernel_name=WS_KERNEL, grid=(persistent_grid(cfg.grid, tiles),),
                          tma=True, is_amd=hw.is_amd)
    name = _KERNELS[kind][0 if use_tma else 1]
    if use_tma and flat and kind in (Kind.DP, Kind.PERSISTENT) and _flat_smem_ok(cfg, problem, hw):
        name = _FLAT_KERNEL
    ws_tiles = counters = 0
    if kind is Kind.DP:
        grid = tiles
    elif kind is Kind.PERSISTENT:
        grid = persistent_grid(cfg.grid, tiles)
    elif kind is Kind.STREAMK:
        grid = cfg.grid
        counters = tiles % grid
        ws_tiles = 2 * grid if counters else 0
    else:  # Kind.SPLITK
        grid = tiles * cfg.split_k
        ws_tiles, counters = tiles * cfg.split_k, tiles
    # K-major staging (tf32/fp8 wgmma) is the TMA kernels'; alignment staging (``stage``) is every kernel's
    stage_a, stage_b = staging_for(problem, hw) if use_tma else (False, False)
    stage_a, stage_b = stage_a or bool(stage[0]), stage_b or bool(stage[1])
    return LaunchPlan(config=cfg, problem=problem, kernel_name=name, grid=(grid,), workspace_tiles=ws_tiles,
                      counters=counters, tma=use_tma, is_amd=hw.is_amd, stage_a=stage_a, stage_b=stage_b)


# --- layouts and alignment -------------------------------------------------------------------
def align_class(nbytes: int) -> int:
    """Quantise an alignment in bytes to the kernels' three classes: 16 (vector / TMA), 4, 1."""
    return 16 if nbytes >= 16 else 4 if nbytes >= 4 else 1


def align_elements(nbytes: int, t: torch.Tensor) -> int:
    """The ``*_ALIGN`` / ``*_EDGE`` hint of one kernel operand: its own :func:`align_class` in elements of
    ``t`` (at least 1), from ``nbytes`` (:func:`alignment_bytes` or :func:`edge_alignment_bytes` of ``t``).

    Each tensor keeps its own class (strides, and separately edge masks), so an operand the kernel can
    read with 16-byte vectors does so whatever the others' alignment: a ragged ``out`` (an ``F.linear``
    whose out_features make its rows odd, e.g. GPT-2's lm_head, 50257 bf16 logits a row) once took the
    minimum class of all three and sent every load of an aligned ``a`` and ``b`` to scalar 2-byte loads
    (sm_90: 512 scalar loads, no cp.async, in the pointer kernel of 4096x1001x7168 N·T; gfx942: short
    loads; tests/kernels/test_aot_compile.py). Three classes per tensor bound the compiled variants of a
    config and layout: contiguous tensors have one class each (their extents are their strides)."""
    return max(1, align_class(nbytes) // t.element_size())


def operand_order(t: torch.Tensor) -> int:
    """Which of the last two dims the kernel treats as contiguous (unit stride): 0 the last, 1 the
    one before, 2 neither (``origami.problem.layout_order``)."""
    (n0, n1), (s0, s1) = t.shape[-2:], t.stride()[-2:]
    return layout_order(n0, n1, s0, s1)


def _batch_stride(t: torch.Tensor) -> int:
    return t.stride(0) if t.dim() == 3 and t.shape[0] > 1 else 0


def _hinted_strides(t: torch.Tensor) -> tuple[int, int]:
    """The strides of ``t``'s last two dims as the kernels receive them: 0 for a dim of size 1, whose stride no
    valid element multiplies, so that the ``*_ALIGN`` hint on it (:func:`align_elements`, from
    :func:`alignment_bytes`, which leaves size-1 dims out) is a true fact about the value it is placed on
    (e.g. a (1, 2) bf16 view with strides (2, 1) under an 8-element hint)."""
    (n0, n1), (s0, s1) = t.shape[-2:], t.stride()[-2:]
    return (0 if n0 == 1 else s0), (0 if n1 == 1 else s1)


def _pow2_dividing(values, cap: int = 16) -> int:
    a = cap
    for v in values:
        while a > 1 and v % a:
            a //= 2
    return a


def alignment_bytes(t: torch.Tensor) -> int:
    """Largest power of two ≤ 16 dividing, in bytes, the base address and every stride the kernel
    multiplies by a row/column/batch index (unit strides and size-1 dims excluded). This is
    ``GemmProblem.align_bytes``' definition (``origami.problem.stride_align_bytes``): 16 means
    16-byte vector loads and TMA are legal."""
    (n0, n1), (s0, s1) = t.shape[-2:], t.stride()[-2:]
    return stride_align_bytes(n0, n1, s0, s1, _batch_stride(t), t.element_size(), t.data_ptr())


def edge_alignment_bytes(t: torch.Tensor) -> int:
    """:func:`alignment_bytes`, also dividing the extent (in bytes) of the contiguous dim: what the
    kernels' ``*_EDGE`` hints promise (an edge mask along that dim is then constant over a vector)."""
    return layout_info(t)[2]


def layout_info(t: torch.Tensor) -> tuple[int, int, int]:
    """``(operand_order(t), alignment_bytes(t), edge_alignment_bytes(t))`` from one read of the shape and
    strides (prepare_launch needs all three for each of its tensors)."""
    (n0, n1), (s0, s1) = t.shape[-2:], t.stride()[-2:]
    e = t.element_size()
    order = layout_order(n0, n1, s0, s1)
    align = stride_align_bytes(n0, n1, s0, s1, _batch_stride(t), e, t.data_ptr())
    extent = n1 if order == 0 else n0 if order == 1 else 1
    return order, align, _pow2_dividing((align, extent * e))


def _layout(t: torch.Tensor) -> Layout:
    return Layout.T if operand_order(t) == 1 else Layout.N


def problem_from_tensors(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor) -> GemmProblem:
    """The GemmProblem of ``out = a @ b`` (2-D or batched 3-D), alignment measured on the tensors."""
    for name, t in (("a", a), ("b", b), ("out", out)):
        if t.dtype not in FROM_TORCH:
            raise ValueError(f"{name}: unsupported dtype {t.dtype}")
    batch = out.shape[0] if out.dim() == 3 else 1
    return GemmProblem(
        m=a.shape[-2], n=b.shape[-1], k=a.shape[-1], batch=batch,
        a_dtype=FROM_TORCH[a.dtype], b_dtype=FROM_TORCH[b.dtype], c_dtype=FROM_TORCH[out.dtype],
        a_layout=_layout(a), b_layout=_layout(b),
        align_bytes=min(alignment_bytes(a), alignment_bytes(b), alignment_bytes(out)),
    )


def _tma_ok(t: torch.Tensor, order: int) -> bool:
    """Host check before building a descriptor: unit inner stride, 16-byte aligned base and strides
    (an unaligned descriptor gives silently wrong results on the H200)."""
    if order not in (0, 1):
        return False
    e = t.element_size()
    lead = t.stride(-2) if order == 0 else t.stride(-1)
    if t.data_ptr() % 16 or lead <= 0 or (lead * e) % 16:
        return False
    return (_batch_stride(t) * e) % 16 == 0


def _descriptor(t: torch.Tensor, order: int, batched: bool, rows_block: int, cols_block: int):
    """Host TensorDescriptor over the operand as stored: [(batch,) d0, d1] (order 0) or its transpose."""
    from triton.tools.tensor_descriptor import TensorDescriptor

    (n0, n1), (s0, s1) = t.shape[-2:], t.stride()[-2:]
    if order == 0:
        shape, strides, block = [n0, n1], [s0, 1], [rows_block, cols_block]
    else:
        shape, strides, block = [n1, n0], [s1, 1], [cols_block, rows_block]
    if not batched:
        return TensorDescriptor(t, shape, strides, block), 0
    sb = _batch_stride(t)
    nb = t.shape[0] if sb else 1
    bstride = sb if sb else shape[0] * strides[0]
    return TensorDescriptor(t, [nb, *shape], [bstride, *strides], [1, *block]), (1 if sb else 0)


# --- workspace -------------------------------------------------------------------------------
MAX_WORKSPACES = 8
# (device type, index, stream) → (fp32 partials, int32 counters), least recently used first; filled by
# workspace(), read directly by dispatch's warm entries (a hit must be large enough for the launch).
WORKSPACES: "OrderedDict[tuple, tuple[torch.Tensor, torch.Tensor]]" = OrderedDict()
_WS_LOCK = threading.Lock()


def clear_workspaces() -> None:
    """Drop every cached workspace (they are re-created, zeroed, on the next launch that needs one)."""
    with _WS_LOCK:
        WORKSPACES.clear()


def workspace(device: torch.device, partial_elems: int, counters: int) -> tuple[torch.Tensor, torch.Tensor]:
    """fp32 partials + int32 counters (zero, and zero again after every launch) for this device and
    its current stream. Cached per (device, stream), at most MAX_WORKSPACES entries, grown on demand.

    Only the default stream's workspace is cached. On any other stream, and during CUDA-graph
    capture, a fresh pair comes from torch's caching allocator per call (so from a graph's private
    pool while one is capturing or warming up) with its counters zero-filled on that stream, and it
    is freed when the launch's references go: nothing allocated inside a graph pool outlives the
    call. (``torch.compile(mode="reduce-overhead")`` warms up and records on a side stream inside
    the pool; a cached workspace there failed its "tensors in the cudagraph pool not tracked as
    outputs" check, H200, torch 2.11, 2026-12-01.)
    """
    stream = 0
    if device.type == "cuda":
        with torch.cuda.device(device):  # capture state and stream of the tensors' device, not the current one
            stream = torch.cuda.current_stream(device).cuda_stream
            if stream != 0 or torch.cuda.is_current_stream_capturing():
                return (torch.empty(max(1, partial_elems), device=device, dtype=torch.float32),
                        torch.zeros(max(1, counters), device=device, dtype=torch.int32))
    key = (device.type, device.index, stream)
    with _WS_LOCK:
        ws = WORKSPACES.get(key)
        if ws is None or ws[0].numel() < partial_elems or ws[1].numel() < counters:
            have_p, have_c = (ws[0].numel(), ws[1].numel()) if ws is not None else (0, 0)
            ws = (torch.empty(max(have_p, _round_up_pow2(partial_elems)), device=device, dtype=torch.float32),
                  torch.zeros(max(have_c, _round_up_pow2(counters), 1024), device=device, dtype=torch.int32))
            WORKSPACES[key] = ws
        WORKSPACES.move_to_end(key)
        while len(WORKSPACES) > MAX_WORKSPACES:
            WORKSPACES.popitem(last=False)
    return ws


def _round_up_pow2(n: int) -> int:
    return 1 << max(0, (max(1, n) - 1).bit_length())


# --- launch ----------------------------------------------------------------------------------
def resolve_kernel_name(plan: LaunchPlan, a: torch.Tensor, b: torch.Tensor,
                        orders: tuple[int, int] | None = None) -> str:
    """The kernel ``launch`` will run for these operands: a TMA plan falls back to its pointer kernel
    unless both operands pass the host's 16-byte alignment check (and K > 0). A staged plan's
    ``prepare_launch`` asks this for the operands it binds (its K-major buffers); it keeps the TMA
    kernel whenever the caller's operands would."""
    if plan.kernel_name not in TMA_KERNELS:
        return plan.kernel_name
    oa, ob = orders if orders is not None else (operand_order(a), operand_order(b))  # orders: the caller's operand_order(a), operand_order(b)
    if a.shape[-1] > 0 and _tma_ok(a, oa) and _tma_ok(b, ob):
        return plan.kernel_name
    return plan.pointer_kernel_name


def _check_tensor(name: str, t: Any, dims: tuple[int, ...]) -> torch.Tensor:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor, got {type(t).__name__}")
    if t.dim() not in dims:
        raise ValueError(f"{name}: expected {' or '.join(f'{d}-D' for d in dims)}, got shape {tuple(t.shape)}")
    return t


def _overlaps(x: torch.Tensor, y: torch.Tensor) -> bool:
    """Whether the byte ranges spanned by two views of one storage intersect (conservative)."""
    if x.numel() == 0 or y.numel() == 0 or x.untyped_storage().data_ptr() != y.untyped_storage().data_ptr():
        return False

    def span(t):
        lo = t.data_ptr()
        hi = lo + (sum((n - 1) * s for n, s in zip(t.shape, t.stride())) + 1) * t.element_size()
        return lo, hi
    (a0, a1), (b0, b1) = span(x), span(y)
    return a0 < b1 and b0 < a1


def _scale_mode(name: str, s: torch.Tensor | None, length: int, dim_name: str,
                device: torch.device) -> tuple[int, torch.Tensor | None]:
    if s is None:
        return 0, None
    _check_tensor(name, s, (0, 1, 2))
    if s.device != device:
        raise ValueError(f"{name}: on {s.device}, the operands are on {device}")
    if not s.is_floating_point() or s.dtype in _FP8:
        raise ValueError(f"{name}: expected a float32/float16/bfloat16 tensor, got {s.dtype}")
    if s.numel() == 1:
        return 1, s.reshape(1)
    shaped = (length,) if s.dim() == 1 else (length, 1) if name == "scale_a" else (1, length)
    if s.numel() != length or (s.dim() == 2 and tuple(s.shape) != shaped):
        per = (length, 1) if name == "scale_a" else (1, length)
        raise ValueError(f"{name}: expected shape () or (1,) per tensor, ({length},) or {per} per {dim_name}, "
                         f"got {tuple(s.shape)}")
    v = s.reshape(length)
    return 2, (v if v.stride(0) == 1 else v.contiguous())


@dataclass(frozen=True)
class PreparedLaunch:
    """A validated launch bound to its tensors (and workspace). ``run()`` launches it with no further
    checks (benchmarks; same stream as prepared), ``compile()`` compiles it without launching.

    The workspace (Stream-K / split-K partials and counters) is the one cached for the stream that
    was current at prepare time. Two launches that overlap in time must not share it: running a
    prepared Stream-K / split-K launch on another stream while one on the preparing stream is still
    in flight corrupts the counters (``triton.testing.do_bench_cudagraph`` starts on a fresh side
    stream: synchronise before it, as benchmarks/sweep.py does). The dispatcher (``tritonblas.matmul``)
    looks the workspace up per call and stream, so it is not exposed to this.

    ``staged``: (buffer, source) pairs of the K-major operand copies the kernel is bound to
    (``LaunchPlan.stage_a`` / ``stage_b``); every launch first copies each source into its buffer on
    the current stream, so a re-run sees the operands' current values and a timed ``run`` includes
    the copies' cost.
    """

    kernel: Any
    grid: tuple[int]
    args: tuple
    kwargs: dict
    device: torch.device
    out: torch.Tensor
    staged: tuple = ()

    def run(self) -> torch.Tensor:
        self.run_kernel()
        return self.out

    def run_kernel(self) -> Any:
        """Stage the copied operands, then launch; returns what ``kernel[grid](...)`` returns: Triton's
        CompiledKernel on a GPU (the dispatcher binds its fast launch to it without a second lookup),
        None under the interpreter."""
        if self.kernel is None:
            return None
        guard = torch.cuda.device(self.device) if self.device.type == "cuda" else contextlib.nullcontext()
        with guard, _interpreter.serial():
            for buffer, source in self.staged:
                stage_copy(buffer, source)
            return self.kernel[self.grid](*self.args, **self.kwargs)

    def compile(self):
        """Compile (or fetch from Triton's caches) without launching; returns Triton's compiled
        kernel (``.metadata.shared``, ``.asm``), or None under the interpreter."""
        if self.kernel is None or _interpreter.interpreting():
            return None
        guard = torch.cuda.device(self.device) if self.device.type == "cuda" else contextlib.nullcontext()
        with guard:
            return self.kernel.warmup(*self.args, grid=self.grid, **self.kwargs)


class _WsKernel:
    """A 'ws' plan's kernel in :class:`PreparedLaunch`'s calling convention: ``kernel[grid](a, b, out,
    bias)`` runs :func:`tritonblas.kernels.gluon_hopper.gluon_matmul` with the config's tile on
    ``grid[0]`` programs (the plan's persistent grid). ``warmup`` compiles nothing ahead: the first
    launch compiles (Gluon kernels are not precompiled in worker processes)."""

    __slots__ = ("cfg",)

    def __init__(self, cfg: TileConfig):
        self.cfg = cfg

    def __getitem__(self, grid):
        cfg = self.cfg

        def run(a, b, out, bias):
            from tritonblas.kernels import gluon_hopper

            gluon_hopper.gluon_matmul(a, b, out, bias=bias, block_m=cfg.block_m, block_n=cfg.block_n,
                                      block_k=cfg.block_k, stages=cfg.num_stages, group_m=cfg.group_m,
                                      num_sms=grid[0])
            return None
        return run

    def warmup(self, *args, grid, **kwargs):
        return None


def _prepare_ws(plan: LaunchPlan, a, b, out, *, has_c: bool, alpha: float, bias, activation, scaled: bool):
    """prepare_launch for kind 'ws': the warp-specialised kernel's epilogue adds a bias and nothing
    else (ValueError naming what it cannot do); 3-D operands of batch 1 are their 2-D matrices."""
    what = [name for name, on in (("c", has_c), ("alpha", float(alpha) != 1.0), ("activation", activation not in (None, "none")),
                                  ("scale_a/scale_b", scaled)) if on]
    if what:
        raise ValueError(f"{', '.join(what)}: the 'ws' kernel ({plan.config.short()}) adds a bias only; "
                         "plan another kind for this epilogue")
    if _interpreter.interpreting():
        raise RuntimeError("the 'ws' kernel (Gluon) does not run under TRITON_INTERPRET=1")
    a2, b2, o2 = (t[0] if t.dim() == 3 else t for t in (a, b, out))
    return PreparedLaunch(_WsKernel(plan.config), plan.grid, (a2, b2, o2, bias), {}, out.device, out)


def launch(plan: LaunchPlan, a: torch.Tensor, b: torch.Tensor, out: torch.Tensor, **kwargs) -> torch.Tensor:
    """``out = act(alpha·(scale_a ⊙ (a @ b) ⊙ scale_b) + beta·c + bias)`` with ``plan``'s kernel; returns out.

    The keyword arguments are those of :func:`prepare_launch`. Launches on the current stream of
    out's device (under a ``torch.cuda.device`` guard).
    """
    return prepare_launch(plan, a, b, out, **kwargs).run()


def prepare_launch(plan: LaunchPlan, a: torch.Tensor, b: torch.Tensor, out: torch.Tensor, *,
                   c: torch.Tensor | None = None, alpha: float = 1.0, beta: float = 0.0,
                   bias: torch.Tensor | None = None, activation: str | None = None,
                   scale_a: torch.Tensor | None = None, scale_b: torch.Tensor | None = None,
                   allow_tf32: bool = False, fp8_fast_accum: bool = False) -> PreparedLaunch:
    """Validate the tensors against ``plan`` and bind every kernel argument.

    a: (M, K) or (batch, M, K); b: (K, N) or (batch, K, N); out: (M, N) or (batch, M, N), any strides
    (a 2-D or size-1-batch operand is broadcast over the batch). ``c`` broadcasts to out and may
    alias it; ``bias`` has N elements; ``scale_a`` / ``scale_b`` are one element (per tensor) or
    M / N elements (per row / column). ``allow_tf32`` lets fp32 inputs use TF32 (otherwise IEEE
    fp32). ``fp8_fast_accum`` lets Hopper fp8 MMAs accumulate in reduced precision (faster;
    default: promote to fp32 every :func:`fp8_promote_k` of K). The sizes and dtypes must match ``plan.problem``.

    Operand staging (``plan.stage_a`` / ``plan.stage_b``, see :func:`staging_for`): after every check
    has passed on the caller's tensors, an operand that is not K-major gets a K-major buffer (a
    normal torch allocation on the current stream: under CUDA-graph capture it comes from the
    graph's pool), and the kernel, its strides, alignment classes and TMA descriptor are bound to
    that buffer; ``PreparedLaunch.run_kernel`` copies the operand into it before each launch. The
    buffer is owned by the returned PreparedLaunch (it is in its ``args`` and ``staged``), so it
    lives until the launch is enqueued; the caller's tensors are only read. An operand whose buffer
    would fail the TMA check, or a launch that falls back to its pointer kernel, is not staged.
    """
    _interpreter.apply()
    _check_tensor("a", a, (2, 3))
    _check_tensor("b", b, (2, 3))
    _check_tensor("out", out, (2, 3))
    device = out.device
    for name, t in (("a", a), ("b", b), ("c", c), ("bias", bias)):
        if t is not None and isinstance(t, torch.Tensor) and t.device != device:
            raise ValueError(f"{name}: on {t.device}, but out is on {device} (all tensors must share a device)")
    if device.type == "cpu" and not _interpreter.interpreting():
        raise RuntimeError(f"tritonblas kernels run on CPU tensors only under TRITON_INTERPRET=1: "
                           f"{_interpreter.cpu_refusal()}")
    for name, t in (("a", a), ("b", b)):
        if t.dtype not in FROM_TORCH:
            raise ValueError(f"{name}: unsupported dtype {t.dtype} (supported: fp32, fp16, bf16, fp8 e4m3/e5m2 "
                             "and their fnuz encodings)")
    if (a.dtype in _FP8) != (b.dtype in _FP8) or (a.dtype not in _FP8 and a.dtype != b.dtype) \
            or (a.dtype in _FNUZ) != (b.dtype in _FNUZ):
        raise ValueError(f"a and b: dtypes must match (or both be fp8 of one encoding, OCP or fnuz), got {a.dtype} "
                         f"and {b.dtype}")
    if out.dtype not in _OUT_DTYPES:
        raise ValueError(f"out: unsupported dtype {out.dtype}")

    m, k = a.shape[-2:]
    k2, n = b.shape[-2:]
    if k2 != k:
        raise ValueError(f"a and b: inner dims differ, a is {tuple(a.shape)} and b is {tuple(b.shape)}")
    if tuple(out.shape[-2:]) != (m, n):
        raise ValueError(f"out: expected (..., {m}, {n}) for a {tuple(a.shape)} @ b {tuple(b.shape)}, "
                         f"got {tuple(out.shape)}")
    if any(st == 0 and sz > 1 for st, sz in zip(out.stride(), out.shape)):
        raise ValueError(f"out: has stride 0 (strides {out.stride()}): several outputs would share one element")
    batch = out.shape[0] if out.dim() == 3 else 1
    for name, t in (("a", a), ("b", b)):
        if t.dim() == 3 and t.shape[0] not in (1, batch):
            raise ValueError(f"{name}: batch {t.shape[0]} does not broadcast to out's batch {batch}")
    p = plan.problem
    if (p.m, p.n, p.k, p.batch) != (m, n, k, batch):
        raise ValueError(f"plan is for {p.describe()}, got m={m} n={n} k={k} batch={batch}")
    for name, t, want in (("a", a, p.a_dtype), ("b", b, p.b_dtype), ("out", out, p.c_dtype)):
        if TORCH_DTYPES.get(want) != t.dtype:
            raise ValueError(f"{name}: plan expects {want.value}, got {t.dtype}")
    for name, t in (("a", a), ("b", b)):
        if _overlaps(out, t):
            raise ValueError(f"out: must not overlap {name}")

    has_c = c is not None and float(beta) != 0.0
    if has_c:
        _check_tensor("c", c, (0, 1, 2, 3))
        try:
            c = c.expand(out.shape)
        except RuntimeError:
            raise ValueError(f"c: shape {tuple(c.shape)} does not broadcast to out {tuple(out.shape)}") from None
        if not c.is_floating_point():
            raise ValueError(f"c: expected a floating-point tensor, got {c.dtype}")
    if bias is not None:
        _check_tensor("bias", bias, (1, 2))
        if bias.numel() != n or (bias.dim() == 2 and bias.shape[0] != 1):
            raise ValueError(f"bias: expected shape ({n},) or (1, {n}), got {tuple(bias.shape)}")
        bias = bias.reshape(n)
    if activation not in _ACTIVATIONS:
        raise ValueError(f"activation: expected one of none, relu, gelu, got {activation!r}")
    sa_mode, scale_a = _scale_mode("scale_a", scale_a, m, "row (M)", device)
    sb_mode, scale_b = _scale_mode("scale_b", scale_b, n, "column (N)", device)

    if m == 0 or n == 0 or batch == 0:
        return PreparedLaunch(None, plan.grid, (), {}, device, out)

    cfg = plan.config
    if cfg.kind is Kind.WS:
        return _prepare_ws(plan, a, b, out, has_c=has_c, alpha=alpha, bias=bias, activation=activation,
                           scaled=bool(sa_mode or sb_mode))
    a, b, staged = _stage_operands(plan, a, b)
    (oa, la, ea), (ob, lb, eb), (oo, lo, eo) = layout_info(a), layout_info(b), layout_info(out)
    orders = {"a": oa, "b": ob, "out": oo}
    kernel_name = resolve_kernel_name(plan, a, b, (oa, ob))
    a_arg, b_arg, out_arg = a, b, out
    sab, sbb = _batch_stride(a), _batch_stride(b)
    tma_batched = False
    if kernel_name in TMA_KERNELS:
        tma_batched = batch > 1
        a_arg, sab = _descriptor(a, orders["a"], tma_batched, cfg.block_m, cfg.block_k)
        b_arg, sbb = _descriptor(b, orders["b"], tma_batched, cfg.block_k, cfg.block_n)
    from tritonblas import kernels

    kernel = getattr(kernels, kernel_name)
    extra_meta = {}
    if kernel_name == _FLAT_KERNEL:
        # TMA store: a row-major, 16-byte-aligned output whose rows are whole 16-byte chunks (the
        # unit writes past a ragged row end: origami.problem.tma_store_exact) and a half tile at
        # least 16 bytes wide
        out_tma = (orders["out"] == 0 and _tma_ok(out, 0) and tma_store_exact(out.shape[-1], out.element_size())
                   and (cfg.block_n // 2) * out.element_size() >= 16 and cfg.block_n >= 2)
        extra_meta["OUT_TMA"] = out_tma
        if out_tma:
            out_arg, _ = _descriptor(out, 0, batch > 1, cfg.block_m, cfg.block_n // 2)

    ws, cnt = out, out
    if plan.workspace_tiles or plan.counters or cfg.kind in (Kind.STREAMK, Kind.SPLITK):
        # Stream-K / split-K kernels always get an fp32 workspace and int32 counters, even when this
        # grid splits no tile: the compiler types the (untaken) fix-up branch from the pointer
        # (an fp16 ``out`` stand-in made sm_90 compilation fail; the interpreter does not check).
        ws, cnt = workspace(device, max(1, plan.workspace_tiles * cfg.block_m * cfg.block_n), max(1, plan.counters))

    fp8 = a.dtype in _FP8
    meta = dict(
        A_ORDER=orders["a"], B_ORDER=orders["b"], OUT_ORDER=orders["out"],
        A_ALIGN=align_elements(la, a), B_ALIGN=align_elements(lb, b), OUT_ALIGN=align_elements(lo, out),
        A_EDGE=align_elements(ea, a), B_EDGE=align_elements(eb, b), OUT_EDGE=align_elements(eo, out),
        HAS_C=has_c, HAS_BIAS=bias is not None, SCALE_A=sa_mode, SCALE_B=sb_mode,
        ACTIVATION=_ACTIVATIONS[activation],
        INPUT_PRECISION="tf32" if (allow_tf32 and a.dtype == torch.float32) else "ieee",
        MAX_IMPRECISE=fp8_promote_k(cfg.block_k) if (fp8 and not fp8_fast_accum) else None,
        TMA_BATCHED=tma_batched,
    )
    cs = c.stride() if has_c else (0, 0, 0)
    if has_c and c.dim() == 2:
        cs = (0, *cs)
    os_ = (0, *_hinted_strides(out)) if out.dim() == 2 or batch == 1 else (out.stride(0), *_hinted_strides(out))
    meta.update(extra_meta)
    args = (
        a_arg, b_arg, c if has_c else out, out_arg, bias if bias is not None else out,
        scale_a if scale_a is not None else out, scale_b if scale_b is not None else out, ws, cnt,
        m, n, k, batch, cfg.split_k,
        sab, *_hinted_strides(a), sbb, *_hinted_strides(b),
        cs[0], cs[1], cs[2], os_[0], os_[1], os_[2], bias.stride(0) if bias is not None else 0,
        float(alpha), float(beta),
    )
    options = plan.options
    if device.type == "cuda" and not getattr(torch.version, "hip", None):
        # AMD knobs are HIP-backend launch options; CUDA's Triton rejects them (an AMD profile
        # forced onto an NVIDIA GPU keeps its tiles and remap, not its AMD-only options).
        options = {k: v for k, v in options.items() if k not in AMD_OPTION_FIELDS}
    return PreparedLaunch(kernel, plan.grid, args, {**plan.constexprs, **meta, **options}, device, out, staged)


_TRANSPOSE_BLOCK = 64


def stage_copy(buffer: torch.Tensor, source: torch.Tensor) -> None:
    """``buffer.copy_(source)`` for a staging copy (same shape, the two of opposite majors), through
    ``kernels.transpose_copy_kernel`` where the layouts allow it, on the current stream: as storage,
    ``source`` is (.., R, C) and ``buffer`` (.., C, R), each contiguous along its last dim with
    uniform batch strides. Anything else (and CPU tensors outside the interpreter) uses torch's copy."""
    src, dst = (source, buffer.mT) if source.stride(-1) == 1 else (source.mT, buffer)
    if (dst.stride(-1) != 1 or src.stride(-1) != 1 or src.shape[-2:] != dst.shape[-2:][::-1] or src.numel() == 0
            or (source.device.type == "cpu" and not _interpreter.interpreting())):
        buffer.copy_(source)
        return
    rows, cols = src.shape[-2:]
    batch = src.shape[0] if src.dim() == 3 else 1
    if batch > 1 and (src.stride(0) == 0 or dst.stride(0) == 0):
        buffer.copy_(source)  # a broadcast batch: torch's copy keeps its semantics
        return
    from tritonblas import kernels

    tiles = math.ceil(rows / _TRANSPOSE_BLOCK) * math.ceil(cols / _TRANSPOSE_BLOCK) * batch
    with _interpreter.serial():
        _transpose(kernels, tiles, src, dst, rows, cols)


def _transpose(kernels, tiles: int, src: torch.Tensor, dst: torch.Tensor, rows: int, cols: int) -> None:
    kernels.transpose_copy_kernel[(tiles,)](
        src, dst, rows, cols, src.stride(0) if src.dim() == 3 else 0, src.stride(-2),
        dst.stride(0) if dst.dim() == 3 else 0, dst.stride(-2),
        BLOCK_R=_TRANSPOSE_BLOCK, BLOCK_C=_TRANSPOSE_BLOCK, num_warps=4)


def _stage_operands(plan: LaunchPlan, a: torch.Tensor, b: torch.Tensor) -> tuple:
    """(a, b, staged): the operands to bind, the caller's or staging buffers for those the plan
    stages, and the (buffer, source) copies that fill the buffers. An operand is staged unless it
    already is what its buffer would be (its target major, :func:`_stage_order`, and 16-byte aligned:
    :func:`_tma_ok`). A TMA plan stages nothing unless the launch keeps its TMA kernel with the buffers
    bound; a pointer plan (alignment staging without TMA: AMD) binds the buffers to its pointer kernel."""
    if not (plan.stage_a or plan.stage_b):
        return a, b, ()
    staged = []
    a_op, b_op = a, b
    if plan.stage_a and not ((oa := _stage_order(plan, a, 0)) == operand_order(a) and _tma_ok(a, oa)):
        a_op = staging_buffer(a, oa, staged)
    if plan.stage_b and not ((ob := _stage_order(plan, b, 1)) == operand_order(b) and _tma_ok(b, ob)):
        b_op = staging_buffer(b, ob, staged)
    if not staged or (plan.kernel_name in TMA_KERNELS and resolve_kernel_name(plan, a_op, b_op) not in TMA_KERNELS):
        return a, b, ()
    return a_op, b_op, tuple(staged)


def _stage_order(plan: LaunchPlan, t: torch.Tensor, k_major: int) -> int:
    """The major of operand ``t``'s staging buffer: K-major (``k_major``: 0 for a, 1 for b) for the
    dtypes wgmma reads K-major only (:func:`staging_for`) or when ``t`` is contiguous along neither
    dim, else ``t``'s own (an alignment copy keeps the layout: the cheapest copy)."""
    dtype = plan.problem.a_dtype if k_major == 0 else plan.problem.b_dtype
    order = operand_order(t)
    return k_major if dtype in KMAJOR_ONLY_DTYPES or order not in (0, 1) else order


def staging_buffer(t: torch.Tensor, order: int, staged: list) -> torch.Tensor:
    """A buffer shaped like operand ``t``, contiguous along its last dim (``order`` 0) or the one
    before (1), its leading dimension padded to a 16-byte multiple, and, appended to ``staged``, its
    (buffer, source) copy; ``t`` itself when the buffer would not be TMA-legal. A batch broadcast
    through stride 0 stays broadcast (one matrix is copied)."""
    source = t[:1] if t.dim() == 3 and t.shape[0] > 1 and t.stride(0) == 0 else t
    rows, cols = source.shape[-2:]
    per16 = max(1, 16 // t.element_size())
    if order == 0:
        lead = -(-cols // per16) * per16
        buffer = torch.empty((*source.shape[:-2], rows, lead), dtype=t.dtype, device=t.device)[..., :cols]
    else:
        lead = -(-rows // per16) * per16
        buffer = torch.empty((*source.shape[:-2], cols, lead), dtype=t.dtype, device=t.device)[..., :rows].mT
    bound = buffer.expand(t.shape)
    if operand_order(bound) != order or not _tma_ok(bound, order):
        return t
    staged.append((buffer, source))
    return bound


# --- ahead-of-time compilation ---------------------------------------------------------------
def example_tensors(problem: GemmProblem, device: str, *, random: bool = True):
    """Random operands (a, b) and an empty output of the problem's sizes, dtypes and layouts, freshly
    allocated (what benchmarks and :mod:`tritonblas.versus` launch with; contiguous storage, so
    their alignment is ``GemmProblem.contiguous_align_bytes``). ``random=False``: the operands
    uninitialised, in their own dtype (no float32 draft), same sizes and strides: what a compile binds
    (its specialisations read shapes, strides and alignment, never data; with random operands a compile
    worker of a 152064 x 3584 GEMM holds 5.7 GiB, and 16 of them run an 80 GB H100 out of memory)."""
    def make(rows, cols, dtype, layout):
        lead = (problem.batch,) if problem.batch > 1 else ()
        dims, dt = ((*lead, cols, rows) if layout is Layout.T else (*lead, rows, cols)), TORCH_DTYPES[dtype]
        t = torch.randn(*dims, device=device).to(dt) if random else torch.empty(*dims, device=device, dtype=dt)
        return t.transpose(-1, -2) if layout is Layout.T else t
    a = make(problem.m, problem.k, problem.a_dtype, problem.a_layout)
    b = make(problem.k, problem.n, problem.b_dtype, problem.b_layout)
    shape = (problem.batch, problem.m, problem.n) if problem.batch > 1 else (problem.m, problem.n)
    out = torch.empty(shape, device=device, dtype=TORCH_DTYPES[problem.c_dtype])
    return a, b, out


_example_tensors = example_tensors  # the name the benchmarks and the precompile workers use


SCALE_KINDS = ("tensor", "row")  # precompile's ``scales``: one element each, or M (a) and N (b) elements


def _example_scales(problem: GemmProblem, device: str, scales: str | None) -> dict:
    """Unit ``scale_a`` / ``scale_b`` of the kind ``scales`` names (None: no scales) for ``problem``:
    the scaled kernels' SCALE_A / SCALE_B constexprs are what precompile must match."""
    if scales is None:  # (precompile checked it is one of SCALE_KINDS)
        return {}
    if scales == "tensor":
        return dict(scale_a=torch.ones((), device=device), scale_b=torch.ones((), device=device))
    return dict(scale_a=torch.ones(problem.m, device=device), scale_b=torch.ones(problem.n, device=device))


def _precompile_one(plan: LaunchPlan, device: str, launch_kwargs: dict, scales: str | None = None,
                    release: bool = False) -> str | None:
    """Compile one plan (or, under the interpreter, run it once); None or the error's text. ``release``
    (a pool worker's call): empty the worker's allocator cache after it."""
    try:
        # under the interpreter the plan runs once: real numbers, so an error is the kernel's
        a, b, out = _example_tensors(plan.problem, device, random=_interpreter.interpreting())
        prepared = prepare_launch(plan, a, b, out, **launch_kwargs, **_example_scales(plan.problem, device, scales))
        if _interpreter.interpreting():
            prepared.run()
        else:
            prepared.compile()
        return None
    except Exception as e:  # noqa: BLE001 - reported per plan, never fatal
        return f"{type(e).__name__}: {e}".splitlines()[0][:500]
    finally:  # a pool worker compiles many shapes: it keeps no cached blocks of the last one's operands
        if release and str(device).startswith("cuda") and torch.cuda.is_initialized():
            torch.cuda.empty_cache()


def precompile(plans: Sequence[LaunchPlan], device: str | torch.device = "cuda", *, workers: int = 0,
               pool: Any = None, scales: str | None = None, **launch_kwargs) -> list[str | None]:
    """Compile plans ahead of time; returns, per plan, None (compiled) or the error text (never raises).

    Each plan is compiled for contiguous example tensors of its problem (``launch_kwargs`` select the
    epilogue variant, e.g. ``allow_tf32`` or ``bias``; ``scales`` = "tensor" or "row" adds unit fp8
    scales of that kind, :data:`SCALE_KINDS`, since a launch with scales is another variant than one
    without: precompiled without them, an fp8 launch with scales compiles again in the launching
    process), bound as a real launch binds them (a staged
    plan's K-major buffers included, so the variant compiled is the one launched), with
    ``JITFunction.warmup``, which compiles without launching. ``workers=0`` compiles one after
    another in this process. ``workers > 0`` uses that many *spawned* processes: each compiles
    into Triton's on-disk cache (``TRITON_CACHE_DIR``, shared by the processes), and this
    process's own first launch then loads the binary from that cache (milliseconds) instead of
    compiling (seconds). Spawn, not fork: CUDA cannot be re-initialised in a forked child.
    Threads do not help: Triton's compiler holds the GIL for most of its work. Under the
    interpreter there is nothing to compile: each plan is run once in-process, so an error still
    shows. ``pool`` (from :func:`compile_pool`) reuses one set of worker processes across calls:
    each spawned worker imports torch and Triton once (seconds) instead of once per call — what a
    sweep over many shapes needs.
    """
    device = str(device)
    if scales is not None and scales not in SCALE_KINDS:
        raise ValueError(f"scales: expected one of {', '.join(SCALE_KINDS)} or None, got {scales!r}")
    if pool is None and (workers <= 0 or _interpreter.interpreting()):
        return [_precompile_one(p, device, launch_kwargs, scales) for p in plans]
    if pool is None:
        with compile_pool(workers) as own:
            return _gather(own, plans, device, launch_kwargs, scales)
    return _gather(pool, plans, device, launch_kwargs, scales)


def compile_pool(workers: int) -> ProcessPoolExecutor:
    """A pool of ``workers`` spawned compile processes for :func:`precompile` (a context manager)."""
    import multiprocessing as mp

    return ProcessPoolExecutor(max_workers=max(1, workers), mp_context=mp.get_context("spawn"))


def _gather(pool: ProcessPoolExecutor, plans: Sequence[LaunchPlan], device: str, launch_kwargs: dict,
            scales: str | None = None) -> list:
    futures = [pool.submit(_precompile_one, p, device, launch_kwargs, scales, True) for p in plans]
    results = []
    for f in futures:
        try:
            results.append(f.result())
        except Exception as e:  # noqa: BLE001 - a crashed worker is reported, not fatal
            results.append(f"{type(e).__name__}: {e}".splitlines()[0][:500])
    return results

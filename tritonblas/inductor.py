"""PyTorch Inductor: origami answers Inductor's GEMM template choice live, for any shape.

    import torch, tritonblas.inductor
    torch._inductor.config.inductor_choices_class = tritonblas.inductor.OrigamiChoices   # or:
    with torch._inductor.virtualized.V.set_choices_handler(tritonblas.inductor.OrigamiChoices()): ...
    torch.compile(model, mode="max-autotune-no-cudagraphs")

:class:`OrigamiChoices` is a ``torch._inductor.lookup_table.LookupTableChoices`` (torch 2.13) that
needs no table: where Inductor asks which configs of its templates to compile for an ``mm``,
``addmm``, ``bmm`` or ``baddbmm``, it answers one config, the best by origami's prediction among
those the offered templates can express (:func:`best_choice`):

- ``triton::mm`` / ``triton::bmm``: data-parallel, GROUP_M swizzle, no chiplet remap
  (``origami.select_among(..., [Kind.DP], chiplet_remap=False)``);
- ``triton::mm_persistent_tma`` (NVIDIA) / ``triton::mm_persistent`` (ROCm): min(SMs, tiles)
  programs looping over tiles: origami's persistent kind at one program per compute unit;
- ``decompose_k`` (mm, K much larger than M and N): ``k_split`` parts as one batched GEMM with fp32
  output, then a sum over the parts: origami's best data-parallel time for that batched problem
  plus the reduction, streamed at the profile's HBM rate, and one launch.

Only that config is compiled (no benchmarking: a lookup hit replaces Inductor's candidate list,
the aten kernel included), so compile time drops to one template per GEMM. An entry of
``torch._inductor.config.lookup_table.table`` for the same key still wins (a measured table beats
the model). Anything origami does not cover falls back to Inductor's own choices, unchanged: other
ops (scaled/int mm), other dtypes (fp8, int8, mixed inputs, an ``out_dtype``), operands without a
unit stride, a device with no profile (CPU, unless ``profile=`` names one), templates it cannot
express (Blackwell warp-specialised, CUTLASS/CK are not lookup templates). The profile comes from
the device (``tritonblas._device``), ``$TRITONBLAS_PROFILE`` or ``profile=``.

fp32 is scored as TF32 where Inductor's template will use TF32 (its rule: fp32_precision "tf32"
and M >= 16 and min(N, K) >= 512). The model predicts tritonblas' own kernels; Inductor's templates
are assumed to run a config as fast as ours (the same tiled algorithm), which the H200 GPU test
compares. The TileConfig -> kwargs mapping is :func:`tritonblas.tables.inductor_kwargs`, shared with
the exported table. Importing this module imports neither torch nor Inductor; the class is built
on first access.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Iterable, Mapping

from origami.config import Kind, TileConfig
from origami.hardware import HardwareProfile, load_profile
from origami.problem import DType, GemmProblem
from origami.select import select_among
from tritonblas.log import logger
from tritonblas.tables import inductor_kwargs

__all__ = ["TEMPLATES", "Choice", "best_choice", "decompose_k_ns", "OrigamiChoices"]

# Inductor template id -> the origami kind that expresses it (decompose_k is scored by decompose_k_ns)
TEMPLATES: Mapping[str, Kind | None] = MappingProxyType({
    "triton::mm": Kind.DP, "triton::bmm": Kind.DP,
    "triton::mm_persistent_tma": Kind.PERSISTENT, "triton::mm_persistent": Kind.PERSISTENT,
    "decompose_k": None,
})
_OPS = {"mm": 1, "addmm": 1, "bmm": 3, "baddbmm": 3}  # op -> operand rank


@dataclass(frozen=True, slots=True)
class Choice:
    """One answer: the template, its kwargs (a lookup-table entry without ``template_id``), the
    model's time for it, and the origami config it stands for (for decompose_k: of the batched GEMM)."""

    template_id: str
    kwargs: Mapping[str, Any]
    latency_ns: float
    config: TileConfig
    k_split: int = 0
    problem: GemmProblem | None = field(default=None, compare=False)


def decompose_k_ns(problem: GemmProblem, hw: HardwareProfile, k_split: int) -> tuple[float, TileConfig]:
    """Predicted time of Inductor's decompose_k with ``k_split`` parts (module docstring) and the
    origami config of its batched GEMM. ValueError where the split does not divide K."""
    if k_split < 2 or problem.k % k_split or problem.batch != 1:
        raise ValueError(f"decompose_k: split {k_split} of {problem.describe()}")
    parts = GemmProblem(problem.m, problem.n, problem.k // k_split, problem.a_dtype, problem.b_dtype, DType.FP32,
                        problem.a_layout, problem.b_layout, k_split, problem.align_bytes)
    est = select_among(parts, hw, (Kind.DP,), chiplet_remap=False)
    moved = problem.m * problem.n * (4 * k_split + problem.c_dtype.bytes)
    hbm = hw.memory["hbm_bytes_per_s"] * hw.model["hbm_efficiency"]
    return est.latency_ns + moved / hbm * 1e9 + hw.launch_overhead_ns, est.config


def best_choice(problem: GemmProblem, hw: "HardwareProfile | str", templates: Iterable[str], *,
                k_splits: Iterable[int] = (), even_k: bool | None = None) -> Choice | None:
    """The best config, by origami's prediction, among what ``templates`` (Inductor template ids;
    others are ignored) can express for ``problem``; None when none of them can. ``k_splits``: the
    decompose_k splits Inductor offers; ``even_k``: passed to :func:`~tritonblas.tables.inductor_kwargs`.
    Ties go to the first template in ``templates``."""
    hw = load_profile(hw)
    best: Choice | None = None
    for tid in dict.fromkeys(templates):
        if tid not in TEMPLATES:
            continue
        kind = TEMPLATES[tid]
        found = []
        if kind is not None:
            try:
                est = select_among(problem, hw, (kind,), chiplet_remap=False,
                                   grid_per_cu=1 if kind is Kind.PERSISTENT else None)
            except ValueError:
                continue
            found.append(Choice(tid, MappingProxyType(inductor_kwargs(est.config, problem, even_k=even_k)),
                                est.latency_ns, est.config, 0, problem))
        elif problem.batch == 1:
            for s in k_splits:
                try:
                    ns, cfg = decompose_k_ns(problem, hw, s)
                except ValueError:
                    continue
                found.append(Choice(tid, MappingProxyType({"k_split": s}), ns, cfg, s, problem))
        for c in found:
            if best is None or c.latency_ns < best.latency_ns:
                best = c
    return best


class _Unsupported(Exception):
    pass


def _build_class():
    import torch
    from torch._inductor.lookup_table import LookupTableChoices

    from tritonblas import __version__
    from tritonblas import dispatch

    class OrigamiChoices(LookupTableChoices):
        """Inductor's choices handler with origami's pick for every GEMM it can express (module
        docstring). ``profile``: a profile name, path or loaded profile (default: the device's)."""

        def __init__(self, profile: "str | HardwareProfile | None" = None):
            if profile is not None:
                load_profile(profile)  # a bad name fails here, not deep inside Inductor's compile
            super().__init__()
            self.profile = profile

        def uuid(self) -> str:
            """Inductor's cache key for this handler (``config.inductor_choices_class``)."""
            prof = self.profile
            if prof is not None:
                prof = load_profile(prof).content_hash
            return f"tritonblas.inductor.OrigamiChoices:{__version__}:{prof or 'device'}"

        def lookup_template_configs(self, kernel_inputs, op_name, template_uids, template_hash_map=None):
            hit = super().lookup_template_configs(kernel_inputs, op_name, template_uids, template_hash_map)
            if hit:
                return hit
            choice = self.choose(kernel_inputs, op_name, template_uids)
            return {} if choice is None else {choice.template_id: [dict(choice.kwargs)]}

        def choose(self, kernel_inputs, op_name: str, template_uids) -> Choice | None:
            """origami's answer for one Inductor GEMM, or None (Inductor's own choices then)."""
            try:
                problem, hw, static_k = self._problem(kernel_inputs, op_name)
            except _Unsupported as e:
                logger.debug("inductor: %s falls back to Inductor's choices: %s", op_name, e)
                return None
            splits = ()
            if "decompose_k" in template_uids and static_k:
                from torch._inductor.utils import get_k_splits

                splits = [s for s in get_k_splits(problem.m, problem.n, problem.k) if problem.k % s == 0]
            choice = best_choice(problem, hw, template_uids, k_splits=splits, even_k=None if static_k else False)
            if choice is None:
                logger.debug("inductor: %s %s: no offered template is expressible (%s)", op_name,
                             problem.describe(), ", ".join(template_uids))
            else:
                logger.info("inductor: %s %s -> %s %s (predicted %.1f us, %s)", op_name, problem.describe(),
                            choice.template_id, choice.config.short() if not choice.k_split
                            else f"k_split={choice.k_split}", choice.latency_ns / 1e3, hw.name)
            return choice

        def _problem(self, kernel_inputs, op_name: str) -> tuple[GemmProblem, HardwareProfile, bool]:
            from torch._inductor.kernel_inputs import MMKernelInputs

            rank = _OPS.get(op_name)
            if rank is None or not isinstance(kernel_inputs, MMKernelInputs):
                raise _Unsupported(f"op {op_name} is not a plain GEMM")
            device = kernel_inputs.device()
            if self.profile is None and not dispatch.has_profile(device):
                raise _Unsupported(f"no hardware profile for device {device}")
            nodes = kernel_inputs.nodes()
            i1, i2 = (i % len(nodes) for i in (kernel_inputs._mat1_idx, kernel_inputs._mat2_idx))
            mat1, mat2 = nodes[i1], nodes[i2]
            dt = {mat1.get_dtype(), mat2.get_dtype(), kernel_inputs.out_dtype()}
            if len(dt) != 1 or next(iter(dt)) not in dispatch.KERNEL_DTYPES:
                raise _Unsupported(f"dtypes {sorted(map(str, dt))}")
            shapes, strides = kernel_inputs.shapes_hinted(), kernel_inputs.strides_hinted()
            (sa, sb), (ta, tb) = (shapes[i1], shapes[i2]), (strides[i1], strides[i2])
            if len(sa) != len(sb) or len(sa) not in (2, 3):
                raise _Unsupported(f"operand ranks {len(sa)}, {len(sb)}")
            m, k, n = int(sa[-2]), int(sa[-1]), int(sb[-1])
            batch = int(sa[0]) if len(sa) == 3 else 1
            torch_dt = next(iter(dt))
            tf32 = (torch_dt == torch.float32 and torch.backends.cuda.matmul.fp32_precision == "tf32"
                    and m >= 16 and min(n, k) >= 512)  # Inductor's ALLOW_TF32 rule (MMTemplateConfigMixin)
            d = dispatch.dtype_of(torch_dt, tf32=tf32)
            la, lda = _layout(sa, ta)
            lb, ldb = _layout(sb, tb)
            align = 16
            for ld in (lda, ldb):  # base pointers 16-byte aligned, as Inductor's own buffers are
                while align > 1 and (ld * torch_dt.itemsize) % align:
                    align //= 2
            try:
                problem = GemmProblem(m, n, k, d, d, d if d is not DType.TF32 else DType.FP32, la, lb, batch, align)
            except ValueError as e:
                raise _Unsupported(str(e)) from None
            if m == 0 or n == 0 or k == 0 or batch == 0:
                raise _Unsupported("empty GEMM")
            hw = dispatch.device_info(device, self.profile).plan_profile
            k_sym = mat1.get_size()[-1]
            return problem, hw, bool(getattr(k_sym, "is_number", True))

    return OrigamiChoices


def _layout(shape, stride) -> tuple[str, int]:
    """("N", leading stride) for a row-major operand, ("T", ...) for a column-major one."""
    rows, cols = int(shape[-2]), int(shape[-1])
    sr, sc = int(stride[-2]), int(stride[-1])
    if sc == 1 and (sr >= cols or rows == 1):
        return "N", max(sr, cols)
    if sr == 1 and (sc >= rows or cols == 1):
        return "T", max(sc, rows)
    raise _Unsupported(f"operand strides {list(stride)} have no unit stride")


def __getattr__(name: str):
    if name == "OrigamiChoices":
        cls = _build_class()
        globals()[name] = cls
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""The GEMM problem: dtypes, layouts and sizes, as the model and the kernels both see it.

``C[b] = A[b] @ B[b]`` with ``A: M×K``, ``B: K×N``, ``C: M×N``. A layout names which dimension is
contiguous in memory: ``N`` means row-major storage of the operand as written (K contiguous for A,
N contiguous for B, N contiguous for C); ``T`` means a transposed view (M contiguous for A, K
contiguous for B).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = ["DType", "Layout", "GemmProblem", "TMA_STORE_GRANULE", "tma_store_exact"]


class DType(str, enum.Enum):
    """Element types by their contract names (DESIGN.md §3)."""

    FP32 = "fp32"
    TF32 = "tf32"
    FP16 = "fp16"
    BF16 = "bf16"
    FP8_E4M3 = "fp8_e4m3"
    FP8_E5M2 = "fp8_e5m2"
    # AMD gfx942's fp8 encodings (torch.float8_e4m3fnuz / e5m2fnuz: no negative zero, no infinity, bias one
    # higher than OCP's): the only fp8 its matrix cores take (HardwareProfile.rate_key)
    FP8_E4M3_FNUZ = "fp8_e4m3fnuz"
    FP8_E5M2_FNUZ = "fp8_e5m2fnuz"
    INT8 = "int8"

    @property
    def bytes(self) -> int:
        return _BYTES[self]

    @property
    def default_output(self) -> "DType":
        """The output dtype a GEMM on this input type produces by default (CLI, sweeps): fp32 for
        fp32/tf32, bf16 for fp8, otherwise the input type itself."""
        if self in (DType.FP32, DType.TF32):
            return DType.FP32
        if self in FP8_DTYPES:
            return DType.BF16
        return self

    @property
    def rate_key(self) -> str:
        """The key of the profile's ``matrix.peak_flops`` table naming this input type's class (fp8 for every
        fp8 encoding). The rate the kernels run it at on a given GPU is ``HardwareProfile.rate_key(dtype)``'s,
        which knows the encodings each architecture's matrix cores take."""
        return _RATE_KEY[self]

    @property
    def fnuz(self) -> bool:
        """Whether this is one of AMD gfx942's fp8 encodings (``*_FNUZ``)."""
        return self in (DType.FP8_E4M3_FNUZ, DType.FP8_E5M2_FNUZ)

    @classmethod
    def parse(cls, value: "DType | str", what: str = "dtype") -> "DType":
        if isinstance(value, cls):
            return value
        try:
            return cls(value)
        except ValueError:
            allowed = ", ".join(d.value for d in cls)
            raise ValueError(f"{what}: unknown dtype {value!r}; expected one of {allowed}") from None


_BYTES = {
    DType.FP32: 4, DType.TF32: 4, DType.FP16: 2, DType.BF16: 2,
    DType.FP8_E4M3: 1, DType.FP8_E5M2: 1, DType.FP8_E4M3_FNUZ: 1, DType.FP8_E5M2_FNUZ: 1, DType.INT8: 1,
}
_RATE_KEY = {
    DType.FP32: "fp32", DType.TF32: "tf32", DType.FP16: "fp16", DType.BF16: "bf16",
    DType.FP8_E4M3: "fp8", DType.FP8_E5M2: "fp8", DType.FP8_E4M3_FNUZ: "fp8", DType.FP8_E5M2_FNUZ: "fp8",
    DType.INT8: "int8",
}
FP8_DTYPES = frozenset({DType.FP8_E4M3, DType.FP8_E5M2, DType.FP8_E4M3_FNUZ, DType.FP8_E5M2_FNUZ})


class Layout(str, enum.Enum):
    N = "N"
    T = "T"

    @classmethod
    def parse(cls, value: "Layout | str", what: str = "layout") -> "Layout":
        if isinstance(value, cls):
            return value
        try:
            return cls(value)
        except ValueError:
            raise ValueError(f"{what}: unknown layout {value!r}; expected 'N' or 'T'") from None


_ALIGNMENTS = (1, 2, 4, 8, 16)

# The supported range of a problem's sizes. Each of m, n, k, batch must fit the kernels' 32-bit
# program-id, row, column and K-iteration arithmetic (element offsets are int64, so operands of more
# than 2^31 elements are fine). The output (batch·m·n elements) is bounded so that its tile ids,
# 32-bit in the kernels, cannot overflow for the smallest legal tile (16×16: 2^39 / 2^8 = 2^31
# tiles); 2^39 elements is 1 TiB of fp16, above every profile's memory. Within these bounds the
# model's int64 counts stay exact and its float64 times finite (tests/origami/test_select_api.py).
MAX_DIM = 2**31 - 1
MAX_OUTPUT_ELEMENTS = 2**39


@dataclass(frozen=True, slots=True)
class GemmProblem:
    """One GEMM, hashable, validated at construction.

    ``align_bytes`` is the largest power of two ≤ 16 that divides every operand's base address and
    leading-dimension stride in bytes; 16 means "TMA / 128-bit vector loads are legal".

    Sizes: each of m, n, k, batch in 0..2^31 − 1 and batch·m·n ≤ 2^39 (``MAX_DIM``,
    ``MAX_OUTPUT_ELEMENTS``: what the kernels' 32-bit tile arithmetic supports); outside it
    ``ValueError`` names the dimension and the range.
    """

    m: int
    n: int
    k: int
    a_dtype: DType = DType.BF16
    b_dtype: DType = DType.BF16
    c_dtype: DType = DType.BF16
    a_layout: Layout = Layout.N
    b_layout: Layout = Layout.N
    batch: int = 1
    align_bytes: int = 16

    def __post_init__(self) -> None:
        for name in ("m", "n", "k", "batch"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int):
                raise TypeError(f"GemmProblem.{name}: expected an int, got {v!r}")
            if not 0 <= v <= MAX_DIM:
                raise ValueError(f"GemmProblem.{name}: must be in 0..{MAX_DIM} (2^31 - 1), got {v}")
        if self.batch * self.m * self.n > MAX_OUTPUT_ELEMENTS:
            raise ValueError(f"GemmProblem: batch·m·n = {self.batch}·{self.m}·{self.n} output elements; the "
                             f"supported range is at most 2^39 = {MAX_OUTPUT_ELEMENTS}")
        for name in ("a_dtype", "b_dtype", "c_dtype"):
            object.__setattr__(self, name, DType.parse(getattr(self, name), f"GemmProblem.{name}"))
        for name in ("a_layout", "b_layout"):
            object.__setattr__(self, name, Layout.parse(getattr(self, name), f"GemmProblem.{name}"))
        if self.align_bytes not in _ALIGNMENTS:
            raise ValueError(f"GemmProblem.align_bytes: expected one of {_ALIGNMENTS}, got {self.align_bytes!r}")

    @property
    def flops(self) -> int:
        return 2 * self.m * self.n * self.k * self.batch

    @property
    def min_bytes(self) -> int:
        """Compulsory HBM traffic: read A and B once, write C once."""
        return self.batch * (
            self.m * self.k * self.a_dtype.bytes
            + self.k * self.n * self.b_dtype.bytes
            + self.m * self.n * self.c_dtype.bytes
        )

    @staticmethod
    def contiguous_align_bytes(m: int, n: int, k: int, a_dtype: "DType | str" = "bf16", b_dtype: "DType | str" = "bf16",
                               c_dtype: "DType | str" = "bf16", a_layout: "Layout | str" = "N",
                               b_layout: "Layout | str" = "N", batch: int = 1) -> int:
        """``align_bytes`` of freshly allocated contiguous operands of this shape (16-byte aligned
        base addresses): :func:`stride_align_bytes` of a, b and out (what
        ``tritonblas.plan.alignment_bytes`` computes from such tensors; a test checks it).
        4096x1000x7000 bf16 → 16; 2048x511x4099 bf16 → 2."""
        ea, eb, ec = (DType.parse(d, "dtype").bytes for d in (a_dtype, b_dtype, c_dtype))

        def one(rows: int, cols: int, layout: "Layout | str", e: int) -> int:
            transposed = Layout.parse(layout, "layout") is Layout.T  # stored as a row-major (cols, rows)
            strides = (1, rows) if transposed else (cols, 1)
            return stride_align_bytes(rows, cols, *strides, rows * cols if batch > 1 else 0, e)

        return min(one(m, k, a_layout, ea), one(k, n, b_layout, eb), one(m, n, "N", ec))

    def describe(self) -> str:
        b = f"{self.batch}x" if self.batch != 1 else ""
        return (f"{b}{self.m}x{self.n}x{self.k} {self.a_dtype.value}{self.a_layout.value}"
                f"·{self.b_dtype.value}{self.b_layout.value}->{self.c_dtype.value}")


def layout_order(n0: int, n1: int, s0: int, s1: int) -> int:
    """Which of a matrix's two dims (sizes n0, n1, strides s0, s1 in elements) the kernels treat as
    contiguous: 0 the last, 1 the first, 2 neither. A unit-stride dim of size > 1 wins; a size-1
    dim counts as unit. (``tritonblas.plan`` uses this for tensors.)"""
    if s1 == 1 and n1 > 1:
        return 0
    if s0 == 1 and n0 > 1:
        return 1
    if n1 <= 1:
        return 0
    if n0 <= 1:
        return 1
    return 2


def stride_align_bytes(n0: int, n1: int, s0: int, s1: int, batch_stride: int, elem_bytes: int, base: int = 0) -> int:
    """Largest power of two ≤ 16 dividing, in bytes, the base address and every stride a kernel
    multiplies by an index: the batch stride, and the stride of each dim of size > 1 that is not the
    contiguous one (:func:`layout_order`). ``GemmProblem.align_bytes`` is the minimum over a, b, out."""
    order = layout_order(n0, n1, s0, s1)
    values = [base, batch_stride * elem_bytes]
    if order != 0 and n1 > 1:
        values.append(s1 * elem_bytes)
    if order != 1 and n0 > 1:
        values.append(s0 * elem_bytes)
    align = 16
    for v in values:
        while align > 1 and v % align:
            align //= 2
    return align


# The TMA unit writes global memory in whole 16-byte chunks: a store whose box ends past a row's
# inner extent clips rows (M) exactly but writes the columns up to the next 16-byte boundary. Seen
# on the H200 (2026-12-01, tests/kernels/test_gluon_hopper_gpu.py): C = out_buf[:127, :255] in a
# NaN-filled (135, 256) bf16 buffer had column 255 written in all 127 rows, out_buf[:300, :257] of
# (308, 264) columns 257..263 (2,100 elements). Triton documents it (triton-lang/triton#11583).
TMA_STORE_GRANULE = 16


def tma_store_exact(inner: int, elem_bytes: int) -> bool:
    """Whether a TMA store into a tensor whose contiguous dim has ``inner`` elements writes nothing
    past it (:data:`TMA_STORE_GRANULE`): its byte length is a whole number of 16-byte chunks. Every
    kernel that stores through a tensor descriptor checks this on the host first, or a column slice
    of a larger tensor would get its neighbour's elements overwritten."""
    return inner > 0 and (inner * elem_bytes) % TMA_STORE_GRANULE == 0

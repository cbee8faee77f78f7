"""The GEMM problem: dtypes, layouts and sizes, as the model and the kernels both see it.

``C[b] = A[b] @ B[b]`` with ``A: M×K``, ``B: K×N``, ``C: M×N``. A layout names which dimension is
contiguous in memory: ``N`` means row-major storage of the operand as written (K contiguous for A,
N contiguous for B, N contiguous for C); ``T`` means a transposed view (M contiguous for A, K
contiguous for B).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = ["DType", "Layout", "GemmProblem"]


class DType(str, enum.Enum):
    """Element types by their contract names (DESIGN.md §3)."""

    FP32 = "fp32"
    TF32 = "tf32"
    FP16 = "fp16"
    BF16 = "bf16"
    FP8_E4M3 = "fp8_e4m3"
    FP8_E5M2 = "fp8_e5m2"
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
        if self in (DType.FP8_E4M3, DType.FP8_E5M2):
            return DType.BF16
        return self

    @property
    def rate_key(self) -> str:
        """The key of the profile's ``matrix.peak_flops`` table giving this input type's rate."""
        return _RATE_KEY[self]

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
    DType.FP8_E4M3: 1, DType.FP8_E5M2: 1, DType.INT8: 1,
}
_RATE_KEY = {
    DType.FP32: "fp32", DType.TF32: "tf32", DType.FP16: "fp16", DType.BF16: "bf16",
    DType.FP8_E4M3: "fp8", DType.FP8_E5M2: "fp8", DType.INT8: "int8",
}


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


@dataclass(frozen=True, slots=True)
class GemmProblem:
    """One GEMM, hashable, validated at construction.

    ``align_bytes`` is the largest power of two ≤ 16 that divides every operand's base address and
    leading-dimension stride in bytes; 16 means "TMA / 128-bit vector loads are legal".
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
            if v < 0:
                raise ValueError(f"GemmProblem.{name}: must be >= 0, got {v}")
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
        base addresses): the largest power of two ≤ 16 dividing, in bytes, every stride a kernel
        multiplies by an index — the leading dimensions (K·2 bytes for a bf16 row-major A) and the
        batch strides; unit strides and size-1 dims do not count (``tritonblas.plan.alignment_bytes``
        on such tensors gives the same). 4096x1000x7000 bf16 → 16; 2048x511x4099 bf16 → 2."""
        ea, eb, ec = (DType.parse(d, "dtype").bytes for d in (a_dtype, b_dtype, c_dtype))
        a_n, b_n = Layout.parse(a_layout, "a_layout") is Layout.N, Layout.parse(b_layout, "b_layout") is Layout.N
        strides = []  # (stride in bytes, size of the dim it steps over)
        strides.append((k * ea, m) if a_n else (m * ea, k))
        strides.append((n * eb, k) if b_n else (k * eb, n))
        strides.append((n * ec, m))
        if batch > 1:
            strides += [(m * k * ea, batch), (k * n * eb, batch), (m * n * ec, batch)]
        align = 16
        for st, size in strides:
            if size > 1 and st > 0:
                while align > 1 and st % align:
                    align //= 2
        return align

    def describe(self) -> str:
        b = f"{self.batch}x" if self.batch != 1 else ""
        return (f"{b}{self.m}x{self.n}x{self.k} {self.a_dtype.value}{self.a_layout.value}"
                f"·{self.b_dtype.value}{self.b_layout.value}->{self.c_dtype.value}")

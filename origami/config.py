"""TileConfig: every launch knob of one kernel configuration (the model ↔ kernel contract).

Neutral values mean "not used": ``grid = 0`` (one program per tile), ``split_k = 1``,
``num_chiplets = chunk = 1`` (no chiplet remap), AMD extras ``None`` on NVIDIA profiles.
"""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass, fields
from typing import Any, Mapping

__all__ = ["Kind", "TileConfig", "TRITON_NAMES", "checked_names"]

# TileConfig field -> the constexpr a Triton kernel takes it as (to_triton_config's default; the
# names of Triton's matmul tutorial, BLOCK_SIZE_M..., are also read by from_triton_config).
TRITON_NAMES: Mapping[str, str] = {"block_m": "BLOCK_M", "block_n": "BLOCK_N", "block_k": "BLOCK_K", "group_m": "GROUP_M"}
_TUTORIAL_NAMES = {"block_m": "BLOCK_SIZE_M", "block_n": "BLOCK_SIZE_N", "block_k": "BLOCK_SIZE_K",
                   "group_m": "GROUP_SIZE_M"}
_AMD_FIELDS = ("waves_per_eu", "matrix_instr_nonkdim", "kpack")


class Kind(str, enum.Enum):
    DP = "dp"                  # one program per output tile
    PERSISTENT = "persistent"  # grid = resident programs, each loops over tiles
    STREAMK = "streamk"        # full waves data-parallel, remainder K-iterations split over the grid
    SPLITK = "splitk"          # every tile's K range split in split_k parts, ordered reduction
    WS = "ws"                  # warp-specialised persistent (Hopper, Gluon): a TMA producer warp, the
                               # epilogue of one tile overlapping the loads of the next (origami.space.check_ws)


_POW2 = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512}


@dataclass(frozen=True, slots=True)
class TileConfig:
    kind: Kind
    block_m: int
    block_n: int
    block_k: int
    num_warps: int
    num_stages: int
    group_m: int = 8
    num_chiplets: int = 1
    chunk: int = 1
    grid: int = 0
    split_k: int = 1
    waves_per_eu: int | None = None
    matrix_instr_nonkdim: int | None = None
    kpack: int | None = None

    def __post_init__(self) -> None:
        # Runs for every config the model hands out (select, select_many, tables): kept lean
        # (field names precomputed, no dataclasses.fields() call per instance).
        if type(self.kind) is not Kind:
            try:
                object.__setattr__(self, "kind", Kind(self.kind))
            except ValueError:
                raise ValueError(f"TileConfig.kind: expected one of {[k.value for k in Kind]}, "
                                 f"got {self.kind!r}") from None
        for name in _INT_FIELDS:
            v = getattr(self, name)
            if type(v) is int or (v is None and name in _OPTIONAL_FIELDS):
                continue
            if isinstance(v, bool) or not isinstance(v, int):
                raise TypeError(f"TileConfig.{name}: expected an int, got {v!r}")
        for name in ("block_m", "block_n", "block_k"):
            v = getattr(self, name)
            if v not in _POW2 or v < 16:
                raise ValueError(f"TileConfig.{name}: must be a power of two in 16..512, got {v}")
        if self.num_warps not in (1, 2, 4, 8, 16):
            raise ValueError(f"TileConfig.num_warps: must be one of 1, 2, 4, 8, 16, got {self.num_warps}")
        if not 1 <= self.num_stages <= 8:
            raise ValueError(f"TileConfig.num_stages: must be in 1..8, got {self.num_stages}")
        for name in ("group_m", "num_chiplets", "chunk", "split_k"):
            if getattr(self, name) < 1:
                raise ValueError(f"TileConfig.{name}: must be >= 1, got {getattr(self, name)}")
        if self.grid < 0:
            raise ValueError(f"TileConfig.grid: must be >= 0, got {self.grid}")
        if self.kind is not Kind.SPLITK and self.split_k != 1:
            raise ValueError(f"TileConfig.split_k: only kind 'splitk' splits K, got split_k={self.split_k} "
                             f"for kind {self.kind.value!r}")
        if self.kind in (Kind.PERSISTENT, Kind.STREAMK, Kind.WS) and self.grid == 0:
            raise ValueError(f"TileConfig.grid: kind {self.kind.value!r} needs an explicit grid > 0")

    def to_dict(self) -> dict:
        d = asdict(self)
        d["kind"] = self.kind.value
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "TileConfig":
        names = {f.name for f in fields(cls)}
        unknown = set(d) - names
        if unknown:
            raise ValueError(f"TileConfig: unknown field(s) {sorted(unknown)}")
        return cls(**d)

    def to_triton_config(self, names: Mapping[str, str] | None = None) -> Any:
        """The ``triton.Config`` a user's data-parallel kernel gets for this config: BLOCK_M, BLOCK_N,
        BLOCK_K and GROUP_M as constexpr kwargs (renamed by ``names``, e.g.
        ``{"block_m": "BLOCK_SIZE_M"}``), ``num_warps``, ``num_stages``, and on AMD configs the
        ``waves_per_eu``, ``matrix_instr_nonkdim`` and ``kpack`` kwargs that Triton's AMD backend
        reads as compile options. Imports triton here (origami itself never does).

        Only kind ``dp`` maps: a persistent, Stream-K or split-K config needs its own kernel
        (tritonblas.kernels), not a tile size for someone else's; ValueError names ``kind``."""
        if self.kind is not Kind.DP:
            raise ValueError(f"TileConfig.kind: only 'dp' configs map to a triton.Config for a user kernel, "
                             f"got {self.kind.value!r} ({self.short()})")
        names = checked_names(names)
        import triton

        kwargs = {names[f]: getattr(self, f) for f in TRITON_NAMES}
        kwargs.update({f: getattr(self, f) for f in _AMD_FIELDS if getattr(self, f) is not None})
        return triton.Config(kwargs, num_warps=self.num_warps, num_stages=self.num_stages)

    @classmethod
    def from_triton_config(cls, config: Any, names: Mapping[str, str] | None = None) -> "TileConfig":
        """The dp TileConfig of a ``triton.Config`` (anything with ``kwargs``, ``num_warps`` and
        ``num_stages``): block sizes under ``names`` or the default (BLOCK_M, ...) or tutorial
        (BLOCK_SIZE_M, ...) names; GROUP_M absent means 1 (no swizzle); AMD kwargs when present.
        ValueError names the missing constexpr, or a bad ``names`` (:func:`checked_names`)."""
        if names:
            checked_names(names)  # a typo'd field was ignored: the default names were read instead
        kw = dict(getattr(config, "kwargs", None) or {})
        values: dict[str, Any] = {}
        for f in TRITON_NAMES:
            keys = [k for k in ((names or {}).get(f), TRITON_NAMES[f], _TUTORIAL_NAMES[f]) if k]
            hit = next((k for k in keys if k in kw), None)
            if hit is None:
                if f == "group_m":
                    values[f] = 1
                    continue
                raise ValueError(f"triton.Config {kw}: no {' / '.join(keys)} constexpr for TileConfig.{f}")
            values[f] = kw[hit]
        values.update({f: kw[f] for f in _AMD_FIELDS if f in kw})
        return cls(Kind.DP, num_warps=config.num_warps, num_stages=config.num_stages, **values)

    def short(self) -> str:
        s = (f"{self.kind.value} {self.block_m}x{self.block_n}x{self.block_k} "
             f"w{self.num_warps} s{self.num_stages} g{self.group_m}")
        if self.num_chiplets > 1:
            s += f" remap{self.num_chiplets}/{self.chunk}"
        if self.grid:
            s += f" grid{self.grid}"
        if self.split_k > 1:
            s += f" split{self.split_k}"
        if self.waves_per_eu is not None:
            s += f" wpe{self.waves_per_eu} mi{self.matrix_instr_nonkdim} kp{self.kpack}"
        return s


def checked_names(names: Mapping[str, str] | None) -> dict[str, str]:
    """TRITON_NAMES overridden by ``names``: keys TileConfig fields of TRITON_NAMES, values distinct
    identifiers (a typo'd key was ignored, two fields under one name silently lost one of them)."""
    names = dict(names or {})
    unknown = sorted(map(repr, set(names) - set(TRITON_NAMES)))
    if unknown:
        raise ValueError(f"names: unknown TileConfig field(s) {', '.join(unknown)}; expected some of "
                         f"{', '.join(TRITON_NAMES)}")
    bad = [f"{k}={v!r}" for k, v in names.items() if not (isinstance(v, str) and v.isidentifier())]
    if bad:
        raise ValueError(f"names: constexpr names must be identifiers, got {', '.join(bad)}")
    out = {**TRITON_NAMES, **names}
    if len(set(out.values())) != len(out):
        raise ValueError(f"names: two fields map to one constexpr name: {out}")
    return out


_INT_FIELDS = tuple(f.name for f in fields(TileConfig) if f.name != "kind")
_OPTIONAL_FIELDS = frozenset(("waves_per_eu", "matrix_instr_nonkdim", "kpack"))

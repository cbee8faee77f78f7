"""TileConfig: every launch knob of one kernel configuration (the model ↔ kernel contract).

Neutral values mean "not used": ``grid = 0`` (one program per tile), ``split_k = 1``,
``num_chiplets = chunk = 1`` (no chiplet remap), AMD extras ``None`` on NVIDIA profiles.
"""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass, fields

__all__ = ["Kind", "TileConfig"]


class Kind(str, enum.Enum):
    DP = "dp"                  # one program per output tile
    PERSISTENT = "persistent"  # grid = resident programs, each loops over tiles
    STREAMK = "streamk"        # full waves data-parallel, remainder K-iterations split over the grid
    SPLITK = "splitk"          # every tile's K range split in split_k parts, ordered reduction


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
        if self.kind in (Kind.PERSISTENT, Kind.STREAMK) and self.grid == 0:
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


_INT_FIELDS = tuple(f.name for f in fields(TileConfig) if f.name != "kind")
_OPTIONAL_FIELDS = frozenset(("waves_per_eu", "matrix_instr_nonkdim", "kpack"))

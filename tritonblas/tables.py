"""Tile tables: offline shape → TileConfig maps (DESIGN.md §7), versioned, checksummed, written atomically.

A table records the model's decision for each problem of a shapes file, so a process can skip the
model for those shapes, or another tool (PyTorch Inductor) can use the same tiles.

File (``--format json``, the native format; ``csv`` carries the same content)::

    {"format": "tritonblas-tile-table", "format_version": 1, "generator": "tritonblas 0.1.0",
     "triton_version": "3.6.0" | null, "profile": {"name", "arch", "content_hash"},
     "created": "2026-01-31T12:00:00Z", "key_fields": [...],
     "entries": {"4096,4096,4096,1,bf16,bf16,bf16,N,N,16": {TileConfig.to_dict()}, ...},
     "checksum": "sha256:<hex>"}

- **Key**: ``m,n,k,batch,a_dtype,b_dtype,c_dtype,a_layout,b_layout,align_bytes`` (:func:`problem_key`);
  a lookup is an exact match on every :class:`~origami.GemmProblem` field, ``align_bytes`` included.
- **Checksum**: SHA-256 of ``json.dumps(document without "checksum", sort_keys=True,
  separators=(",", ":"), ensure_ascii=True)``. It does not depend on the file format, so a table
  converted from JSON to CSV keeps its checksum.
- **CSV**: ``#`` provenance lines (``# name: <JSON value>``), then a header ``m, n, k, batch, a_dtype,
  b_dtype, c_dtype, a_layout, b_layout, align_bytes`` + one column per TileConfig field (the sweep CSV
  columns of DESIGN.md §8; enum values as their value, ``None`` as an empty cell), one row per entry.
- **Inductor** (:func:`render_inductor`): a ``torch._inductor.config.lookup_table.table`` dict
  (see that function); write-only.

Loading (:func:`load_table`). A file that cannot be trusted as a whole — unreadable, truncated or
not parseable, foreign (not a tritonblas table), a checksum mismatch, a duplicate key, stale (another
``format_version``, another profile content hash, another Triton minor version) — is ignored: ONE
:class:`TableWarning` naming the file and the reason, and an *empty* table is returned, so every
lookup misses and the model decides. ``strict=True`` raises :class:`TableError` (a ``ValueError``)
with the same message instead. A table is never partially applied for those reasons.

Entries are then checked with the model's shared predicates (:func:`origami.space.violations`, plus
:class:`~origami.TileConfig` construction, which rejects ``BLOCK_M=96`` or ``num_warps=3``). A bad
entry is a local defect in an otherwise intact, checksummed file (the checksum was recomputed by
whoever wrote it), so only that entry is dropped: one :class:`TableWarning` lists the dropped keys
and reasons, and the rest of the table stays in use. ``strict=True`` raises on the first bad entry.

Vendor entries: an entry may say ``{"kind": "torch", <every other TileConfig field>: null}`` (CSV: kind
cell ``torch``, the other cells empty), the :data:`VENDOR` marker: for that problem the dispatcher runs
torch's own GEMM (cuBLAS / hipBLASLt) instead of a tritonblas kernel (``dispatch.stats()["vendor"]``).
The model never writes one; :mod:`tritonblas.versus` does, from measurements (our pick vs torch on the
device). Inductor renders skip them (Inductor then makes its own choice). A tritonblas that predates
them drops such an entry at load with the usual one-warning ("unknown kind"), the rest of the table
stays in use.

Dispatcher hook: :func:`lookup` ``(problem, profile) -> TileConfig | None`` consults the active table (a :class:`~origami.TileConfig`, :data:`VENDOR`, or None):
the one given to :func:`set_table`, else ``$TRITONBLAS_TABLE`` (a path, read at call time; the file is
reloaded when it changes). A table made for another profile (content hash) is not used for that
profile (one warning per table and profile). ``None`` means "the model decides".

Writing (:func:`write_table`, :class:`AtomicFile`): a temp file in the destination's directory, flush +
fsync, ``os.replace``, fsync of the directory. A writer killed at any point leaves the previous file
or the new one, never a partial one (a kill may leave its own ``.<name>.*.tmp`` behind: nothing can
clean up after SIGKILL); concurrent writers each stage their own temp file, the last rename wins.

Generation (:func:`make_table`) runs ``origami.select.select_many_arrays`` (one parallel numba call per
dtype/layout class and chunk) and builds one TileConfig per distinct (candidate row, grid), not one per
problem. This module imports neither torch nor triton.
"""

from __future__ import annotations

import csv
import datetime as _dt
import hashlib
import io
import json
import logging
import os
import tempfile
import threading
import warnings
from dataclasses import dataclass, field, fields
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from origami._yaml import DuplicateKey, unique_keys
from origami.config import Kind, TileConfig
from origami.hardware import HardwareProfile, ProfileError, load_profile
from origami.problem import DType, GemmProblem, Layout
from origami.toolchain import installed_triton
from tritonblas.log import TableWarning, logger

__all__ = [
    "FORMAT", "FORMAT_VERSION", "ENV_TABLE", "KEY_FIELDS", "CONFIG_FIELDS", "FORMATS",
    "TableWarning", "TableError", "TileTable", "AtomicFile",
    "problem_key", "parse_key", "make_table", "render", "render_inductor", "inductor_kwargs", "dump_inductor",
    "write_table", "load_table", "set_table", "active_table", "lookup", "clear_cache", "table_token", "GENERATION",
    "VENDOR", "table_of", "explicit_table",
]

FORMAT = "tritonblas-tile-table"
FORMAT_VERSION = 1
from tritonblas.settings import ENV_TABLE  # noqa: E402
KEY_FIELDS = ("m", "n", "k", "batch", "a_dtype", "b_dtype", "c_dtype", "a_layout", "b_layout", "align_bytes")
CONFIG_FIELDS = tuple(f.name for f in fields(TileConfig))
FORMATS = ("json", "csv", "inductor")
CHUNK = 1 << 14  # problems per select_many_arrays call (progress granularity; costs nothing measurable)
_MAX_LISTED = 5  # bad entries named in one warning


class _Vendor:
    """The type of :data:`VENDOR`: an entry that sends its problem to torch's own GEMM."""

    __slots__ = ()
    kind = None  # no tritonblas kernel kind: ``entry.kind is Kind.WS`` and friends are False

    def to_dict(self) -> dict:
        return {**{f: None for f in CONFIG_FIELDS}, "kind": "torch"}

    def short(self) -> str:
        return "torch"

    def __repr__(self) -> str:
        return "tables.VENDOR"

    def __reduce__(self):
        return "VENDOR"


VENDOR = _Vendor()  # a table entry: torch runs this problem (measured faster than our pick on the device)


class TableError(ValueError):
    """``load_table(strict=True)``: the table, or one of its entries, cannot be used (file and reason)."""


# --- keys ------------------------------------------------------------------------------------
def problem_key(p: GemmProblem) -> str:
    """``m,n,k,batch,a_dtype,b_dtype,c_dtype,a_layout,b_layout,align_bytes`` (canonical, exact)."""
    return (f"{p.m},{p.n},{p.k},{p.batch},{p.a_dtype.value},{p.b_dtype.value},{p.c_dtype.value},"
            f"{p.a_layout.value},{p.b_layout.value},{p.align_bytes}")


_DTYPES = {d.value: d for d in DType}
_LAYOUTS = {x.value: x for x in Layout}


def parse_key(key: str) -> GemmProblem:
    """Inverse of :func:`problem_key`; ValueError unless ``key`` is exactly the canonical spelling."""
    parts = key.split(",") if isinstance(key, str) else []
    if len(parts) != len(KEY_FIELDS):
        raise ValueError(f"key: expected {len(KEY_FIELDS)} comma-separated fields ({','.join(KEY_FIELDS)})")
    ints = []
    for name, s in zip(("m", "n", "k", "batch", "align_bytes"), (*parts[:4], parts[9])):
        if not (s.isascii() and s.isdigit()) or (s[0] == "0" and s != "0"):
            raise ValueError(f"key: {name} must be a non-negative integer in canonical form, got {s!r}")
        ints.append(int(s))
    enums = []
    for name, s, table in zip(KEY_FIELDS[4:9], parts[4:9], (_DTYPES,) * 3 + (_LAYOUTS,) * 2):
        e = table.get(s)
        if e is None:
            raise ValueError(f"key: {name}: unknown value {s!r}; expected one of {', '.join(table)}")
        enums.append(e)
    m, n, k, batch, align = ints
    return GemmProblem(m, n, k, *enums, batch=batch, align_bytes=align)


# --- the table -------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class TileTable:
    """A loaded or generated table. ``entries`` maps GemmProblem → TileConfig or :data:`VENDOR` (read-only).

    ``reason`` is set (and ``entries`` empty) when a file was ignored; ``rejected`` lists the
    ``(key, reason)`` of entries dropped at load.
    """

    entries: Mapping[GemmProblem, "TileConfig | _Vendor"]
    profile_name: str
    profile_hash: str
    profile_arch: str = ""
    format_version: int = FORMAT_VERSION
    generator: str = ""
    triton_version: str | None = None
    created: str = ""
    checksum: str = ""  # the loaded file's (verified); "" for a generated table (see digest())
    path: str | None = None
    reason: str | None = None
    rejected: tuple[tuple[str, str], ...] = field(default=())
    _digest: str = field(default="", repr=False)

    @classmethod
    def empty(cls, path: str | None = None, reason: str | None = None) -> "TileTable":
        return cls(MappingProxyType({}), "", "", path=path, reason=reason)

    def get(self, problem: GemmProblem) -> "TileConfig | _Vendor | None":
        return self.entries.get(problem)

    def digest(self) -> str:
        """The checksum (``sha256:<hex>``) of this table's content as :func:`render` writes it
        (computed once). For a loaded table it equals ``checksum`` unless entries were dropped."""
        if not self._digest:
            object.__setattr__(self, "_digest", _checksum(self.meta(), _entry_json(self)))
        return self._digest

    def __len__(self) -> int:
        return len(self.entries)

    def __contains__(self, problem: object) -> bool:
        return problem in self.entries

    def meta(self) -> dict[str, Any]:
        """The document's fields other than ``entries`` and ``checksum`` (what the checksum covers)."""
        return {
            "format": FORMAT,
            "format_version": self.format_version,
            "generator": self.generator,
            "triton_version": self.triton_version,
            "profile": {"name": self.profile_name, "arch": self.profile_arch, "content_hash": self.profile_hash},
            "created": self.created,
            "key_fields": list(KEY_FIELDS),
        }

    def __repr__(self) -> str:
        where = f" from {self.path}" if self.path else ""
        if self.reason:
            return f"TileTable(empty{where}: {self.reason})"
        return f"TileTable({len(self)} entries for {self.profile_name} ({self.profile_hash}){where})"


def _library_version() -> str:
    from tritonblas import __version__

    return f"tritonblas {__version__}"


def _minor(version: str) -> str:
    return ".".join(version.split("+")[0].split(".")[:2])


# --- canonical payload and checksum ------------------------------------------------------------
def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def _canonical(meta: Mapping[str, Any], entry_json: Mapping[str, str]) -> str:
    """``_dumps({**meta, "entries": entries})`` where ``entry_json`` holds each entry's ``_dumps`` text
    (so generation serialises each distinct config once)."""
    body = ",".join(f"{json.dumps(k)}:{entry_json[k]}" for k in sorted(entry_json))
    parts = []
    for k in sorted({*meta, "entries"}):
        parts.append(f"{json.dumps(k)}:{'{' + body + '}' if k == 'entries' else _dumps(meta[k])}")
    return "{" + ",".join(parts) + "}"


def _checksum(meta: Mapping[str, Any], entry_json: Mapping[str, str]) -> str:
    return "sha256:" + hashlib.sha256(_canonical(meta, entry_json).encode()).hexdigest()


def _entry_json(table: TileTable) -> dict[str, str]:
    cache: dict[TileConfig, str] = {}
    out = {}
    for p, cfg in table.entries.items():
        s = cache.get(cfg)
        if s is None:
            s = cache[cfg] = _dumps(cfg.to_dict())
        out[problem_key(p)] = s
    return out


# --- generation --------------------------------------------------------------------------------
def make_table(problems: Sequence[GemmProblem], profile: "HardwareProfile | str", *,
               progress: Callable[[int], None] | None = None) -> TileTable:
    """Select a config for every problem (duplicates merged; empty outputs — M, N or batch 0 — and
    problems without any valid config skipped) and return the table.

    Raises ValueError ``"entry <i> (<problem>): <why>"`` when a problem's dtype has no matrix rate on
    the profile (``i`` is its index in ``problems``). ``progress(n)`` is called after each chunk of
    ``n`` problems.
    """
    from origami._encoding import C, PERSISTENT_GRID_CODES, persistent_grid
    from origami.enumerate import row_to_config
    from origami.select import select_many_arrays

    hw = load_profile(profile)
    first: dict[GemmProblem, int] = {}
    for i, p in enumerate(problems):
        first.setdefault(p, i)
    todo = [p for p in first if p.m and p.n and p.batch]
    if progress and len(problems) > len(todo):
        progress(len(problems) - len(todo))
    entries: dict[GemmProblem, TileConfig] = {}
    cus = hw.compute_units
    for start in range(0, len(todo), CHUNK):
        chunk = todo[start:start + CHUNK]
        try:
            idx, _, groups = select_many_arrays(chunk, hw)
        except ValueError as e:
            bad = next((p for p in chunk if hw.matrix_rate(p.a_dtype) <= 0), None)
            if bad is None:
                raise
            raise ValueError(f"entry {first[bad]} ({bad.describe()}): {e}") from None
        picked: list[TileConfig | None] = [None] * len(chunk)
        for base, members in groups.values():
            mem = np.asarray(members, dtype=np.int64)
            rows = idx[mem]
            ok = rows >= 0
            mem, rows = mem[ok], rows[ok]
            if not mem.size:
                continue
            # A config depends on its problem only through a persistent row's grid
            # (origami._encoding.persistent_grid): dedupe on (row, that grid).
            grid = np.zeros(mem.size, dtype=np.int64)
            pers = np.isin(base[rows, C["kind"]], PERSISTENT_GRID_CODES)
            if pers.any():
                pm = mem[pers]
                ms = np.fromiter((chunk[j].m for j in pm), np.int64, pm.size)
                ns = np.fromiter((chunk[j].n for j in pm), np.int64, pm.size)
                bs = np.fromiter((chunk[j].batch for j in pm), np.int64, pm.size)
                r = rows[pers]
                tiles = -(-ms // base[r, C["block_m"]]) * -(-ns // base[r, C["block_n"]]) * bs
                grid[pers] = [persistent_grid(cus * g, t) for g, t in zip(base[r, C["grid_mult"]].tolist(), tiles.tolist())]
            code = rows * (1 << 32) + grid
            _, first_at, inverse = np.unique(code, return_index=True, return_inverse=True)
            configs = [row_to_config(base[rows[a]], chunk[mem[a]], hw) for a in first_at.tolist()]
            for j, u in zip(mem.tolist(), inverse.tolist()):
                picked[j] = configs[u]
        entries.update((p, c) for p, c in zip(chunk, picked) if c is not None)
        if progress:
            progress(len(chunk))
    return table_of(entries, hw)


def table_of(entries: "Mapping[GemmProblem, TileConfig | _Vendor]", profile: "HardwareProfile | str") -> TileTable:
    """A table of these entries for ``profile`` (stamped with this tritonblas, this Triton and now),
    as :func:`make_table` returns; entries are not checked here (:func:`load_table` checks them)."""
    hw = load_profile(profile)
    return TileTable(MappingProxyType(dict(entries)), hw.name, hw.content_hash, hw.arch, FORMAT_VERSION,
                     _library_version(), installed_triton(),
                     _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))


# --- rendering ---------------------------------------------------------------------------------
def render(table: TileTable, fmt: str = "json", *, device_key: str | None = None) -> str:
    """The file text of ``table`` in ``fmt`` (json | csv | inductor)."""
    if fmt == "json":
        return _render_json(table)
    if fmt == "csv":
        return _render_csv(table)
    if fmt == "inductor":
        return dump_inductor(render_inductor(table, device_key=device_key)[0])
    raise ValueError(f"format: expected one of {', '.join(FORMATS)}, got {fmt!r}")


def _render_json(table: TileTable) -> str:
    meta = table.meta()
    ej = _entry_json(table)
    checksum = table._digest or _checksum(meta, ej)
    object.__setattr__(table, "_digest", checksum)
    lines = ["{"]
    lines += [f" {json.dumps(k)}: {json.dumps(v)}," for k, v in meta.items()]
    if ej:
        lines.append(' "entries": {')
        lines.append(",\n".join(f'  "{k}": {v}' for k, v in ej.items()))
        lines.append(" },")
    else:
        lines.append(' "entries": {},')
    lines.append(f' "checksum": {json.dumps(checksum)}')
    lines.append("}")
    return "\n".join(lines) + "\n"


def _cell(v: Any) -> str:
    return "" if v is None else str(v.value if isinstance(v, Kind) else v)


def _render_csv(table: TileTable) -> str:
    meta = table.meta()
    checksum = table.digest()
    out = [f"# {FORMAT} (tritonblas tile table; values after ': ' are JSON)"]
    out += [f"# {k}: {json.dumps(v)}" for k, v in meta.items() if k != "format"]
    out.append(f"# checksum: {json.dumps(checksum)}")
    out.append(",".join(KEY_FIELDS + CONFIG_FIELDS))
    cache: dict[TileConfig, str] = {}
    for p, cfg in table.entries.items():
        s = cache.get(cfg)
        if s is None:
            s = cache[cfg] = ",".join(_cell(v) for v in cfg.to_dict().values()) if cfg is VENDOR else \
                ",".join(_cell(getattr(cfg, f)) for f in CONFIG_FIELDS)
        out.append(f"{problem_key(p)},{s}")
    return "\n".join(out) + "\n"


_TORCH_DTYPE = {DType.FP32: "torch.float32", DType.FP16: "torch.float16", DType.BF16: "torch.bfloat16"}
INDUCTOR_PROVENANCE_KEY = "tritonblas:provenance"


def _inductor_operands(p: GemmProblem) -> tuple[str, bool]:
    """Inductor's input key (``str`` of ``((dtype, shape, stride), ...)`` for mat1, mat2) and whether
    the strides imply the problem's ``align_bytes`` (16-byte aligned base pointers assumed)."""
    m, n, k, b = p.m, p.n, p.k, p.batch
    a_shape, a_stride = [m, k], ([k, 1] if p.a_layout is Layout.N else [1, m])
    b_shape, b_stride = [k, n], ([n, 1] if p.b_layout is Layout.N else [1, k])
    if b > 1:
        a_shape, a_stride = [b, *a_shape], [m * k, *a_stride]
        b_shape, b_stride = [b, *b_shape], [k * n, *b_stride]
    dt = _TORCH_DTYPE[p.a_dtype]
    key = f"(({dt}, {a_shape}, {a_stride}), ({dt}, {b_shape}, {b_stride}))"
    lead = [a_stride[-2] if p.a_layout is Layout.N else a_stride[-1],
            b_stride[-2] if p.b_layout is Layout.N else b_stride[-1]]
    implied = 16
    for s in lead:
        while implied > 1 and (s * p.a_dtype.bytes) % implied:
            implied //= 2
    return key, implied == p.align_bytes


def inductor_kwargs(cfg: TileConfig, p: GemmProblem, *, even_k: bool | None = None) -> dict[str, Any]:
    """The kwargs of Inductor's GEMM templates (``triton::mm``/``bmm``, ``mm_persistent_tma``,
    ``mm_persistent``) for a data-parallel or persistent ``cfg``: the one TileConfig -> Inductor
    mapping (the exported table and the live provider, :mod:`tritonblas.inductor`, both use it).

    Every kwarg Inductor's own mm heuristics give the template: ``EVEN_K`` (K % BLOCK_K == 0, or
    ``even_k`` where the caller knows better, e.g. a symbolic K: False), ``USE_FAST_ACCUM`` (False),
    ``ACC_TYPE`` (``tl.float32``), ``num_stages``, ``num_warps``, ``BLOCK_M/N/K``, ``GROUP_M``, plus
    ``hint_override`` (None; a parameter of ``TritonTemplate.generate`` in torch 2.13-2.15, which
    Inductor's ROCm heuristic also emits from torch 2.15 on), and ``matrix_instr_nonkdim``,
    ``waves_per_eu``, ``kpack`` on AMD. The persistent templates' own kwargs (``NUM_SMS``, TMA options) come from Inductor's base
    config, which a lookup hit is merged over (torch 2.13)."""
    c = {"EVEN_K": p.k % cfg.block_k == 0 if even_k is None else even_k, "USE_FAST_ACCUM": False,
         "ACC_TYPE": "tl.float32", "num_stages": cfg.num_stages, "num_warps": cfg.num_warps,
         "BLOCK_M": cfg.block_m, "BLOCK_N": cfg.block_n, "BLOCK_K": cfg.block_k, "GROUP_M": cfg.group_m,
         "hint_override": None}
    if cfg.matrix_instr_nonkdim is not None:
        c.update(matrix_instr_nonkdim=cfg.matrix_instr_nonkdim, waves_per_eu=cfg.waves_per_eu, kpack=cfg.kpack)
    return c


def render_inductor(table: TileTable, *, device_key: str | None = None,
                    profile: "HardwareProfile | str | None" = None) -> tuple[dict[str, list[dict]], int]:
    """PyTorch Inductor's template lookup table (``torch._inductor.config.lookup_table.table``, read by
    ``torch._inductor.lookup_table.LookupTableChoices``, installed with
    ``torch._inductor.virtualized.V.set_choices_handler(LookupTableChoices())``; Inductor has no file
    loader: ``json.load`` this file into that setting) and the number of entries without an Inductor key.

    - Key: ``[device_key+]<input key>+<op>``, the input key being ``str`` of a tuple of
      ``(torch dtype, shape list, stride list)`` for mat1 and mat2, op ``mm`` (batch 1) or ``bmm``.
      ``device_key`` is what Inductor compares it with: ``torch.cuda.get_device_properties().gcnArchName``
      (the device name on CUDA builds, e.g. ``"NVIDIA H200"``; ``"gfx942:sramecc+:xnack-"`` on ROCm).
      Without it the keys are device-agnostic (Inductor tries the device-specific key first).
    - Value: one config, ``template_id`` ``triton::mm`` / ``triton::bmm`` with every kwarg Inductor's
      own mm heuristics give that template — ``EVEN_K`` (K % BLOCK_K == 0), ``USE_FAST_ACCUM`` (False),
      ``ACC_TYPE`` (``tl.float32``), ``num_stages``, ``num_warps``, ``BLOCK_M/N/K``, ``GROUP_M``, plus
      ``hint_override`` (None), and ``matrix_instr_nonkdim``, ``waves_per_eu``, ``kpack`` on AMD.
      The full set matters: torch 2.13 merges a hit over its base kwargs (``{**base, **entry}``), but
      earlier versions of ``LookupTableChoices._create_lookup_choices`` (pytorch/pytorch history, likely
      the 2.11 line) pass the entry alone as the template's kwargs.
    - Inductor's mm templates are data-parallel (GROUP_M swizzle, no chiplet remap). An entry the
      template cannot express (persistent, Stream-K, split-K, or a chiplet remap) is replaced by the
      model's best data-parallel config without remap (:func:`origami.select.select_among`), not by
      the same tile run data-parallel: on h200 128x1024x65536 bf16 the split-K pick's tile runs a
      predicted 299 us data-parallel, the best data-parallel config 155 us (16x4096x4096: 15.4 vs
      10.9 us). The provenance counts them (``dp_substituted_entries``). ``profile``: the table's
      profile (default: loaded by the table's profile name; its content hash must match).
    - Only what Inductor keys by dtype alone: a_dtype == b_dtype == c_dtype in fp32/fp16/bf16 (fp8 and
      int8 go through other ops; TF32 is a mode of fp32 that the key cannot tell apart). Several
      entries of one key (differing in ``align_bytes``): the one whose alignment the strides imply.
    - Provenance rides along as key ``tritonblas:provenance`` with one config whose ``template_id``
      (``tritonblas::provenance``) matches no template, so Inductor never applies it.
    """
    from origami.select import select_among

    prefix = f"{device_key}+" if device_key else ""
    out: dict[str, list[dict]] = {}
    exact: set[str] = set()
    skipped = substituted = 0
    hw = None
    for p, cfg in table.entries.items():
        if cfg is VENDOR or p.a_dtype not in _TORCH_DTYPE or not p.a_dtype == p.b_dtype == p.c_dtype:
            skipped += 1
            continue
        if cfg.kind is not Kind.DP or cfg.num_chiplets != 1:
            if hw is None:
                hw = load_profile(profile if profile is not None else table.profile_name)
                if hw.content_hash != table.profile_hash:
                    raise ValueError(f"profile: {hw.name} has content hash {hw.content_hash}, the table was made "
                                     f"for {table.profile_name} ({table.profile_hash}); pass the table's profile")
            cfg = select_among(p, hw, (Kind.DP,), chiplet_remap=False).config
            substituted += 1
        inputs, implied = _inductor_operands(p)
        op = "bmm" if p.batch > 1 else "mm"
        key = f"{prefix}{inputs}+{op}"
        if key in out and (key in exact or not implied):
            skipped += 1
            continue
        if key in out:
            skipped += 1
        if implied:
            exact.add(key)
        out[key] = [{"template_id": f"triton::{op}", **inductor_kwargs(cfg, p)}]
    prov = {"template_id": "tritonblas::provenance", **table.meta(),
            "source_checksum": table.digest(),
            "skipped_entries": skipped, "dp_substituted_entries": substituted}
    return {INDUCTOR_PROVENANCE_KEY: [prov], **out}, skipped


def dump_inductor(doc: Mapping[str, list]) -> str:
    """An Inductor lookup table as JSON text, one key per line."""
    return "{\n" + ",\n".join(f" {json.dumps(k)}: {json.dumps(v)}" for k, v in doc.items()) + "\n}\n"


# --- atomic writing ----------------------------------------------------------------------------
@lru_cache(maxsize=1)
def _file_mode() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


class AtomicFile:
    """``with AtomicFile(path) as f: f.write(text)`` publishes ``path`` atomically on success.

    The temp file is created on entry (so an unwritable destination fails before any work), written,
    flushed and fsynced, renamed over ``path`` with ``os.replace``, and the directory is fsynced. An
    exception inside the block removes the temp file and leaves ``path`` untouched.
    """

    def __init__(self, path: "str | os.PathLike[str]"):
        self.path = Path(path)
        self._fd: int | None = None
        self._tmp: str | None = None

    def __enter__(self) -> "AtomicFile":
        parent = self.path.parent
        self._fd, self._tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp", dir=parent)
        return self

    def write(self, data: "str | bytes") -> None:
        buf = memoryview(data.encode() if isinstance(data, str) else data)
        while buf:
            n = os.write(self._fd, buf)
            buf = buf[n:]

    def __exit__(self, exc_type, exc, tb) -> None:
        fd, tmp = self._fd, self._tmp
        self._fd = self._tmp = None
        try:
            if exc_type is None:
                os.fchmod(fd, _file_mode())
                os.fsync(fd)
        except BaseException:
            os.close(fd)
            _unlink(tmp)
            raise
        os.close(fd)
        if exc_type is not None:
            _unlink(tmp)
            return
        try:
            os.replace(tmp, self.path)
        except BaseException:
            _unlink(tmp)
            raise
        _fsync_dir(self.path.parent)


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _fsync_dir(d: Path) -> None:
    try:
        fd = os.open(d, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:  # some filesystems refuse fsync on a directory
        pass
    finally:
        os.close(fd)


def write_table(table: TileTable, path: "str | os.PathLike[str]", fmt: str = "json", *,
                device_key: str | None = None) -> Path:
    """Render ``table`` (json | csv | inductor) and publish it at ``path`` atomically."""
    text = render(table, fmt, device_key=device_key)
    with AtomicFile(path) as f:
        f.write(text)
    return Path(path)


# --- loading -----------------------------------------------------------------------------------
class _Reject(Exception):
    """Internal: the whole file is ignored, for this reason."""


class _StaleProfile(_Reject):
    """Internal: ignored because of the profile checked against (another profile may accept it)."""


_TOO_DEEP = "not a tritonblas tile table: JSON nested too deeply to parse (corrupt or hostile?)"


def _parse_json(text: str) -> tuple[dict, dict]:
    try:
        doc = json.loads(text, object_pairs_hook=unique_keys)
    except DuplicateKey as e:
        raise _Reject(f"duplicate key {e.args[0]!r}") from None
    except ValueError as e:
        raise _Reject(f"not valid JSON (truncated or corrupt?): {e}") from None
    except RecursionError:
        raise _Reject(_TOO_DEEP) from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        if isinstance(doc, dict) and doc and all(isinstance(v, list) for v in doc.values()):
            raise _Reject("not a tritonblas tile table: it looks like a PyTorch Inductor lookup table "
                          "(load_table reads the json and csv formats)")
        raise _Reject(f"not a tritonblas tile table (no \"format\": \"{FORMAT}\")")
    entries = doc.pop("entries", None)
    return doc, entries


def _parse_csv(text: str) -> tuple[dict, dict]:
    lines = text.splitlines()
    meta: dict[str, Any] = {}
    i = 0
    if not lines or not lines[0].startswith(f"# {FORMAT}"):
        raise _Reject(f"not a tritonblas tile table (the first line is not '# {FORMAT} ...')")
    meta["format"] = FORMAT
    i = 1
    while i < len(lines) and lines[i].startswith("#"):
        name, sep, value = lines[i][1:].strip().partition(": ")
        if not sep:
            raise _Reject(f"line {i + 1}: expected '# name: <JSON value>'")
        if name in meta:
            raise _Reject(f"duplicate key {name!r} (line {i + 1})")
        try:
            meta[name] = json.loads(value)
        except ValueError as e:
            raise _Reject(f"line {i + 1}: {name}: not valid JSON (truncated or corrupt?): {e}") from None
        except RecursionError:
            raise _Reject(f"line {i + 1}: {name}: {_TOO_DEEP}") from None
        i += 1
    if i >= len(lines) or lines[i] != ",".join(KEY_FIELDS + CONFIG_FIELDS):
        raise _Reject(f"line {i + 1}: expected the header {','.join(KEY_FIELDS + CONFIG_FIELDS)} "
                      "(truncated or corrupt?)")
    entries: dict[str, Any] = {}
    nk = len(KEY_FIELDS)
    for lineno, row in enumerate(csv.reader(io.StringIO("\n".join(lines[i + 1:]))), start=i + 2):
        if len(row) != nk + len(CONFIG_FIELDS):
            raise _Reject(f"line {lineno}: expected {nk + len(CONFIG_FIELDS)} cells, got {len(row)} "
                          "(truncated or corrupt?)")
        key = ",".join(row[:nk])
        if key in entries:
            raise _Reject(f"duplicate key {key!r} (line {lineno})")
        cfg: dict[str, Any] = {}
        for name, cell in zip(CONFIG_FIELDS, row[nk:]):
            if name == "kind":
                cfg[name] = cell
            elif cell == "":
                cfg[name] = None
            else:
                try:
                    cfg[name] = int(cell)
                except ValueError:
                    raise _Reject(f"line {lineno}: {name}: expected an integer, got {cell!r}") from None
        entries[key] = cfg
    return meta, entries


def _fail(path: str, reason: str, strict: bool, stacklevel: int) -> TileTable:
    if strict:
        raise TableError(f"{path}: {reason}")
    msg = f"ignoring tile table {path}: {reason}; the model decides every shape"
    logger.warning("%s", msg)
    warnings.warn(msg, TableWarning, stacklevel=stacklevel + 1)
    return TileTable.empty(path, reason)


def load_table(path: "str | os.PathLike[str]", strict: bool = False, *,
               profile: "HardwareProfile | str | None" = None) -> TileTable:
    """Load and verify a table (json or csv). See the module docstring for what is checked.

    ``profile``: the profile the table must have been made for (its content hash). By default the
    profile named in the table is loaded by name, so a table made before that profile changed is
    stale. Non-strict fallbacks warn once (:class:`TableWarning`) and return an empty table.
    """
    spath = os.fspath(path)
    try:
        return _load(spath, strict, profile)
    except _Reject as r:
        return _fail(spath, str(r), strict, stacklevel=2)


def _load(path: str, strict: bool, profile) -> TileTable:
    try:
        raw = Path(path).read_bytes()
    except OSError as e:
        raise _Reject(f"cannot read: {e.strerror or e}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise _Reject(f"not UTF-8 text (corrupt or foreign?): {e}") from None
    meta, entries = _parse_csv(text) if text.lstrip()[:1] == "#" else _parse_json(text)

    version = meta.get("format_version")
    if type(version) is not int or version != FORMAT_VERSION:  # True == 1 and 1.0 == 1 in Python
        raise _Reject(f"stale: format_version {version!r}, this tritonblas reads {FORMAT_VERSION}")
    checksum = meta.pop("checksum", None)
    if not isinstance(entries, dict):
        raise _Reject("corrupt: 'entries' is missing or not a mapping")
    prof = meta.get("profile")
    if not (isinstance(prof, dict) and isinstance(prof.get("name"), str) and isinstance(prof.get("content_hash"), str)):
        raise _Reject("corrupt: 'profile' must be {\"name\": ..., \"content_hash\": ...}")
    actual = _checksum(meta, {k: _dumps(v) for k, v in entries.items()})
    if checksum != actual:
        raise _Reject(f"checksum mismatch (the file says {checksum!r}, its content hashes to {actual!r}): "
                      "corrupt or edited")
    try:
        hw = load_profile(profile if profile is not None else prof["name"])
    except ProfileError as e:
        raise _StaleProfile(f"stale: profile {prof['name']!r} of the table cannot be loaded "
                      f"({str(e).splitlines()[0]}); pass profile=") from None
    if hw.content_hash != prof["content_hash"]:
        raise _StaleProfile(f"stale: made for profile {prof['name']} with content hash {prof['content_hash']}, "
                      f"but profile {hw.name} has content hash {hw.content_hash} (regenerate the table)")
    made_with, here = meta.get("triton_version"), installed_triton()
    if made_with is not None and here is not None and _minor(str(made_with)) != _minor(here):
        raise _Reject(f"stale: made with Triton {made_with}, this is Triton {here}")

    good, rejected = _check_entries(entries, hw)
    if rejected and strict:
        key, why = rejected[0]
        more = f" (and {len(rejected) - 1} more bad entries)" if len(rejected) > 1 else ""
        raise TableError(f"{path}: entry {key!r}: {why}{more}")
    table = TileTable(MappingProxyType(good), prof["name"], prof["content_hash"], str(prof.get("arch", "")),
                      version, str(meta.get("generator", "")), made_with, str(meta.get("created", "")),
                      checksum, path, None, tuple(rejected))
    if rejected:
        listed = "; ".join(f"{k!r}: {w}" for k, w in rejected[:_MAX_LISTED])
        more = f"; and {len(rejected) - _MAX_LISTED} more" if len(rejected) > _MAX_LISTED else ""
        msg = (f"tile table {path}: dropped {len(rejected)} of {len(entries)} entries that fail the "
               f"model's checks (the model decides those shapes): {listed}{more}")
        logger.warning("%s", msg)
        warnings.warn(msg, TableWarning, stacklevel=3)
    logger.info("tile table %s: %d entries for profile %s (%s)", path, len(good), prof["name"], prof["content_hash"])
    return table


_VENDOR_DICT = VENDOR.to_dict()


def _check_entries(entries: Mapping[str, Any], hw: HardwareProfile):
    from origami.space import violations

    configs: dict[tuple, TileConfig | str] = {}
    good: dict[GemmProblem, TileConfig | _Vendor] = {}
    rejected: list[tuple[str, str]] = []
    names = set(CONFIG_FIELDS)
    for key, d in entries.items():
        try:
            p = parse_key(key)
        except (TypeError, ValueError) as e:
            rejected.append((key, str(e)))
            continue
        if not isinstance(d, dict):
            rejected.append((key, f"config: expected a mapping, got {type(d).__name__}"))
            continue
        if not d.keys() <= names:
            rejected.append((key, f"config: unknown field(s) {sorted(set(d) - names)}"))
            continue
        bad_type = next((f for f in CONFIG_FIELDS if f in d and not isinstance(d[f], (str, int, float, type(None)))),
                        None)
        if bad_type is not None:  # a list or mapping where a number belongs (also unhashable: no cache key)
            rejected.append((key, f"TileConfig.{bad_type}: expected {'a string' if bad_type == 'kind' else 'an int'}, "
                                  f"got {type(d[bad_type]).__name__} {d[bad_type]!r}"))
            continue
        if d.get("kind") == "torch":
            if d == _VENDOR_DICT:
                good[p] = VENDOR
            else:
                extra = sorted(f for f in CONFIG_FIELDS if f != "kind" and d.get(f, 0) is not None)
                rejected.append((key, f"a torch entry has every other field null; {', '.join(extra) or 'some'} "
                                      "given or missing"))
            continue
        ck = (*((type(v), v) for v in map(d.get, CONFIG_FIELDS)), len(d))  # typed: 128.0 and True are no 128 and 1
        cfg = configs.get(ck)
        if cfg is None:
            try:
                cfg = TileConfig.from_dict(d)
            except (TypeError, ValueError) as e:
                cfg = str(e)
            configs[ck] = cfg
        if isinstance(cfg, str):
            if isinstance(d.get("kind"), str) and d["kind"].lower() == "torch":  # 'TORCH', 'Torch': a near miss
                cfg += "; a VENDOR entry is spelled kind 'torch' (lower case), every other field null"
            rejected.append((key, cfg))
            continue
        bad = violations(cfg, p, hw)
        if bad:
            rejected.append((key, "; ".join(bad)))
            continue
        good[p] = cfg
    return good, rejected


# --- the active table (the dispatcher's hook) ----------------------------------------------------
_LOCK = threading.Lock()
_EXPLICIT: list[TileTable] = []          # set_table's table (at most one)
# set_table's table as a number: the dispatcher keys plans and warm entries on GENERATION[0]. Each table
# object gets its own number the first time it is set (tables are immutable), and keeps it: switching
# back to a table set before finds its plans and warm entries again instead of planning every call anew
# (a process alternating two tables, as benchmarks/models.py's sides do, re-planned on every switch)
GENERATION = [0]
_NEXT = [0]
_SERIALS: dict[int, tuple[TileTable, int]] = {}  # id(table) -> (the table, kept alive so the id stays its own; its number)
_ENV_CACHE: dict[tuple[str, str | None], tuple[Any, TileTable, bool]] = {}
_WARNED: set[tuple[str | None, str, str, str]] = set()


def set_table(table: "TileTable | str | os.PathLike[str] | None") -> TileTable | None:
    """Make ``table`` (or the table loaded from a path, non-strict) the active one for :func:`lookup`;
    ``None`` goes back to ``$TRITONBLAS_TABLE``. Returns the active table."""
    if table is not None and not isinstance(table, TileTable):
        table = load_table(table)
    with _LOCK:
        _EXPLICIT.clear()
        if table is not None:
            _EXPLICIT.append(table)
            seen = _SERIALS.get(id(table))
            if seen is None or seen[0] is not table:
                if len(_SERIALS) >= 64:  # at most that many tables kept alive; numbers are never reused
                    _SERIALS.clear()
                _NEXT[0] += 1
                seen = _SERIALS[id(table)] = (table, _NEXT[0])
            GENERATION[0] = seen[1]
        else:
            GENERATION[0] = 0
    return active_table()


def explicit_table() -> TileTable | None:
    """The table :func:`set_table` installed (None: none, ``$TRITONBLAS_TABLE`` applies), to restore it later."""
    with _LOCK:
        return _EXPLICIT[0] if _EXPLICIT else None


def table_token(generation: int | None = None) -> tuple[int, str | None]:
    """Identifies the table source now (set_table generation — ``generation`` when one was read
    earlier —, $TRITONBLAS_TABLE): the dispatcher keys its plans on it, so switching tables
    re-plans. A file rewritten in place under the same path is picked up by :func:`lookup` but not
    by plans already cached: call ``tritonblas.clear_caches()`` after regenerating a table in place."""
    return GENERATION[0] if generation is None else generation, os.environ.get(ENV_TABLE)


def _signature(path: str):
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino, st.st_dev)


def active_table(profile: "HardwareProfile | str | None" = None) -> TileTable | None:
    """The table :func:`lookup` consults: :func:`set_table`'s, else the file named by
    ``$TRITONBLAS_TABLE`` (read now; reloaded when the file changes), else None.

    ``profile``: the profile the file is checked against (``load_table(profile=)``; :func:`lookup`
    passes the one it looks up for), so a table made for a profile loaded from a file — e.g. one
    ``calibrate`` wrote, which keeps its base's name — is used with that profile; by default the
    table's profile is loaded by name."""
    with _LOCK:
        if _EXPLICIT:
            return _EXPLICIT[0]
    return _env_table(os.environ.get(ENV_TABLE), profile)


def _named_table(token: tuple[int, str | None], profile: "HardwareProfile | str") -> TileTable | None:
    """The table ``token`` (:func:`table_token`, taken earlier) named: set_table's table of that number,
    else the file the token's ``$TRITONBLAS_TABLE`` named; None when that table is no longer known
    (more than 64 tables were set since)."""
    gen, path = token
    if not gen:
        return _env_table(path, profile)
    with _LOCK:
        if _EXPLICIT and GENERATION[0] == gen:
            return _EXPLICIT[0]
        return next((t for t, n in _SERIALS.values() if n == gen), None)


def _env_table(path: str | None, profile: "HardwareProfile | str | None") -> TileTable | None:
    if not path:
        return None
    hw = None if profile is None else load_profile(profile)
    own = None if hw is None else hw.content_hash
    sig = _signature(path)
    with _LOCK:
        for key in dict.fromkeys(((path, own), (path, None))):
            hit = _ENV_CACHE.get(key)
            # a verdict that no profile could change (unreadable, corrupt, stale format) serves every
            # profile: the file is warned about once, not once per profile
            if hit is not None and hit[0] == sig and (key[1] == own or hit[2]):
                return hit[1]
    try:
        table, any_profile = _load(path, False, hw), False
    except _Reject as r:
        table, any_profile = _fail(path, str(r), False, stacklevel=4), not isinstance(r, _StaleProfile)
    with _LOCK:
        _ENV_CACHE[(path, None if any_profile else own)] = (sig, table, any_profile)
    return table


def lookup(problem: GemmProblem, profile: "HardwareProfile | str",
           token: tuple[int, str | None] | None = None) -> "TileConfig | _Vendor | None":
    """The active table's config for exactly ``problem`` on ``profile`` (:data:`VENDOR`: torch runs it); None: the model decides
    (no table, a miss, or a table made for another profile — warned once per table and profile).
    ``token``: a :func:`table_token` taken earlier (the dispatcher's key): the table it named, even if
    another thread has called :func:`set_table` since, so a plan cached under the token is that table's."""
    hw = load_profile(profile)
    table = active_table(hw) if token is None else _named_table(token, hw)
    if table is None or not table.entries:
        return None
    if hw.content_hash != table.profile_hash:
        tag = (table.path, table.created, table.profile_hash, hw.content_hash)
        with _LOCK:
            fresh = tag not in _WARNED
            _WARNED.add(tag)
        if fresh:
            msg = (f"tile table {table.path or '(in memory)'} was made for profile {table.profile_name} "
                   f"({table.profile_hash}), not {hw.name} ({hw.content_hash}): not used for it; the model decides")
            logger.warning("%s", msg)
            warnings.warn(msg, TableWarning, stacklevel=2)
        return None
    cfg = table.entries.get(problem)
    if logger.isEnabledFor(logging.DEBUG):
        logger.debug("tile table %s: %s %s", table.path or "(in memory)", "hit" if cfg else "miss, the model decides",
                     f"{problem.describe()} -> {cfg.short()}" if cfg else problem.describe())
    return cfg


def clear_cache() -> None:
    """Forget the active table, the ``$TRITONBLAS_TABLE`` cache and the warned-once set."""
    with _LOCK:
        _EXPLICIT.clear()
        GENERATION[0] = 0  # as set_table(None): plans and warm entries made under the forgotten table stop applying
        _ENV_CACHE.clear()
        _WARNED.clear()

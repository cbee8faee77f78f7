"""Candidate enumeration: the axes of the search space, encoded as an int64 array for the scorer.

The space is built once per (profile, dtype/layout class) and cached: the rows that pass every
problem-independent predicate (shared memory, registers, instruction shape, vendor knobs,
occupancy). Problem-dependent rules (split factor ≤ K-iterations, blocks not absurdly larger than
the problem) are applied by the scorer, in numba, with the same expressions as
:func:`origami.space.check_problem` (a test keeps the two in agreement).

Axes
- tiles (BLOCK_M × BLOCK_N) from 16×64 to 256×128, BLOCK_K 64–256 bytes per row,
  num_warps 4/8 (both only for mid-size tiles), num_stages 3/4 (AMD: 2/1);
- kinds: dp with GROUP_M ∈ {8, 1}; persistent (grid = CUs × programs-per-CU, GROUP_M 8);
  streamk (grid = CUs × r, r ∈ {occupancy, 1}); splitk (split_k ∈ {2, 4, 8, 16}) where the
  data-parallel grid leaves compute units idle (tiles < CUs);
- chiplet remap on multi-chiplet round-robin parts: num_chiplets ∈ {1, X}, chunk ∈ {8, 32}
  (chunk 1 is the identity: the hardware's own round-robin);
- AMD: matrix_instr_nonkdim ∈ {16, 32}, kpack 2 also tried with 16 on gfx942 16-bit, waves_per_eu = 0;
- ws (warp-specialised persistent, :func:`origami.space.ws_space`): the kernel's own tiles
  (``space.WS_TILES``), grid min(SMs, tiles), on sm_90 profiles with ``model.ws_efficiency`` > 0.
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache

import numpy as np

from origami.config import Kind, TileConfig
from origami.hardware import HardwareProfile
from origami.problem import DType, GemmProblem, Layout
from origami import _core, space
from origami._encoding import (CODE_KIND, COLS, C, K_DP, K_PERSISTENT, K_SPLITK, K_STREAMK, K_WS,
                               persistent_grid)

__all__ = ["base_array", "search_plan", "row_to_config", "config_for_tiles", "row_tiles"]

# Large tiles first (branch and bound finds a good bound early); between mirror-image tiles the
# wider-in-N one comes first, so it wins ties: on the H200 the best tile had BLOCK_N > BLOCK_M on
# 11 of 14 shapes (H200.md, 2026-11-29).
_TILES = ((128, 256), (256, 128), (64, 256), (128, 128), (256, 64), (64, 128), (128, 64), (64, 64),
          (32, 128), (32, 64), (16, 128), (16, 64))
_SPLITS = (2, 4, 8, 16)
_GROUPS = (8, 1)
# what each kind's rows differ in for the problem-independent predicates (grid and split are resolved
# per problem; the register rule and the occupancy read only the kind)
_KIND_PROBES = {Kind.DP: {}, Kind.PERSISTENT: dict(grid=1), Kind.STREAMK: dict(grid=1), Kind.SPLITK: dict(split_k=2)}


def _block_ks(dtype: DType) -> tuple[int, ...]:
    # BLOCK_K·bytes between 64 and 256 bytes per row (fp32 32..64, 16-bit 32..128, 8-bit 64..256).
    return {4: (16, 32, 64), 2: (32, 64, 128), 1: (64, 128, 256)}[dtype.bytes]


def _warps(bm: int, bn: int) -> tuple[int, ...]:
    area = bm * bn
    if area <= 64 * 128:
        return (4,)
    if area >= 128 * 256:
        return (8,)
    return (4, 8)


def base_array(hw: HardwareProfile, a_dtype: DType, b_dtype: DType, a_layout: Layout, b_layout: Layout,
               staged: bool = False) -> np.ndarray:
    """All problem-independent-valid candidate rows for this dtype/layout class (int64, read-only),
    for the compiler the model predicts for (cached per ``space.amd_direct_to_lds(hw)``, the one
    predicate input that depends on it: :mod:`origami.toolchain`).

    ``staged``: the narrow-load class (:func:`origami.space.narrow_loads`): on NVIDIA register-staged
    loads (under 4-byte alignment), whose space also obeys ``space.check_staged_registers``; on AMD
    operands under 16-byte alignment, whose register rule (``space.check_registers``) is stricter."""
    return _base_array(hw, a_dtype, b_dtype, a_layout, b_layout, staged, space.amd_direct_to_lds(hw))


@lru_cache(maxsize=256)
def _base_array(hw: HardwareProfile, a_dtype: DType, b_dtype: DType, a_layout: Layout, b_layout: Layout,
                staged: bool, _direct_lds: bool) -> np.ndarray:
    probe = GemmProblem(1 << 14, 1 << 14, 1 << 14, a_dtype, b_dtype, DType.BF16, a_layout, b_layout,
                        align_bytes=2 if staged else 16)
    stages = (2, 1) if hw.is_amd else (3, 4)  # preferred first: ties keep the earlier row
    if hw.is_amd:
        amd = [(0, 16, 1), (0, 32, 1)]
        if hw.arch == "gfx942" and a_dtype.bytes == 2:
            amd.append((0, 16, 2))  # kpack=2 exists for 16-bit MFMA on CDNA3 only
    else:
        amd = [(None, None, None)]
    remaps = [(1, 1)]
    if hw.chiplets > 1 and hw.compute["dispatch"] == "round_robin":
        remaps += [(hw.chiplets, c) for c in (8, 32)]  # chunk 1 would be the identity
    rows = []
    for bm, bn in _TILES:
        for bk in _block_ks(a_dtype):
            for w in _warps(bm, bn):
                for s in stages:
                    for wpe, mi, kp in amd:
                        if mi == 32 and (bm % 32 or bn % 32):
                            continue
                        tile = TileConfig(Kind.DP, bm, bn, bk, w, s, 8, waves_per_eu=wpe,
                                          matrix_instr_nonkdim=mi, kpack=kp)
                        if any(p(tile, probe, hw) for p in (space.check_smem, space.check_instr, space.check_vendor)):
                            continue
                        # registers and occupancy per kind (the AMD register estimate adds Stream-K's fix-up)
                        occ, spill = {}, {}
                        for kind, kw in _KIND_PROBES.items():
                            kc = replace(tile, kind=kind, **kw)
                            if space.check_registers(kc, probe, hw) is None and \
                                    space.check_staged_registers(kc, probe, hw) is None and \
                                    space.check_promoted_registers(kc, probe, hw) is None:
                                occ[kind] = space.resident_programs(kc, probe, hw)
                                spill[kind] = int(space.staged_spills(kc, probe, hw))
                        occ = {k: o for k, o in occ.items() if o >= 1}
                        ex = (-1 if wpe is None else wpe, -1 if mi is None else mi, -1 if kp is None else kp)
                        for nc, ch in remaps:
                            if Kind.DP in occ:
                                for g in _GROUPS:
                                    rows.append((0, bm, bn, bk, w, s, g, nc, ch, 0, 1, *ex, occ[Kind.DP], spill[Kind.DP]))
                            if Kind.PERSISTENT in occ:
                                o = occ[Kind.PERSISTENT]
                                rows.append((1, bm, bn, bk, w, s, 8, nc, ch, o, 1, *ex, o, spill[Kind.PERSISTENT]))
                            if Kind.STREAMK in occ:
                                o = occ[Kind.STREAMK]
                                for r in sorted({o, 1}, reverse=True):
                                    rows.append((2, bm, bn, bk, w, s, 8, nc, ch, r, 1, *ex, o, spill[Kind.STREAMK]))
                        # split-K tiles are few: GROUP_M and the chiplet remap do not matter for them
                        if Kind.SPLITK in occ:
                            for sk in _SPLITS:
                                rows.append((3, bm, bn, bk, w, s, 1, 1, 1, 0, sk, *ex, occ[Kind.SPLITK], spill[Kind.SPLITK]))
    # the warp-specialised kernel's few tiles, last (ties keep the Triton rows before them): persistent,
    # one program per SM at most (grid_mult 1: min(SMs, tiles) programs), GROUP_M 8, no remap
    if space.ws_space(hw, a_dtype, b_dtype, staged):
        for bm, bn, bk, s in space.WS_TILES:
            ws = TileConfig(Kind.WS, bm, bn, bk, space.WS_WARPS, s, 8, grid=1)
            if any(p(ws, probe, hw) for p in (space.check_smem, space.check_instr, space.check_registers,
                                              space.check_vendor)):
                continue
            occ = space.resident_programs(ws, probe, hw)
            if occ >= 1:
                rows.append((K_WS, bm, bn, bk, space.WS_WARPS, s, 8, 1, 1, 1, 1, -1, -1, -1, occ, 0))  # TMA: never staged
    # model_twin: index of the first row with the same model key, else -1 (see _model_key). Such a
    # row always ties its twin, and ties go to the lower index, so the scorer copies the twin's
    # score instead of recomputing it, and select never scores it.
    first: dict[tuple, int] = {}
    twins = []
    for i, r in enumerate(rows):
        t = first.setdefault(_model_key(r), i)
        twins.append(t if t < i else -1)
    rows = [r + (r[1].bit_length() - 1, r[2].bit_length() - 1, r[3].bit_length() - 1, t)
            for r, t in zip(rows, twins)]
    arr = np.array(rows, dtype=np.int64).reshape(-1, len(COLS))
    arr.setflags(write=False)
    return arr


def _model_key(r: tuple) -> tuple:
    """What the scorer (origami._core.score_row) reads of an encoded row, as it reads it: rows with
    equal keys get bit-identical scores and terms for every problem. Not read at all: the AMD knobs.
    num_warps only through the occupancy column and whether the program is one warpgroup (4 warps
    or fewer: the NVIDIA fp8 factor of _core.tile_efficiencies); num_stages only through
    max(1, stages − 1), so 1 and 2 are alike; chunk only with a remap (num_chiplets > 1); a
    persistent grid is min(CUs·occupancy, CUs·grid_mult), which is the data-parallel grid when
    grid_mult ≥ occupancy, so such a row is scored as the DP row with its GROUP_M (when both spill alike:
    staged_spill, whose limit is per kind, is read by model.staged_spill_penalty). tests/origami/test_model_properties.py checks the twins against a full
    scoring."""
    kind, bm, bn, bk, warps, stages, group, nchip, chunk, gmult, split, _wpe, _mi, _kpack, occ, spill = r[:16]
    if kind == K_PERSISTENT and gmult >= occ:
        kind, gmult = K_DP, 0
    one_wg = warps <= 4
    return (kind, bm, bn, bk, max(stages, 2), group, nchip > 1, chunk if nchip > 1 else 1, gmult, split, occ, one_wg,
            spill)


def _family_key(r: tuple) -> tuple:
    """The model key without GROUP_M and the chiplet remap (read only by the LLC/HBM terms), as
    (tile group, kind, grid programs per CU, split): see _core.screen_bounds."""
    kind, bm, bn, bk, stages, _group, _remap, _chunk, gmult, split, occ, one_wg, _spill = _model_key(r)
    per_cu = {K_DP: occ, K_PERSISTENT: min(occ, gmult), K_STREAMK: gmult, K_WS: min(occ, gmult)}.get(kind, occ)
    # one_wg and the ws flag: one tile efficiency per tile group (_core.group_constants reads its first
    # row's; the warp-specialised kernel's carries ws_efficiency)
    return (bm, bn, bk, stages, occ, one_wg, kind == K_WS), kind, per_cu, split


def search_plan(hw: HardwareProfile, a_dtype: DType, b_dtype: DType, a_layout: Layout,
                b_layout: Layout, staged: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The branch and bound's view of ``base_array(...)``: ``(fams, fam_rows)``, int64, read-only.

    Every row that is not a model twin is in exactly one family: the rows with one _family_key,
    which _core.screen_bounds bounds together. Family f's rows are
    ``fam_rows[fams[f, F_START]:fams[f, F_END]]``, ascending; the columns are _core's ``F_*``.
    The families of one tile group are contiguous (groups in order of their first row)."""
    return _search_plan(hw, a_dtype, b_dtype, a_layout, b_layout, staged, space.amd_direct_to_lds(hw))


@lru_cache(maxsize=256)
def _search_plan(hw: HardwareProfile, a_dtype: DType, b_dtype: DType, a_layout: Layout, b_layout: Layout,
                 staged: bool, _direct_lds: bool) -> tuple[np.ndarray, np.ndarray]:
    base = base_array(hw, a_dtype, b_dtype, a_layout, b_layout, staged)
    rows = np.nonzero(base[:, C["model_twin"]] < 0)[0]
    groups: dict[tuple, dict[tuple, list[int]]] = {}
    for i, r in zip(rows.tolist(), base[rows].tolist()):
        group, *fam = _family_key(tuple(r))
        groups.setdefault(group, {}).setdefault(tuple(fam), []).append(i)
    fams, fam_rows = [], []
    for g, members in enumerate(groups.values()):
        gend = len(fams) + len(members)
        # split-K last: screen_bounds skips them all at once when the tiles fill the machine
        for (kind, per_cu, split), rows in sorted(members.items(), key=lambda kv: (kv[0][0] == K_SPLITK, kv[1][0])):
            row = [0] * _core.F_LEN
            row[_core.F_START], row[_core.F_END] = len(fam_rows), len(fam_rows) + len(rows)
            row[_core.F_ROW], row[_core.F_KIND], row[_core.F_GRID] = rows[0], kind, per_cu
            row[_core.F_SPLIT], row[_core.F_GROUP], row[_core.F_GEND] = split, g, gend
            fams.append(row)
            fam_rows += rows
    fams_arr = np.array(fams, dtype=np.int64).reshape(-1, _core.F_LEN)
    rows_arr = np.array(fam_rows, dtype=np.int64)
    fams_arr.setflags(write=False)
    rows_arr.setflags(write=False)
    return fams_arr, rows_arr


def row_tiles(row: np.ndarray, problem: GemmProblem) -> int:
    """Output tiles of the row's tile shape for the problem (what a persistent grid is capped by)."""
    return -(-problem.m // int(row[C["block_m"]])) * -(-problem.n // int(row[C["block_n"]])) * problem.batch


def row_to_config(row: np.ndarray, problem: GemmProblem, hw: HardwareProfile) -> TileConfig:
    """Resolve one encoded row into a concrete TileConfig (grids made explicit)."""
    return config_for_tiles(row, row_tiles(row, problem), hw)


def config_for_tiles(row: "np.ndarray | list[int]", tiles: int, hw: HardwareProfile) -> TileConfig:
    """row_to_config given the problem's tile count (the only thing of the problem it depends on).
    ``row`` may be a list (``base.tolist()``): building from Python ints is ~1 µs faster."""
    kind, bm, bn, bk, warps, stages, group_m, nchip, chunk, gmult, split, wpe, mi, kpack = map(int, row[:14])
    kind = CODE_KIND[kind]
    grid = 0
    if kind is Kind.PERSISTENT or kind is Kind.STREAMK or kind is Kind.WS:
        grid = hw.compute_units * gmult
        if kind is not Kind.STREAMK:
            grid = persistent_grid(grid, tiles)
    return TileConfig(kind, bm, bn, bk, warps, stages, group_m, nchip, chunk, grid, split,
                      None if wpe < 0 else wpe, None if mi < 0 else mi, None if kpack < 0 else kpack)


# config_for_tiles unpacks the first 14 columns by position
assert COLS[:14] == ("kind", "block_m", "block_n", "block_k", "num_warps", "num_stages", "group_m", "num_chiplets",
                     "chunk", "grid_mult", "split_k", "waves_per_eu", "matrix_instr_nonkdim", "kpack")

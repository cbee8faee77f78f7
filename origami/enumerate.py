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
- AMD: matrix_instr_nonkdim ∈ {16, 32}, kpack 2 also tried with 16 on gfx942 16-bit, waves_per_eu = 0.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from origami.config import Kind, TileConfig
from origami.hardware import HardwareProfile
from origami.problem import DType, GemmProblem, Layout
from origami import space

__all__ = ["COLS", "KIND_CODE", "base_array", "row_to_config", "enumerate_configs"]

COLS = ("kind", "block_m", "block_n", "block_k", "num_warps", "num_stages", "group_m", "num_chiplets",
        "chunk", "grid_mult", "split_k", "waves_per_eu", "matrix_instr_nonkdim", "kpack", "occupancy",
        "log2_block_m", "log2_block_n", "log2_block_k", "model_twin", "group_end")
C = {name: i for i, name in enumerate(COLS)}
KIND_CODE = {Kind.DP: 0, Kind.PERSISTENT: 1, Kind.STREAMK: 2, Kind.SPLITK: 3}
CODE_KIND = {v: k for k, v in KIND_CODE.items()}

# Large tiles first (branch and bound finds a good bound early); between mirror-image tiles the
# wider-in-N one comes first, so it wins ties: on the H200 the best tile had BLOCK_N > BLOCK_M on
# 11 of 14 shapes (H200.md, 2026-11-29).
_TILES = ((128, 256), (256, 128), (64, 256), (128, 128), (256, 64), (64, 128), (128, 64), (64, 64),
          (32, 128), (32, 64), (16, 128), (16, 64))
_SPLITS = (2, 4, 8, 16)
_GROUPS = (8, 1)


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


@lru_cache(maxsize=256)
def base_array(hw: HardwareProfile, a_dtype: DType, b_dtype: DType, a_layout: Layout, b_layout: Layout) -> np.ndarray:
    """All problem-independent-valid candidate rows for this dtype/layout class (int64, read-only)."""
    probe = GemmProblem(1 << 14, 1 << 14, 1 << 14, a_dtype, b_dtype, DType.BF16, a_layout, b_layout)
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
                        if any(p(tile, probe, hw) for p in (space.check_smem, space.check_registers,
                                                            space.check_instr, space.check_vendor)):
                            continue
                        occ = space.resident_programs(tile, probe, hw)
                        if occ < 1:
                            continue
                        ex = (-1 if wpe is None else wpe, -1 if mi is None else mi, -1 if kp is None else kp)
                        for nc, ch in remaps:
                            for g in _GROUPS:
                                rows.append((0, bm, bn, bk, w, s, g, nc, ch, 0, 1, *ex, occ))
                            rows.append((1, bm, bn, bk, w, s, 8, nc, ch, occ, 1, *ex, occ))
                            for r in sorted({occ, 1}, reverse=True):
                                rows.append((2, bm, bn, bk, w, s, 8, nc, ch, r, 1, *ex, occ))
                        # split-K tiles are few: GROUP_M and the chiplet remap do not matter for them
                        for sk in _SPLITS:
                            rows.append((3, bm, bn, bk, w, s, 1, 1, 1, 0, sk, *ex, occ))
    # model_twin: index of an earlier row that differs only in knobs the model does not score
    # (AMD waves_per_eu / matrix_instr_nonkdim / kpack), else -1. Such a row always ties its twin,
    # and ties go to the lower index, so the scorer copies the twin's score instead of recomputing.
    first: dict[tuple, int] = {}
    twins = []
    for i, r in enumerate(rows):
        key = r[:11] + r[14:]
        twins.append(first.setdefault(key, i) if key in first else -1)
        first.setdefault(key, i)
    # group_end: rows sharing one tile (block sizes, warps, stages, AMD knobs) are contiguous; each
    # row records where its group ends, so the scorer can bound a whole group at once.
    ends = [0] * len(rows)
    start = 0
    for i in range(1, len(rows) + 1):
        if i == len(rows) or (rows[i][1:6] + rows[i][11:14]) != (rows[start][1:6] + rows[start][11:14]):
            for j in range(start, i):
                ends[j] = i
            start = i
    rows = [r + (r[1].bit_length() - 1, r[2].bit_length() - 1, r[3].bit_length() - 1, t, e)
            for r, t, e in zip(rows, twins, ends)]
    arr = np.array(rows, dtype=np.int64).reshape(-1, len(COLS))
    arr.setflags(write=False)
    return arr


def row_tiles(row: np.ndarray, problem: GemmProblem) -> int:
    """Output tiles of the row's tile shape for the problem (what a persistent grid is capped by)."""
    return -(-problem.m // int(row[C["block_m"]])) * -(-problem.n // int(row[C["block_n"]])) * problem.batch


def row_to_config(row: np.ndarray, problem: GemmProblem, hw: HardwareProfile) -> TileConfig:
    """Resolve one encoded row into a concrete TileConfig (grids made explicit)."""
    return config_for_tiles(row, row_tiles(row, problem), hw)


def config_for_tiles(row: np.ndarray, tiles: int, hw: HardwareProfile) -> TileConfig:
    """row_to_config given the problem's tile count (the only thing of the problem it depends on)."""
    kind = CODE_KIND[int(row[C["kind"]])]
    bm, bn = int(row[C["block_m"]]), int(row[C["block_n"]])
    grid = 0
    if kind in (Kind.PERSISTENT, Kind.STREAMK):
        grid = hw.compute_units * int(row[C["grid_mult"]])
        if kind is Kind.PERSISTENT:
            grid = max(1, min(grid, tiles))
    ex = [None if int(row[C[n]]) < 0 else int(row[C[n]]) for n in ("waves_per_eu", "matrix_instr_nonkdim", "kpack")]
    return TileConfig(kind, bm, bn, int(row[C["block_k"]]), int(row[C["num_warps"]]), int(row[C["num_stages"]]),
                      int(row[C["group_m"]]), int(row[C["num_chiplets"]]), int(row[C["chunk"]]), grid,
                      int(row[C["split_k"]]), *ex)


def enumerate_configs(problem: GemmProblem, hw: HardwareProfile):
    """Yield every valid TileConfig for the problem (the scorer's finite rows, in row order)."""
    from origami.hardware import load_profile
    from origami.select import score_problem

    hw = load_profile(hw)
    base, lat, _ = score_problem(problem, hw)
    for i in np.nonzero(np.isfinite(lat))[0]:
        yield row_to_config(base[i], problem, hw)

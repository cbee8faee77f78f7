"""The candidate-row encoding and the persistent-grid rule: the one definition that the enumerator
(``origami.enumerate``), the scorer (``origami._core``), the selector (``origami.select``) and the
table builder (``tritonblas.tables``) share.

A candidate is one int64 row of :data:`COLS`; :data:`C` maps a column name to its index and the
``R_*`` names are the same indices as plain ints (what the numba scorer indexes with). Kinds are
encoded by :data:`KIND_CODE` (``K_*`` as plain ints).
"""

from __future__ import annotations

from origami.config import Kind

__all__ = ["COLS", "C", "KIND_CODE", "CODE_KIND", "PERSISTENT_GRID_CODES", "persistent_grid"]

COLS = ("kind", "block_m", "block_n", "block_k", "num_warps", "num_stages", "group_m", "num_chiplets",
        "chunk", "grid_mult", "split_k", "waves_per_eu", "matrix_instr_nonkdim", "kpack", "occupancy",
        "staged_spill", "log2_block_m", "log2_block_n", "log2_block_k", "model_twin")
C = {name: i for i, name in enumerate(COLS)}

R_KIND, R_BM, R_BN, R_BK = C["kind"], C["block_m"], C["block_n"], C["block_k"]
R_WARPS, R_STAGES, R_GROUP, R_NCHIP, R_CHUNK = C["num_warps"], C["num_stages"], C["group_m"], C["num_chiplets"], C["chunk"]
R_GMULT, R_SPLIT, R_WPE, R_MI, R_KPACK = C["grid_mult"], C["split_k"], C["waves_per_eu"], C["matrix_instr_nonkdim"], C["kpack"]
R_OCC, R_LBM, R_LBN, R_LBK, R_TWIN = C["occupancy"], C["log2_block_m"], C["log2_block_n"], C["log2_block_k"], C["model_twin"]
R_SPILL = C["staged_spill"]  # 1: the config spills under register-staged loads (origami.space.staged_spills)

K_DP, K_PERSISTENT, K_STREAMK, K_SPLITK, K_WS = 0, 1, 2, 3, 4
KIND_CODE = {Kind.DP: K_DP, Kind.PERSISTENT: K_PERSISTENT, Kind.STREAMK: K_STREAMK, Kind.SPLITK: K_SPLITK,
             Kind.WS: K_WS}
# kinds whose grid is persistent_grid(CUs · grid_mult, tiles): their TileConfig depends on the problem
PERSISTENT_GRID_CODES = (K_PERSISTENT, K_WS)
CODE_KIND = {v: k for k, v in KIND_CODE.items()}

# NVIDIA rows under this many bytes aligned cannot use cp.async (4, 8 or 16 bytes a copy): their loads
# go through registers (origami.space.register_staged; origami._core's staged terms)
STAGED_ALIGN = 4
# ... and rows of this many bytes load 16-byte vectors (TMA, or cp.async/dwordx4 of full width): under it, and at or
# over STAGED_ALIGN, NVIDIA's copies are 4 or 8 bytes wide (origami._core._load_class) and AMD's lose their dwordx4
VECTOR_ALIGN = 16


def persistent_grid(programs: int, tiles: int) -> int:
    """Programs a persistent launch runs: the ``programs`` asked for (an enumerated row asks for
    CUs · grid_mult), capped by the output ``tiles`` (a program without a tile would only exit), and at
    least one. Plain Python on ints, so ``origami._core`` compiles the same function with numba."""
    return max(1, min(programs, tiles))

"""Program-id → tile mappings of the kernels, in plain Python (the model's view of the kernels).

These are bit-for-bit mirrors of the ``@triton.jit`` helpers in ``tritonblas/kernels/pid.py``; the
kernel tests check that both agree on every program. They use only integer ``+ - * // %`` and
comparisons on non-negative ints, so ``numba.njit`` compiles them unchanged (the model may jit them).
The ``*_array`` variants are the same arithmetic on numpy arrays, for vectorised scoring and tests.

Order of the transforms in every kernel: hardware program id → :func:`chiplet_remap` (logical
program id) → tile id (``program`` for data-parallel, ``program + i·grid`` for persistent loops)
→ batch index and :func:`tile_coords` (GROUP_M swizzle inside one batch entry).
"""

from __future__ import annotations

import numpy as np

__all__ = ["chiplet_remap", "chiplet_remap_array", "tile_coords", "tile_coords_array", "streamk_split",
           "streamk_range", "streamk_owner"]


def chiplet_remap(pid: int, grid: int, num_chiplets: int, chunk: int) -> int:
    """Logical program id of hardware program ``pid`` in a launch of ``grid`` programs.

    AMD dispatches program ``p`` to chiplet (XCD) ``p mod X``. The remap gives every chiplet runs of
    ``chunk`` consecutive logical ids, so neighbouring tiles share one chiplet's L2:

    - the first ``F = X·chunk·⌊grid/(X·chunk)⌋`` programs: ``p = (c·chunk + j)·X + x`` (chiplet ``x``,
      its ``c``-th chunk, position ``j``) maps to ``c·X·chunk + x·chunk + j``;
    - the ragged tail ``[F, grid)`` (fewer than ``X·chunk`` programs) gives each chiplet one
      contiguous run: the first ``R mod X`` chiplets get ``⌈R/X⌉`` ids, the others ``⌊R/X⌋``.

    It is a permutation of ``range(grid)`` for every grid, and the identity when ``X = 1`` (also
    when ``chunk = 1``: runs of one tile are the hardware's own round-robin).
    """
    if num_chiplets <= 1:
        return pid
    width = num_chiplets * chunk
    full = (grid // width) * width
    xcd = pid % num_chiplets
    if pid < full:
        local = pid // num_chiplets
        return (local // chunk) * width + xcd * chunk + local % chunk
    rem = grid - full
    per = (rem + num_chiplets - 1) // num_chiplets
    tall = rem % num_chiplets
    if tall == 0:
        tall = num_chiplets
    local = (pid - full) // num_chiplets
    if xcd < tall:
        return full + xcd * per + local
    return full + tall * per + (xcd - tall) * (per - 1) + local


def chiplet_remap_array(pid: np.ndarray, grid: int, num_chiplets: int, chunk: int) -> np.ndarray:
    """:func:`chiplet_remap` over an integer array of program ids (same arithmetic, branch-free)."""
    pid = np.asarray(pid, dtype=np.int64)
    if num_chiplets <= 1:
        return pid.copy()
    width = num_chiplets * chunk
    full = (grid // width) * width
    xcd = pid % num_chiplets
    local = pid // num_chiplets
    in_full = (local // chunk) * width + xcd * chunk + local % chunk
    rem = grid - full
    per = (rem + num_chiplets - 1) // num_chiplets
    tall = rem % num_chiplets or num_chiplets
    tlocal = np.maximum(pid - full, 0) // num_chiplets
    in_tail = full + np.where(xcd < tall, xcd * per + tlocal, tall * per + (xcd - tall) * (per - 1) + tlocal)
    return np.where(pid < full, in_full, in_tail)


def tile_coords(tile_id: int, num_pid_m: int, num_pid_n: int, group_m: int) -> tuple[int, int]:
    """``(pid_m, pid_n)`` of ``tile_id`` under the GROUP_M swizzle (Triton tutorial 03).

    Tiles are walked in groups of ``group_m`` tile rows; inside a group, column by column. The last
    group may be shorter. A permutation of the ``num_pid_m × num_pid_n`` tiles for every ``group_m``.
    """
    in_group = group_m * num_pid_n
    group = tile_id // in_group
    first_m = group * group_m
    size_m = min(num_pid_m - first_m, group_m)
    r = tile_id % in_group
    return first_m + r % size_m, r // size_m


def tile_coords_array(tile_id: np.ndarray, num_pid_m: int, num_pid_n: int, group_m: int):
    """:func:`tile_coords` over an integer array of tile ids."""
    tile_id = np.asarray(tile_id, dtype=np.int64)
    in_group = group_m * num_pid_n
    group = tile_id // in_group
    first_m = group * group_m
    size_m = np.minimum(num_pid_m - first_m, group_m)
    r = tile_id % in_group
    return first_m + r % size_m, r // size_m


def streamk_split(num_tiles: int, iters: int, grid: int) -> tuple[int, int, int, int]:
    """Stream-K work split of ``tritonblas.kernels.streamk``: ``(dp_tiles, sk_tiles, base, extra)``.

    The first ``dp_tiles = num_tiles − num_tiles mod grid`` tiles are whole (round-robin); the
    ``sk_tiles`` remaining tiles' ``sk_tiles·iters`` K-iterations are cut into ``grid`` contiguous
    ranges: the first ``extra`` programs get ``base + 1`` iterations, the others ``base``.
    """
    sk_tiles = num_tiles % grid
    total = sk_tiles * iters
    return num_tiles - sk_tiles, sk_tiles, total // grid, total % grid


def streamk_range(pid: int, base: int, extra: int) -> tuple[int, int]:
    """``[start, end)`` of logical program ``pid`` on the Stream-K iteration line."""
    start = pid * base + min(pid, extra)
    return start, start + base + (1 if pid < extra else 0)


def streamk_owner(it: int, base: int, extra: int) -> int:
    """The logical program whose Stream-K range holds iteration ``it``."""
    big = extra * (base + 1)
    if it < big:
        return it // (base + 1)
    return extra + (it - big) // max(base, 1)

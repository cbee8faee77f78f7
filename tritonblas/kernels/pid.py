"""Program-id transforms as ``@triton.jit`` helpers (mirrored in plain Python by ``origami.pidmap``).

Both work on a scalar program id or on a whole vector of ids (``tl.where``, no data-dependent
branches), so a test kernel can map every program of a grid in one launch.
"""

import triton
import triton.language as tl

__all__ = ["chiplet_remap", "tile_coords"]


@triton.jit
def chiplet_remap(pid, grid, NUM_CHIPLETS: tl.constexpr, CHUNK: tl.constexpr):
    """Logical program id of hardware program ``pid``: runs of CHUNK consecutive logical ids land on
    one chiplet (AMD dispatches program p to chiplet p mod NUM_CHIPLETS); the ragged tail gives each
    chiplet one contiguous run. A permutation of range(grid); identity for NUM_CHIPLETS == 1."""
    if NUM_CHIPLETS == 1:
        out = pid
    else:
        width: tl.constexpr = NUM_CHIPLETS * CHUNK
        full = (grid // width) * width
        xcd = pid % NUM_CHIPLETS
        local = pid // NUM_CHIPLETS
        in_full = (local // CHUNK) * width + xcd * CHUNK + local % CHUNK
        rem = grid - full
        per = (rem + NUM_CHIPLETS - 1) // NUM_CHIPLETS
        tall = rem % NUM_CHIPLETS
        tall = tl.where(tall == 0, NUM_CHIPLETS, tall)
        tlocal = tl.maximum(pid - full, 0) // NUM_CHIPLETS
        in_tail = full + tl.where(xcd < tall, xcd * per + tlocal, tall * per + (xcd - tall) * (per - 1) + tlocal)
        out = tl.where(pid < full, in_full, in_tail)
    return out


@triton.jit
def tile_coords(tile_id, num_pid_m, num_pid_n, GROUP_M: tl.constexpr):
    """(pid_m, pid_n) of ``tile_id`` under the GROUP_M swizzle (Triton tutorial 03)."""
    in_group = GROUP_M * num_pid_n
    group = tile_id // in_group
    first_m = group * GROUP_M
    size_m = tl.minimum(num_pid_m - first_m, GROUP_M)
    r = tile_id % in_group
    return first_m + r % size_m, r // size_m

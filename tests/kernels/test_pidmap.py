"""Program-id transforms: the plain-Python mirrors (origami.pidmap) are permutations for every grid
up to 5000, and the @triton.jit versions (tritonblas.kernels.pid) compute exactly the mirrors."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import triton
import triton.language as tl

from origami.pidmap import chiplet_remap, chiplet_remap_array, tile_coords, tile_coords_array
from tritonblas.kernels.pid import chiplet_remap as jit_remap
from tritonblas.kernels.pid import tile_coords as jit_coords

CHIPLETS = (1, 2, 4, 8)
CHUNKS = (1, 2, 3, 8, 32)
MAX_GRID = 5000


def test_mirror_is_a_permutation_for_every_grid():
    """Exhaustive: every grid 1..5000, every chiplet count and chunk, via the scalar mirror compiled
    with numba (which also proves the mirror is numba-friendly)."""
    numba = pytest.importorskip("numba")
    remap = numba.njit(chiplet_remap)

    @numba.njit
    def first_failure(num_chiplets, chunk, max_grid):
        for grid in range(1, max_grid + 1):
            seen = np.zeros(grid, dtype=np.bool_)
            for pid in range(grid):
                q = remap(pid, grid, num_chiplets, chunk)
                if q < 0 or q >= grid or seen[q]:
                    return grid
                seen[q] = True
        return 0

    for x in CHIPLETS:
        for chunk in CHUNKS:
            assert first_failure(x, chunk, MAX_GRID) == 0, (x, chunk)


def test_scalar_and_array_mirrors_agree():
    for x in CHIPLETS:
        for chunk in CHUNKS:
            for grid in (*range(1, 80), 131, 132, 304, 999, 4096, 4999, 5000):
                pids = np.arange(grid)
                want = chiplet_remap_array(pids, grid, x, chunk).tolist()
                assert [chiplet_remap(int(p), grid, x, chunk) for p in pids] == want


def test_remap_groups_runs_on_one_chiplet():
    """Programs on chiplet c (p mod X == c) get runs of `chunk` consecutive logical ids."""
    x, chunk, grid = 8, 4, 8 * 4 * 5
    logical = chiplet_remap_array(np.arange(grid), grid, x, chunk)
    for c in range(x):
        ids = np.sort(logical[np.arange(grid) % x == c])
        assert all(ids[i:i + chunk].tolist() == list(range(ids[i], ids[i] + chunk)) for i in range(0, len(ids), chunk))
    assert chiplet_remap_array(np.arange(100), 100, 1, 7).tolist() == list(range(100))


def test_tile_coords_mirror_is_a_permutation():
    for gm in (1, 2, 3, 8):
        for npm in range(1, 40):
            for npn in (1, 2, 5, 13, 32):
                pm, pn = tile_coords_array(np.arange(npm * npn), npm, npn, gm)
                assert pm.min() >= 0 and pm.max() < npm and pn.min() >= 0 and pn.max() < npn
                assert np.unique(pm * npn + pn).size == npm * npn
                assert (int(pm[-1]), int(pn[-1])) == tile_coords(npm * npn - 1, npm, npn, gm)


# --- the jit versions, many programs mapped per launch ----------------------------------------
@triton.jit
def remap_kernel(Grids, Out, NUM_CHIPLETS: tl.constexpr, CHUNK: tl.constexpr, P: tl.constexpr):
    g = tl.load(Grids + tl.program_id(0))
    pid = tl.arange(0, P)
    q = jit_remap(pid, g, NUM_CHIPLETS, CHUNK)
    tl.store(Out + tl.program_id(0) * P + pid, tl.where(pid < g, q, -1))


@triton.jit
def coords_kernel(Shapes, Out, GROUP_M: tl.constexpr, P: tl.constexpr):
    npm = tl.load(Shapes + 2 * tl.program_id(0))
    npn = tl.load(Shapes + 2 * tl.program_id(0) + 1)
    t = tl.arange(0, P)
    ok = t < npm * npn
    pm, pn = jit_coords(tl.where(ok, t, 0), npm, npn, GROUP_M)
    tl.store(Out + tl.program_id(0) * 2 * P + t, tl.where(ok, pm, -1))
    tl.store(Out + tl.program_id(0) * 2 * P + P + t, tl.where(ok, pn, -1))


@pytest.mark.timeout(120)
@pytest.mark.parametrize("x", CHIPLETS)
def test_jit_remap_matches_mirror(x, device):
    """Every grid 1..64, the classic grids (132, 304) and a sample up to 5000, each in one program."""
    from tritonblas import _interpreter

    _interpreter.apply()
    kernel = remap_kernel
    rng = np.random.default_rng(x)
    grids = sorted({*range(1, 65), 131, 132, 303, 304, 1024, 4095, 4096, 4999, 5000,
                    *rng.integers(65, MAX_GRID + 1, size=12).tolist()})
    P = 8192
    g = torch.tensor(grids, dtype=torch.int32, device=device)
    for chunk in (1, 3, 8):
        out = torch.empty((len(grids), P), dtype=torch.int32, device=device)
        kernel[(len(grids),)](g, out, x, chunk, P)
        out = out.cpu().numpy()
        for i, grid in enumerate(grids):
            want = chiplet_remap_array(np.arange(grid), grid, x, chunk)
            assert np.array_equal(out[i, :grid], want), (x, chunk, grid)
            assert np.array_equal(np.sort(out[i, :grid]), np.arange(grid))


@pytest.mark.timeout(120)
def test_jit_tile_coords_matches_mirror(device):
    from tritonblas import _interpreter

    _interpreter.apply()
    kernel = coords_kernel
    shapes = [(m, n) for m in (1, 2, 7, 8, 9, 33) for n in (1, 3, 8, 31)]
    P = 2048
    s = torch.tensor(shapes, dtype=torch.int32, device=device).reshape(-1)
    for gm in (1, 4, 8):
        out = torch.empty((len(shapes), 2, P), dtype=torch.int32, device=device)
        kernel[(len(shapes),)](s, out, gm, P)
        out = out.cpu().numpy()
        for i, (m, n) in enumerate(shapes):
            pm, pn = tile_coords_array(np.arange(m * n), m, n, gm)
            assert np.array_equal(out[i, 0, :m * n], pm) and np.array_equal(out[i, 1, :m * n], pn), (m, n, gm)

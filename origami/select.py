"""Public model API: rank, select, explain, select_many (with a model-level LRU cache).

``rank``/``select`` score the whole candidate array of the problem's dtype/layout class in one
numba call; ``select_many`` scores many problems in parallel (prange) for tile tables.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from itertools import chain
import operator
from operator import attrgetter
from types import MappingProxyType
from typing import Any, Mapping, Sequence

import numpy as np

from origami import _core
from origami.config import TileConfig
from origami.config import Kind
from origami.kmajor import KMAJOR_ONLY_DTYPES, mma_reads_through_registers
from origami.space import PREDICATES, amd_direct_to_lds, narrow_loads, resident_programs, staged_spills
from origami._encoding import (KIND_CODE, PERSISTENT_GRID_CODES, R_BM, R_BN, R_GMULT, R_KIND, R_NCHIP,
                               STAGED_ALIGN, VECTOR_ALIGN, persistent_grid)
from origami.enumerate import base_array, config_for_tiles, row_tiles, row_to_config, search_plan
from origami.hardware import HardwareProfile, load_profile
from origami.problem import GemmProblem

__all__ = ["Estimate", "rank", "select", "select_among", "predict", "explain", "select_many", "score_problem", "warmup",
           "clear_cache", "candidates"]

MAIN_TERMS = ("compute", "l2", "llc", "hbm", "latency")


@dataclass(frozen=True, slots=True)
class Estimate:
    """One scored candidate: its config, predicted latency (ns), per-term times (ns) and bound."""

    config: TileConfig
    latency_ns: float
    terms: Mapping[str, float]
    bound: str

    def tflops(self, problem: GemmProblem) -> float:
        return problem.flops / self.latency_ns / 1e3


@lru_cache(maxsize=64)
def _hw_vector(hw: HardwareProfile, rate_key: str, mn_regs: bool = False) -> np.ndarray:
    """The scorer's hardware vector for one problem class: ``rate_key``'s matrix rate, and with
    ``mn_regs`` (origami.kmajor.mma_reads_through_registers) model.mn_major_tile_cost on the wide MMA."""
    c, mem, mp = hw.compute, hw.memory, hw.model
    v = np.zeros(_core.HW_LEN)
    v[_core.HW_CUS] = c["compute_units"]
    v[_core.HW_CHIPLETS] = c["chiplets"]
    v[_core.HW_RR] = 1.0 if c["dispatch"] == "round_robin" else 0.0
    v[_core.HW_CU_RATE] = hw.sustained_peak_flops(rate_key) / c["compute_units"] / 1e9
    v[_core.HW_WG1_EFF] = 1.0
    if rate_key == "fp8" and not hw.is_amd:
        # Hopper fp8 with the accumulator promoted to fp32 (our kernels' default): the promotion adds run on
        # the FP32 pipes next to the MMAs (hardware.MODEL_PARAMS; the interval: tritonblas.plan.fp8_promote_k)
        v[_core.HW_CU_RATE] *= mp["fp8_promote_efficiency"]
        v[_core.HW_WG1_EFF] = mp["fp8_single_warpgroup_efficiency"]
    im, in_, ik = hw.matrix_instr_shape[rate_key]
    v[_core.HW_IM], v[_core.HW_IN], v[_core.HW_IK] = im, in_, ik
    v[_core.HW_L2_BYTES] = mem["l2_bytes_per_chiplet"]
    v[_core.HW_L2_BW] = mem["l2_bytes_per_s"] * mp["l2_efficiency"] / 1e9
    v[_core.HW_LLC_BYTES] = mem["llc_bytes"]
    v[_core.HW_LLC_BW] = max(mem["llc_bytes_per_s"] * mp["llc_efficiency"], 1.0) / 1e9
    v[_core.HW_HBM_BW] = mem["hbm_bytes_per_s"] * mp["hbm_efficiency"] / 1e9
    v[_core.HW_LAUNCH] = hw.launch_overhead_ns
    v[_core.HW_PEAK] = max(hw.matrix_peak_flops[rate_key], 1.0) / 1e9
    v[_core.HW_MMA_EFF] = mp["mma_efficiency"]
    v[_core.HW_SMALL_EFF] = mp["small_tile_efficiency"]
    v[_core.HW_SK_EFF] = mp["streamk_efficiency"]
    v[_core.HW_SPLITK_EFF] = mp["splitk_efficiency"]
    v[_core.HW_KITER] = mp["k_iter_overhead_ns"]
    v[_core.HW_TILE] = mp["tile_overhead_ns"]
    v[_core.HW_UNALIGNED] = mp["unaligned_penalty"]
    v[_core.HW_FIXUP] = mp["fixup_ns"]
    v[_core.HW_LAT] = mp["mem_latency_ns"]
    v[_core.HW_HBM_LAT] = mp["hbm_latency_ns"]
    v[_core.HW_OVERLAP] = mp["overlap_loss"]
    v[_core.HW_SK_SPLIT] = mp["streamk_split_efficiency"]
    v[_core.HW_SK_UNALIGNED] = mp["streamk_unaligned_penalty"]
    v[_core.HW_SPLIT_READS] = mp["splitk_range_reads"]
    v[_core.HW_SK_READS] = mp["streamk_range_reads"]
    v[_core.HW_SPILL] = mp["staged_spill_penalty"]  # read only by rows whose staged_spill column is 1
    v[_core.HW_FIX_READ] = mp["splitk_fixup_read_efficiency"]  # read only by split-K rows
    v[_core.HW_WS_EFF] = mp["ws_efficiency"]  # read only by 'ws' rows (origami.space.ws_space)
    v[_core.HW_MN_COST] = mp["mn_major_tile_cost"] if mn_regs else 0.0
    # register-staged loads exist only on NVIDIA (origami.space.register_staged)
    v[_core.HW_STAGED_EXP] = 0.0 if hw.is_amd else mp["staged_load_exponent"]
    v[_core.HW_NARROW_EXP] = 0.0 if hw.is_amd else mp["narrow_load_exponent"]
    v[_core.HW_MAX_WARPS] = c["max_warps_per_cu"]
    v.setflags(write=False)
    return v


class _Space:
    """Everything the model needs for one (profile, dtype/layout class), built once: the candidate
    array and its tile efficiencies, the hw vector, the branch and bound's search plan, the
    dtype sizes, and a memo of the rows' TileConfigs (building a validated TileConfig costs
    microseconds; a row's config depends on the problem only through a persistent grid)."""

    __slots__ = ("hw", "base", "effs", "hv", "fams", "fam_rows", "gconst", "ab", "bb", "peak", "hbm_bw",
                 "kinds", "configs")

    MAX_CONFIGS = 1 << 16

    def __init__(self, hw: HardwareProfile, a_dtype, b_dtype, a_layout, b_layout, staged: bool = False,
                 mn_regs: bool = False):
        self.hw = hw
        self.base = base_array(hw, a_dtype, b_dtype, a_layout, b_layout, staged)
        self.hv = _hw_vector(hw, hw.rate_key(a_dtype), mn_regs)
        self.effs = _core.tile_efficiencies(self.base, self.hv)
        self.effs.setflags(write=False)
        self.fams, self.fam_rows = search_plan(hw, a_dtype, b_dtype, a_layout, b_layout, staged)
        self.gconst = _core.group_constants(self.base, self.effs, self.fams, a_dtype.bytes, b_dtype.bytes, self.hv)
        self.gconst.setflags(write=False)
        self.ab, self.bb = a_dtype.bytes, b_dtype.bytes
        self.peak, self.hbm_bw = float(self.hv[_core.HW_PEAK]), float(self.hv[_core.HW_HBM_BW])
        self.kinds = self.base[:, R_KIND].tolist()
        self.configs: dict[tuple[int, int], TileConfig] = {}
        for i, row in zip(self.fam_rows.tolist(), self.base[self.fam_rows].tolist()):
            if row[R_KIND] not in PERSISTENT_GRID_CODES:  # every row select can return: built now, ~1.5-3.5 ms
                self.configs[(i, 0)] = config_for_tiles(row, 0, hw)

    def config(self, i: int, problem: GemmProblem) -> TileConfig:
        """Row i's TileConfig for ``problem`` (memoised by row and persistent grid)."""
        grid = 0
        if self.kinds[i] in PERSISTENT_GRID_CODES:  # the row's config depends on the problem only through this grid
            grid = persistent_grid(self.hw.compute_units * int(self.base[i, R_GMULT]), row_tiles(self.base[i], problem))
        cfg = self.configs.get((i, grid))
        if cfg is None:
            if len(self.configs) >= self.MAX_CONFIGS:
                self.configs.clear()
            cfg = self.configs[(i, grid)] = config_for_tiles(self.base[i].tolist(), grid, self.hw)
        return cfg


@lru_cache(maxsize=256)
def _space_of(hw: HardwareProfile, a_dtype, b_dtype, a_layout, b_layout, staged: bool, _direct_lds: bool,
              mn_regs: bool = False) -> _Space:
    return _Space(hw, a_dtype, b_dtype, a_layout, b_layout, staged, mn_regs)


def _mn_priced(hw: HardwareProfile, problem: GemmProblem) -> bool:
    """Whether ``problem``'s class carries model.mn_major_tile_cost: the profile sets it (> 0), the wide MMA
    reads an operand through registers (origami.kmajor.mma_reads_through_registers), and the operands are
    16-byte aligned, the rows the term was fitted on (benchmarks/shapes/kmajor.yaml). Off them its ordering is the
    wrong way round, on the H100's unaligned training rows (benchmarks/shapes/unaligned.yaml):
    - register-staged fp8 (rows under 4 bytes aligned, whose loads model.unaligned_penalty already prices as
      passing through registers): dp 64x256x64 w8 ran 0.56x its prediction and was the fastest config of 5 of the
      first 6 shapes, dp 256x64x64 w8 (the pick with the term) 4.1x (benchmarks/data/h100/unaligned_fp8_e4m3.csv);
    - 4-byte-aligned tf32 (cp.async, no TMA): 128x256 tiles ran about 0.5x their prediction and 256x128 ones, the
      picks with the term, 1.0-1.4x; without it the file's pick geomean goes 0.789 -> 0.824, no other training
      file moves (benchmarks/data/h100/unaligned_tf32.csv, the picks without the term timed in each sample)."""
    return hw.model["mn_major_tile_cost"] > 0 and mma_reads_through_registers(problem, hw) \
        and problem.align_bytes >= 16


def _space(problem: GemmProblem, hw: HardwareProfile) -> _Space:
    key = hw.rate_key(problem.a_dtype)
    if key is None:
        raise ValueError(f"a_dtype: {problem.a_dtype.value} is not an operand type {hw.name}'s ({hw.arch}) compiler "
                         "takes; no kernel configuration exists")
    if hw.matrix_peak_flops.get(key, 0.0) <= 0:
        raise ValueError(f"a_dtype: {problem.a_dtype.value} has no matrix rate on {hw.name} "
                         f"(matrix.peak_flops.{key} is 0 in {hw.path}); no kernel configuration exists")
    return _space_of(hw, problem.a_dtype, problem.b_dtype, problem.a_layout, problem.b_layout,
                     narrow_loads(problem, hw), amd_direct_to_lds(hw), _mn_priced(hw, problem))


def _inputs(problem: GemmProblem, hw: HardwareProfile):
    """(candidate array, tile efficiencies, hw vector) of the problem's class."""
    sp = _space(problem, hw)
    return sp.base, sp.effs, sp.hv


def score_problem(problem: GemmProblem, hw: HardwareProfile):
    """(rows, latency_ns[rows], terms[rows, T]) for every row of the problem's candidate array."""
    hw = load_profile(hw)
    base, effs, hv = _inputs(problem, hw)
    lat = np.empty(base.shape[0])
    terms = np.zeros((base.shape[0], _core.T_LEN))
    _core.score_all(base, effs, problem.m, problem.n, problem.k, problem.batch, problem.a_dtype.bytes,
                    problem.b_dtype.bytes, problem.c_dtype.bytes, problem.align_bytes, hv, lat, terms)
    return base, lat, terms


_T = {name: i for i, name in enumerate(_core.TERM_NAMES)}
_LAUNCH, _EPILOGUE, _FIXUP, _WAVES = _T["launch"], _T["epilogue"], _T["fixup"], _T["waves"]
assert _core.TERM_NAMES[:len(MAIN_TERMS)] == MAIN_TERMS


def _bound(terms: Sequence[float], latency: float, floor: tuple[float, float] = (0.0, 0.0)) -> str:
    """What bounds the estimate. When the roofline floor (compute, memory) set the latency, that
    floor's resource does; otherwise the largest main-loop term (the first of MAIN_TERMS on a tie;
    ``waves`` when the partial last wave costs over a quarter of the compute, ``launch``/``epilogue``
    when overheads dominate)."""
    if latency <= max(floor) * (1 + _core.FLOOR_TIE) * (1 + 1e-9):  # _core._final clamped the total
        return "compute" if floor[0] >= floor[1] else "hbm"
    if terms[_LAUNCH] > 0.5 * latency:
        return "launch"
    main = list(terms[:len(MAIN_TERMS)])
    overhead = terms[_EPILOGUE] + terms[_FIXUP]
    if overhead > sum(main) and overhead > 0.3 * latency:
        return "epilogue"
    top = main.index(max(main))
    if top == 0 and terms[_WAVES] > 0.25 * main[0]:  # MAIN_TERMS[0] is compute
        return "waves"
    return MAIN_TERMS[top]


def _estimate(sp: _Space, i: int, lat: float, t: Sequence[float], problem: GemmProblem,
              config: TileConfig | None = None) -> Estimate:
    """Row i's Estimate (``config``: the row's config when the caller has it, as predict does)."""
    lat = float(lat)
    m, n, k, batch = problem.m, problem.n, problem.k, problem.batch
    # the scorer's roofline floor terms: FLOPs at the datasheet peak, compulsory bytes at HBM
    floor = (2 * m * n * k * batch / sp.peak,
             batch * (m * k * sp.ab + k * n * sp.bb + m * n * problem.c_dtype.bytes) / sp.hbm_bw)
    return Estimate(sp.config(int(i), problem) if config is None else config, lat,
                    MappingProxyType(dict(zip(_core.TERM_NAMES, t))), _bound(t, lat, floor))


@lru_cache(maxsize=4096)
def _rank_cached(problem: GemmProblem, hw: HardwareProfile, k: int, _direct_lds: bool) -> tuple[Estimate, ...]:
    base, lat, terms = score_problem(problem, hw)
    finite = np.nonzero(np.isfinite(lat))[0]
    if finite.size == 0:
        raise ValueError(f"no valid kernel configuration for {problem.describe()} on {hw.name}")
    order = finite[np.argsort(lat[finite], kind="stable")][:k]
    sp = _space(problem, hw)
    return tuple(_estimate(sp, i, lat[i], terms[i].tolist(), problem) for i in order)


def rank(problem: GemmProblem, hw: "HardwareProfile | str", k: int = 5) -> list[Estimate]:
    """The ``k`` best candidates, best first (ties broken by the fixed enumeration order); ``k`` an
    int >= 1 (a TypeError or ValueError naming ``k`` otherwise)."""
    k = _check_k(k)
    _check_problem(problem)
    _check_output(problem)
    hw = load_profile(hw)
    return list(_rank_cached(problem, hw, k, amd_direct_to_lds(hw)))


def _check_problem(problem: Any) -> GemmProblem:
    """``problem`` itself, or a TypeError naming it: the entry points take an origami.GemmProblem."""
    if not isinstance(problem, GemmProblem):
        raise TypeError(f"problem: expected an origami.GemmProblem, got {type(problem).__name__} "
                        f"(build one with origami.GemmProblem(m, n, k, ...))")
    return problem


def _check_output(problem: GemmProblem, what: str = "select", label: str = "") -> None:
    """ValueError where ``problem``'s output is empty (M, N or batch 0): no kernel to choose (``label`` prefixes the
    message: which of many problems)."""
    if problem.m == 0 or problem.n == 0 or problem.batch == 0:
        raise ValueError(f"{label}{problem.describe()}: empty output, nothing to {what}")


def _check_k(k: Any) -> int:
    try:
        n = operator.index(k) if not isinstance(k, bool) else None
    except TypeError:
        n = None
    if n is None:
        raise TypeError(f"k: expected an int >= 1 (how many candidates), got {type(k).__name__} {k!r}")
    if n < 1:
        raise ValueError(f"k: expected an int >= 1 (how many candidates), got {k!r}")
    return n


def select(problem: GemmProblem, hw: "HardwareProfile | str") -> Estimate:
    """The best candidate (== rank(problem, hw, 1)[0]), via the branch-and-bound scorer."""
    _check_problem(problem)
    _check_output(problem)
    hw = load_profile(hw)
    return _select_cached(problem, hw, amd_direct_to_lds(hw))


@lru_cache(maxsize=4096)
def _select_cached(problem: GemmProblem, hw: HardwareProfile, _direct_lds: bool) -> Estimate:
    # _direct_lds: the compiler-dependent input of the space (origami.toolchain), part of the key
    return _select_uncached(problem, hw)


def _select_uncached(problem: GemmProblem, hw: HardwareProfile) -> Estimate:
    sp = _space(problem, hw)
    i, lat, terms = _core.select_row(sp.base, sp.effs, sp.fams, sp.fam_rows, sp.gconst, problem.m, problem.n,
                                     problem.k, problem.batch, sp.ab, sp.bb, problem.c_dtype.bytes,
                                     problem.align_bytes, sp.hv)
    if i < 0:
        raise ValueError(f"no valid kernel configuration for {problem.describe()} on {hw.name}")
    return _estimate(sp, i, lat, terms, problem)


def select_among(problem: GemmProblem, hw: "HardwareProfile | str", kinds: Sequence[Kind], *,
                 chiplet_remap: bool = True, grid_per_cu: int | None = None) -> Estimate:
    """The best candidate of the given kinds (and, with ``chiplet_remap=False``, without a chiplet
    remap; with ``grid_per_cu``, persistent rows whose grid is min(grid_per_cu x compute units,
    tiles) and Stream-K rows of grid_per_cu x compute units only): what a consumer that can express only part of the space should run, chosen by the same
    scores as :func:`rank` (ties to the earlier row, as there). E.g. Inductor's ``triton::mm``
    template is data-parallel with GROUP_M and no remap (``tritonblas.tables.render_inductor``), its
    persistent templates run min(SMs, tiles) programs (``grid_per_cu=1``, ``tritonblas.inductor``).
    Scores every row of the problem's class (~10-130 µs; :func:`select` prunes instead)."""
    _check_problem(problem)
    kinds = _check_kinds(kinds)
    if grid_per_cu is not None and (isinstance(grid_per_cu, bool) or not isinstance(grid_per_cu, int)
                                    or grid_per_cu < 1):
        raise (ValueError if isinstance(grid_per_cu, int) and not isinstance(grid_per_cu, bool) else TypeError)(
            f"grid_per_cu: expected None or an int >= 1 (programs per compute unit), got {grid_per_cu!r}")
    hw = load_profile(hw)
    _check_output(problem)
    base, lat, terms = score_problem(problem, hw)
    ok = np.isin(base[:, R_KIND], [KIND_CODE[k] for k in kinds]) & np.isfinite(lat)
    if not chiplet_remap:
        ok &= base[:, R_NCHIP] == 1
    if grid_per_cu is not None:  # the grids config_for_tiles gives the rows (persistent_grid, vectorised)
        cus = hw.compute_units
        tiles = -(-problem.m // base[:, R_BM]) * -(-problem.n // base[:, R_BN]) * problem.batch
        grid = cus * base[:, R_GMULT]
        kind = base[:, R_KIND]
        persistent = np.isin(kind, PERSISTENT_GRID_CODES)
        streamk = kind == KIND_CODE[Kind.STREAMK]
        ok &= ~persistent | (np.minimum(grid, tiles) == np.minimum(cus * grid_per_cu, tiles))
        ok &= ~streamk | (grid == cus * grid_per_cu)
    rows = np.nonzero(ok)[0]
    if rows.size == 0:
        raise ValueError(f"no valid {'/'.join(k.value for k in kinds)} configuration for "
                         f"{problem.describe()} on {hw.name}")
    i = int(rows[np.argmin(lat[rows])])
    return _estimate(_space(problem, hw), i, lat[i], terms[i].tolist(), problem)


def _check_kinds(kinds: Any) -> tuple[Kind, ...]:
    """``kinds`` as Kinds, or a TypeError/ValueError naming it: a non-empty sequence of kinds or their values."""
    if isinstance(kinds, (str, Kind)) or not isinstance(kinds, (list, tuple, set, frozenset)):
        raise TypeError(f"kinds: expected a list of kinds (e.g. ['dp']), got {type(kinds).__name__} {kinds!r}")
    allowed = ", ".join(k.value for k in Kind)
    if not kinds:
        raise ValueError(f"kinds: expected at least one of {allowed}")
    try:
        return tuple(Kind(k) for k in kinds)
    except ValueError:
        raise ValueError(f"kinds: unknown kind in {list(kinds)!r}; expected some of {allowed}") from None


def _encode(config: TileConfig, problem: GemmProblem, hw: HardwareProfile) -> np.ndarray:
    """``config`` as a one-row candidate array (origami._encoding.COLS) for the scorer."""
    cus, tiles = hw.compute_units, row_tiles(np.array([0, config.block_m, config.block_n]), problem)
    gmult = 0
    if config.kind in (Kind.PERSISTENT, Kind.STREAMK, Kind.WS):
        # the scorer's grids are whole multiples of the compute units (a persistent grid of at
        # least the tile count runs every tile in one wave, as a multiple of the units above it does)
        gmult, rest = divmod(config.grid, cus)
        if rest and config.kind is not Kind.STREAMK and config.grid >= tiles:
            gmult, rest = gmult + 1, 0
        if rest:
            raise ValueError(f"config.grid: the model scores {config.kind.value} grids that are multiples of the "
                             f"{cus} compute units of {hw.name}, got {config.grid}")
    none = -1
    row = (KIND_CODE[config.kind], config.block_m, config.block_n, config.block_k, config.num_warps,
           config.num_stages, config.group_m, config.num_chiplets, config.chunk, gmult, config.split_k,
           none if config.waves_per_eu is None else config.waves_per_eu,
           none if config.matrix_instr_nonkdim is None else config.matrix_instr_nonkdim,
           none if config.kpack is None else config.kpack, resident_programs(config, problem, hw),
           int(staged_spills(config, problem, hw)), config.block_m.bit_length() - 1, config.block_n.bit_length() - 1, config.block_k.bit_length() - 1, -1)
    return np.array([row], dtype=np.int64)


def predict(problem: GemmProblem, hw: "HardwareProfile | str", config: TileConfig) -> Estimate:
    """The model's estimate for one given config: the scorer ``rank``/``select`` use, on a
    one-row candidate array, so ``predict(p, hw, select(p, hw).config)`` equals ``select(p, hw)``
    (tests/origami/test_predict.py). ``config`` need not be in the enumerated space (any BLOCK_K,
    stage count or GROUP_M the predicates accept), but must pass every predicate of
    ``origami.space.PREDICATES``.

    Raises ValueError naming the first violated predicate (``check_smem: shared memory: ...``), a
    persistent/Stream-K grid the model cannot express, or a config the model gives no finite time
    (a Stream-K grid that divides the tiles leaves nothing to stream)."""
    _check_problem(problem)
    hw = load_profile(hw)
    if not isinstance(config, TileConfig):
        raise TypeError(f"config: expected an origami.TileConfig, got {type(config).__name__}")
    _check_output(problem, "predict")
    sp = _space(problem, hw)
    for pred in PREDICATES:
        reason = pred(config, problem, hw)
        if reason is not None:
            raise ValueError(f"config {config.short()} on {hw.name}: {pred.__name__}: {reason}")
    row = _encode(config, problem, hw)
    effs = _core.tile_efficiencies(row, sp.hv)
    lat, terms = np.empty(1), np.zeros((1, _core.T_LEN))
    _core.score_all(row, effs, problem.m, problem.n, problem.k, problem.batch, sp.ab, sp.bb,
                    problem.c_dtype.bytes, problem.align_bytes, sp.hv, lat, terms)
    if not np.isfinite(lat[0]):
        raise ValueError(f"config {config.short()} on {hw.name}: the model has no finite time for it on "
                         f"{problem.describe()} (a Stream-K grid that divides the tile count streams nothing)")
    return _estimate(sp, 0, lat[0], terms[0].tolist(), problem, config)


def select_many(problems: Sequence[GemmProblem], hw: "HardwareProfile | str") -> list[TileConfig]:
    """Selected configs, in order, for many problems (parallel over problems); ValueError naming the
    first problem with an empty output (M, N or batch 0), as :func:`select` raises for it."""
    for i, p in enumerate(problems):
        _check_problem(p)
        _check_output(p, label=f"problems[{i}]: ")
    hw = load_profile(hw)
    idx, _, groups = select_many_arrays(problems, hw)
    out: list[TileConfig | None] = [None] * len(problems)
    for key, (_, members) in groups.items():
        config = _space(problems[members[0]], hw).config
        for j, i in zip(members, idx[members].tolist()):
            out[j] = config(i, problems[j])
    return out  # type: ignore[return-value]


_CLASS = attrgetter("a_dtype", "b_dtype", "c_dtype", "a_layout", "b_layout", "align_bytes")
_DIMS = attrgetter("m", "n", "k", "batch")
_ALIGN = attrgetter("align_bytes")


def _classes(problems: Sequence[GemmProblem]) -> dict[tuple, list[int]]:
    """Problem indices by class (runs of one class cost one comparison a problem): dtypes, layouts
    and whether the operands are under STAGED_ALIGN (4) and under VECTOR_ALIGN (16) bytes aligned (the alignment
    classes of :func:`origami.space.narrow_loads`, which applies the vendor, and of ``_core._load_class``)."""
    classes: dict[tuple, list[int]] = {}
    last, members = None, []
    for j, key in enumerate(map(_CLASS, problems)):
        if key != last:
            last, members = key, classes.setdefault((*key[:5], key[5] < STAGED_ALIGN, key[5] < VECTOR_ALIGN), [])
        members.append(j)
    return classes


def _mn_split(classes: dict[tuple, list[int]], problems: Sequence[GemmProblem], hw: HardwareProfile):
    """(class, members) pairs; where the profile prices the register-read regime (:func:`_mn_priced`)
    a tf32/fp8 class is split by it, since it depends on M, N and K too (:func:`_space` keys on it)."""
    priced = hw.model["mn_major_tile_cost"] > 0
    for key, members in classes.items():
        if not priced or key[0] not in KMAJOR_ONLY_DTYPES:
            yield key, members
            continue
        split: dict[bool, list[int]] = {}
        for j in members:
            split.setdefault(_mn_priced(hw, problems[j]), []).append(j)
        for regs, part in split.items():
            yield (*key, regs), part


def select_many_arrays(problems: Sequence[GemmProblem], hw: HardwareProfile):
    """Array-level select_many: (row index per problem, latency per problem, {class: (base, members)}).
    A class is (a_dtype, b_dtype, c_dtype, a_layout, b_layout, under 4-byte, under 16-byte alignment),
    with, where the profile prices it, whether the wide MMA reads an operand through registers (:func:`_mn_split`)."""
    n = len(problems)
    idx = np.full(n, -1, dtype=np.int64)
    lat = np.full(n, np.inf)
    groups = {}
    for key, members in _mn_split(_classes(problems), problems, hw):
        p0 = problems[members[0]]
        sp = _space(p0, hw)
        chosen = [problems[j] for j in members]
        dims = np.fromiter(chain.from_iterable(map(_DIMS, chosen)), np.int64, 4 * len(chosen)).reshape(-1, 4)
        align = np.fromiter(map(_ALIGN, chosen), np.int64, len(chosen))
        sizes = np.array([sp.ab, sp.bb, p0.c_dtype.bytes], dtype=np.int64)
        oi = np.empty(len(members), dtype=np.int64)
        ol = np.empty(len(members))
        _core.best_rows_many(sp.base, sp.effs, sp.fams, sp.fam_rows, sp.gconst, dims, sizes, align, sp.hv, oi, ol)
        idx[members] = oi
        lat[members] = ol
        groups[key] = (sp.base, members)
    return idx, lat, groups


def explain(problem: GemmProblem, hw: "HardwareProfile | str", k: int = 3) -> str:
    """A readable breakdown of the best candidates: what bounds each, TFLOP/s, % of roofline."""
    _check_problem(problem)
    hw = load_profile(hw)
    ests = rank(problem, hw, k)
    peak = hw.matrix_rate(problem.a_dtype)
    floor_ns = max(problem.flops / peak * 1e9, problem.min_bytes / hw.memory["hbm_bytes_per_s"] * 1e9)
    lines = [f"{problem.describe()} on {hw.name} ({hw.arch}, {hw.compute_units} CUs): "
             f"roofline floor {floor_ns / 1e3:.1f} us"]
    for r, e in enumerate(ests, 1):
        tf = e.tflops(problem)
        lines.append(f"  #{r} {e.config.short():48s} {e.latency_ns / 1e3:9.1f} us {tf:8.1f} TFLOP/s "
                     f"{100 * floor_ns / e.latency_ns:5.1f}% of roofline  bound: {e.bound}")
        if r == 1:
            parts = ", ".join(f"{n} {v / 1e3:.1f}" for n, v in e.terms.items() if v > 0)
            lines.append(f"     terms (us): {parts}")
    return "\n".join(lines)


def warmup() -> None:
    """Compile (or load from the on-disk cache) the numba kernels now rather than on first use."""
    p = GemmProblem(256, 256, 256)
    _rank_cached.__wrapped__(p, load_profile("h200"), 1, False)
    _select_uncached(p, load_profile("h200"))
    select_many_arrays([p], load_profile("h200"))


def clear_cache() -> None:
    _rank_cached.cache_clear()
    _select_cached.cache_clear()
    _space_of.cache_clear()  # with the configs memoised in each space


def candidates(problem: GemmProblem, hw: "HardwareProfile | str") -> list[TileConfig]:
    """The whole valid search space for ``problem`` on ``hw``: every row the scorer gives a finite
    time (the enumerated axes of :mod:`origami.enumerate` under the predicates of
    :mod:`origami.space`), as TileConfigs, in row order."""
    _check_problem(problem)
    _check_output(problem)
    hw = load_profile(hw)
    base, lat, _ = score_problem(problem, hw)
    return [row_to_config(base[i], problem, hw) for i in np.nonzero(np.isfinite(lat))[0]]

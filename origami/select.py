"""Public model API: rank, select, explain, select_many (with a model-level LRU cache).

``rank``/``select`` score the whole candidate array of the problem's dtype/layout class in one
numba call; ``select_many`` scores many problems in parallel (prange) for tile tables.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from types import MappingProxyType
from typing import Mapping, Sequence

import numpy as np

from origami import _core
from origami.config import TileConfig
from origami.enumerate import base_array, config_for_tiles, row_tiles, row_to_config
from origami.hardware import HardwareProfile, load_profile
from origami.problem import GemmProblem

__all__ = ["Estimate", "rank", "select", "explain", "select_many", "score_problem", "warmup", "clear_cache"]

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
def _hw_vector(hw: HardwareProfile, rate_key: str) -> np.ndarray:
    c, mem, mp = hw.compute, hw.memory, hw.model
    v = np.zeros(_core.HW_LEN)
    v[_core.HW_CUS] = c["compute_units"]
    v[_core.HW_CHIPLETS] = c["chiplets"]
    v[_core.HW_RR] = 1.0 if c["dispatch"] == "round_robin" else 0.0
    v[_core.HW_CU_RATE] = hw.sustained_peak_flops(rate_key) / c["compute_units"] / 1e9
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
    v[_core.HW_KITER] = mp["k_iter_overhead_ns"]
    v[_core.HW_TILE] = mp["tile_overhead_ns"]
    v[_core.HW_UNALIGNED] = mp["unaligned_penalty"]
    v[_core.HW_FIXUP] = mp["fixup_ns"]
    v[_core.HW_LAT] = mp["mem_latency_ns"]
    v[_core.HW_OVERLAP] = mp["overlap_loss"]
    v.setflags(write=False)
    return v


@lru_cache(maxsize=256)
def _inputs_cached(hw: HardwareProfile, a_dtype, b_dtype, a_layout, b_layout):
    base = base_array(hw, a_dtype, b_dtype, a_layout, b_layout)
    hv = _hw_vector(hw, a_dtype.rate_key)
    effs = _core.tile_efficiencies(base, hv)
    effs.setflags(write=False)
    return base, effs, hv


def _inputs(problem: GemmProblem, hw: HardwareProfile):
    key = problem.a_dtype.rate_key
    if hw.matrix_peak_flops.get(key, 0.0) <= 0:
        raise ValueError(f"a_dtype: {problem.a_dtype.value} has no matrix rate on {hw.name} "
                         f"(matrix.peak_flops.{key} is 0 in {hw.path}); no kernel configuration exists")
    return _inputs_cached(hw, problem.a_dtype, problem.b_dtype, problem.a_layout, problem.b_layout)


def score_problem(problem: GemmProblem, hw: HardwareProfile):
    """(rows, latency_ns[rows], terms[rows, T]) for every row of the problem's candidate array."""
    hw = load_profile(hw)
    base, effs, hv = _inputs(problem, hw)
    lat = np.empty(base.shape[0])
    terms = np.zeros((base.shape[0], _core.T_LEN))
    _core.score_all(base, effs, problem.m, problem.n, problem.k, problem.batch, problem.a_dtype.bytes,
                    problem.b_dtype.bytes, problem.c_dtype.bytes, problem.align_bytes, hv, lat, terms)
    return base, lat, terms


def _bound(terms: np.ndarray, latency: float, floor: tuple[float, float] = (0.0, 0.0)) -> str:
    """What bounds the estimate. When the roofline floor (compute, memory) set the latency, that
    floor's resource does; otherwise the largest main-loop term (``waves`` when the partial last
    wave costs over a quarter of the compute, ``launch``/``epilogue`` when overheads dominate)."""
    names = _core.TERM_NAMES
    if latency <= max(floor) * (1 + 1e-9):
        return "compute" if floor[0] >= floor[1] else "hbm"
    main = {n: terms[names.index(n)] for n in MAIN_TERMS}
    overhead = terms[names.index("epilogue")] + terms[names.index("fixup")]
    if terms[names.index("launch")] > 0.5 * latency:
        return "launch"
    if overhead > sum(main.values()) and overhead > 0.3 * latency:
        return "epilogue"
    top = max(main, key=main.get)
    if top == "compute" and terms[names.index("waves")] > 0.25 * main["compute"]:
        return "waves"
    return top


def _floor_ns(problem: GemmProblem, hv: np.ndarray) -> tuple[float, float]:
    """The scorer's roofline floor terms (compute at datasheet peak, compulsory bytes at HBM)."""
    return (problem.flops / hv[_core.HW_PEAK], problem.min_bytes / hv[_core.HW_HBM_BW])


@lru_cache(maxsize=65536)
def _config_of(hw: HardwareProfile, a_dtype, b_dtype, a_layout, b_layout, i: int, tiles: int) -> TileConfig:
    """Memoised config of row i (building a validated TileConfig costs microseconds); ``tiles`` is
    0 for rows whose config does not depend on the problem (all but persistent)."""
    base = base_array(hw, a_dtype, b_dtype, a_layout, b_layout)
    return config_for_tiles(base[i], tiles, hw)


def _estimate(base, i, lat, terms, problem, hw) -> Estimate:
    t = MappingProxyType(dict(zip(_core.TERM_NAMES, terms.tolist())))
    floor = _floor_ns(problem, _hw_vector(hw, problem.a_dtype.rate_key))
    tiles = row_tiles(base[i], problem) if base[i, _core.R_KIND] == _core.K_PERSISTENT else 0
    cfg = _config_of(hw, problem.a_dtype, problem.b_dtype, problem.a_layout, problem.b_layout, int(i), tiles)
    return Estimate(cfg, float(lat), t, _bound(terms, float(lat), floor))


@lru_cache(maxsize=4096)
def _rank_cached(problem: GemmProblem, hw: HardwareProfile, k: int) -> tuple[Estimate, ...]:
    base, lat, terms = score_problem(problem, hw)
    finite = np.nonzero(np.isfinite(lat))[0]
    if finite.size == 0:
        raise ValueError(f"no valid kernel configuration for {problem.describe()} on {hw.name}")
    order = finite[np.argsort(lat[finite], kind="stable")][:k]
    return tuple(_estimate(base, i, lat[i], terms[i], problem, hw) for i in order)


def rank(problem: GemmProblem, hw: "HardwareProfile | str", k: int = 5) -> list[Estimate]:
    """The ``k`` best candidates, best first (ties broken by the fixed enumeration order)."""
    if problem.m == 0 or problem.n == 0 or problem.batch == 0:
        raise ValueError(f"{problem.describe()}: empty output, nothing to select")
    return list(_rank_cached(problem, load_profile(hw), int(k)))


def select(problem: GemmProblem, hw: "HardwareProfile | str") -> Estimate:
    """The best candidate (== rank(problem, hw, 1)[0]), via the branch-and-bound scorer."""
    if problem.m == 0 or problem.n == 0 or problem.batch == 0:
        raise ValueError(f"{problem.describe()}: empty output, nothing to select")
    return _select_cached(problem, load_profile(hw))


@lru_cache(maxsize=4096)
def _select_cached(problem: GemmProblem, hw: HardwareProfile) -> Estimate:
    return _select_uncached(problem, hw)


def _select_uncached(problem: GemmProblem, hw: HardwareProfile) -> Estimate:
    base, effs, hv = _inputs(problem, hw)
    i, lat = _core.best_row(base, effs, problem.m, problem.n, problem.k, problem.batch, problem.a_dtype.bytes,
                            problem.b_dtype.bytes, problem.c_dtype.bytes, problem.align_bytes, hv)
    if i < 0:
        raise ValueError(f"no valid kernel configuration for {problem.describe()} on {hw.name}")
    terms = np.zeros(_core.T_LEN)
    _core.score_one(base, i, effs, problem.m, problem.n, problem.k, problem.batch, problem.a_dtype.bytes,
                    problem.b_dtype.bytes, problem.c_dtype.bytes, problem.align_bytes, hv, terms)
    return _estimate(base, i, lat, terms, problem, hw)


def select_many(problems: Sequence[GemmProblem], hw: "HardwareProfile | str") -> list[TileConfig]:
    """Selected configs, in order, for many problems (parallel over problems)."""
    hw = load_profile(hw)
    idx, _, groups = select_many_arrays(problems, hw)
    out: list[TileConfig | None] = [None] * len(problems)
    for base, members in groups.values():
        for j in members:
            out[j] = row_to_config(base[idx[j]], problems[j], hw)
    return out  # type: ignore[return-value]


def select_many_arrays(problems: Sequence[GemmProblem], hw: HardwareProfile):
    """Array-level select_many: (row index per problem, latency per problem, {class: (base, members)})."""
    n = len(problems)
    idx = np.full(n, -1, dtype=np.int64)
    lat = np.full(n, np.inf)
    classes: dict[tuple, list[int]] = {}
    for j, p in enumerate(problems):
        classes.setdefault((p.a_dtype, p.b_dtype, p.c_dtype, p.a_layout, p.b_layout), []).append(j)
    groups = {}
    for key, members in classes.items():
        p0 = problems[members[0]]
        base, effs, hv = _inputs(p0, hw)
        dims = np.array([(problems[j].m, problems[j].n, problems[j].k, problems[j].batch) for j in members],
                        dtype=np.int64).reshape(-1, 4)
        align = np.array([problems[j].align_bytes for j in members], dtype=np.int64)
        sizes = np.array([p0.a_dtype.bytes, p0.b_dtype.bytes, p0.c_dtype.bytes], dtype=np.int64)
        oi = np.empty(len(members), dtype=np.int64)
        ol = np.empty(len(members))
        _core.best_rows_many(base, effs, dims, sizes, align, hv, oi, ol)
        idx[members] = oi
        lat[members] = ol
        groups[key] = (base, members)
    return idx, lat, groups


def explain(problem: GemmProblem, hw: "HardwareProfile | str", k: int = 3) -> str:
    """A readable breakdown of the best candidates: what bounds each, TFLOP/s, % of roofline."""
    hw = load_profile(hw)
    ests = rank(problem, hw, k)
    peak = hw.matrix_peak_flops[problem.a_dtype.rate_key]
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
    _rank_cached.__wrapped__(p, load_profile("h200"), 1)
    _select_uncached(p, load_profile("h200"))
    select_many_arrays([p], load_profile("h200"))


def clear_cache() -> None:
    _rank_cached.cache_clear()
    _select_cached.cache_clear()
    _config_of.cache_clear()

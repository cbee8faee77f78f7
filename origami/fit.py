"""Fit the model's efficiency parameters (the profile's ``model:`` section) to a measured sweep.

A sweep (benchmarks/sweep.py, DESIGN.md §8) gives, per shape, measured times of many configs of
our own space. ``selection_efficiency`` scores a profile against it: per shape, the model picks the
config with the lowest prediction among the measured ones; efficiency = best measured time / time
of the pick. ``fit`` searches the parameters (coordinate descent over multiplicative steps, within
the schema's ranges) to maximise the geometric-mean efficiency on a train split, with the log
prediction error as a tie-breaker; it is still a roofline with a handful of physical parameters,
not a regressor. Pure CPU; used by `tritonblas calibrate --fit` and the efficiency test.

:func:`accepts` is the one fit-acceptance rule (``FitReport.accepted`` and ``tritonblas calibrate
--fit`` both use it): it compares :func:`heldout_score` (``origami.select()``'s real pick on
held-out sweeps) before and after a fit.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from origami.config import TileConfig
from origami.hardware import MODEL_PARAMS, HardwareProfile, load_profile
from origami.problem import GemmProblem
from origami.enumerate import row_to_config
from origami.select import score_problem, select

__all__ = ["Measured", "read_sweep", "efficiency_summary", "selection_efficiency", "pick_efficiency", "PickScore", "heldout_score", "accepts",
           "fit", "FitReport"]

_PROBLEM = ("m", "n", "k", "batch", "a_dtype", "b_dtype", "c_dtype", "a_layout", "b_layout")
_INT_FIELDS = {f.name for f in fields(TileConfig)} - {"kind"}


@dataclass(frozen=True)
class Measured:
    """One shape of a sweep: the problem and its measured (config, median ms) pairs."""

    problem: GemmProblem
    configs: tuple[TileConfig, ...]
    ms: tuple[float, ...]


def _config(row: dict) -> TileConfig:
    d = {"kind": row["kind"]}
    for name in _INT_FIELDS:
        v = row.get(name, "")
        d[name] = None if v in ("", None) else int(v)
    return TileConfig(**d)


def read_sweep(paths: "str | Path | Iterable[str | Path]") -> list[Measured]:
    """Shapes of one or more sweep CSVs (rows without a time are skipped; '#' lines are provenance).
    A time that is not a finite positive number (nan, inf, 0, negative) is a ValueError naming the
    file and the data row: a fit must not read it as a measurement."""
    if isinstance(paths, (str, Path)):
        paths = [paths]
    by: dict[GemmProblem, dict[TileConfig, float]] = {}
    for path in paths:
        with open(path) as f:
            for i, row in enumerate(csv.DictReader(line for line in f if not line.startswith("#")), start=1):
                if not row.get("median_ms"):
                    continue
                ms = float(row["median_ms"])
                if not (math.isfinite(ms) and ms > 0):
                    raise ValueError(f"{path}: data row {i}: median_ms {row['median_ms']!r} is not a positive "
                                     "finite time")
                kw = {c: row[c] for c in _PROBLEM}
                for c in ("m", "n", "k", "batch"):
                    kw[c] = int(kw[c])
                if row.get("align_bytes"):
                    kw["align_bytes"] = int(row["align_bytes"])
                else:  # sweeps before the column: the sweep timed contiguous tensors
                    kw["align_bytes"] = GemmProblem.contiguous_align_bytes(**{c: kw[c] for c in _PROBLEM})
                p = GemmProblem(**kw)
                by.setdefault(p, {})[_config(row)] = ms
    return [Measured(p, tuple(d), tuple(d.values())) for p, d in by.items() if len(d) >= 2]


def _predictions(meas: Measured, hw: HardwareProfile) -> np.ndarray:

    base, lat, _ = score_problem(meas.problem, hw)
    pred = {}
    for i in np.nonzero(np.isfinite(lat))[0]:
        pred.setdefault(row_to_config(base[i], meas.problem, hw), float(lat[i]))
    return np.array([pred.get(c, np.inf) for c in meas.configs])


@dataclass(frozen=True)
class Score:
    geomean: float
    p10: float
    per_shape: tuple[float, ...]
    log_error: float  # median |log(pred / measured)| over measured configs the model scores


def efficiency_summary(effs: Sequence[float]) -> tuple[float, float]:
    """(geometric mean, 10th percentile) of per-shape selection efficiencies (best measured / pick's
    measured time); (nan, nan) for none. The one definition every selection report uses."""
    e = np.asarray(effs, dtype=np.float64)
    if not e.size:
        return float("nan"), float("nan")
    return float(np.exp(np.mean(np.log(e)))), float(np.percentile(e, 10))


def selection_efficiency(data: Sequence[Measured], hw: "HardwareProfile | str") -> Score:
    hw = load_profile(hw)
    effs, errs = [], []
    for meas in data:
        pred = _predictions(meas, hw)
        ms = np.array(meas.ms)
        ok = np.isfinite(pred)
        if not ok.any():
            continue
        pick = int(np.argmin(np.where(ok, pred, np.inf)))
        effs.append(ms.min() / ms[pick])
        errs.extend(np.abs(np.log(pred[ok] / 1e6 / ms[ok])))
    geo, p10 = efficiency_summary(effs)
    return Score(geo, p10, tuple(effs), float(np.median(errs)) if errs else float("nan"))


@dataclass(frozen=True)
class PickScore:
    """``origami.select()``'s real pick scored against a sweep. ``per_shape`` holds best measured /
    pick's measured time for the shapes whose pick was timed (``problems`` in the same order);
    ``missing`` lists (problem, pick) for the shapes whose pick has no time in the sweep: those
    cannot be scored and must be re-swept, never skipped silently."""

    geomean: float
    p10: float
    per_shape: tuple[float, ...]
    problems: tuple[GemmProblem, ...]
    missing: tuple[tuple[GemmProblem, TileConfig], ...]

    def worst(self, n: int = 1) -> list[tuple[float, GemmProblem]]:
        return sorted(zip(self.per_shape, self.problems), key=lambda t: t[0])[:n]


def pick_efficiency(data: Sequence[Measured], hw: "HardwareProfile | str") -> PickScore:
    """Score the config ``origami.select(problem, hw)`` returns for each shape of ``data``:
    efficiency = best measured time / measured time of that config. The oracle is the best config
    the sweep timed (unbiased only for exhaustive sweeps). Unlike :func:`selection_efficiency` the
    pick is not restricted to the measured configs, so a shape whose pick was never timed goes to
    ``missing`` instead of being scored on a config the library would not run."""

    hw = load_profile(hw)
    effs, probs, missing = [], [], []
    for meas in data:
        pick = select(meas.problem, hw).config
        times = dict(zip(meas.configs, meas.ms))
        if pick not in times:
            missing.append((meas.problem, pick))
            continue
        effs.append(min(meas.ms) / times[pick])
        probs.append(meas.problem)
    geo, p10 = efficiency_summary(effs)
    return PickScore(geo, p10, tuple(effs), tuple(probs), tuple(missing))


def heldout_score(data: Sequence[Measured], hw: "HardwareProfile | str") -> "tuple[float, float, int] | None":
    """(geomean, p10, picks missing from the data) of :func:`pick_efficiency` on held-out sweeps;
    None without data (a fit it cannot validate)."""
    if not data:
        return None
    s = pick_efficiency(data, hw)
    return (s.geomean, s.p10, len(s.missing))


def accepts(before: "tuple[float, float, int] | None", after: "tuple[float, float, int] | None") -> bool:
    """The fit-acceptance rule, on :func:`heldout_score` of the base (``before``) and the fitted
    (``after``) parameters: held-out data exists, every pick of the fitted model was timed there,
    and neither the held-out geomean nor its p10 drops (1e-9 slack for float noise)."""
    if before is None or after is None:
        return False
    return after[2] == 0 and after[0] >= before[0] - 1e-9 and after[1] >= before[1] - 1e-9


@dataclass(frozen=True)
class FitReport:
    """``train_*``: :func:`selection_efficiency` on the fitted shapes; ``heldout_*``:
    :func:`heldout_score` on the test shapes (None without any), before and after."""

    params: dict
    train_before: Score
    train_after: Score
    heldout_before: "tuple[float, float, int] | None"
    heldout_after: "tuple[float, float, int] | None"

    @property
    def accepted(self) -> bool:
        """:func:`accepts` on the held-out scores."""
        return accepts(self.heldout_before, self.heldout_after)


def _objective(s: Score) -> float:
    return math.log(max(s.geomean, 1e-9)) - 0.05 * s.log_error


# Where a parameter at 0 is probed from (x steps): (lo + hi) / 10, except a relative efficiency whose 0
# means "no such kernel" (hardware.OPTIONAL_MODEL_PARAMS), probed around 1, the data-parallel kernel's
# own: at 0.14-0.28 the kernel never wins a shape, and the fit could never move it off 0; and
# splitk_range_reads, whose 0 is the old count and 1 the exact one (from 0.1 three rounds reach 0.27).
_ZERO_SEED = {"ws_efficiency": 1.0, "splitk_range_reads": 1.0}


def fit(hw: "HardwareProfile | str", train: Sequence[Measured], test: Sequence[Measured], *,
        params: Sequence[str] | None = None, rounds: int = 3, steps=(0.7, 0.85, 1.15, 1.4)) -> FitReport:
    hw = load_profile(hw)
    names = list(params or MODEL_PARAMS)
    best = dict(hw.model)
    cur = hw
    cur_obj = _objective(selection_efficiency(train, cur))
    for _ in range(rounds):
        improved = False
        for name in names:
            lo, hi, _ = MODEL_PARAMS[name]
            for f in steps:
                v = best[name] * f if best[name] > 0 else _ZERO_SEED.get(name, (lo + hi) / 10) * f
                v = min(hi, max(lo, v))
                if v == best[name]:
                    continue
                cand = hw.replace_model(**{**best, name: v})
                obj = _objective(selection_efficiency(train, cand))
                if obj > cur_obj + 1e-6:
                    best, cur, cur_obj, improved = {**best, name: v}, cand, obj, True
        if not improved:
            break
    return FitReport(best, selection_efficiency(train, hw), selection_efficiency(train, cur),
                     heldout_score(test, hw), heldout_score(test, cur))

"""The committed held-out split (DESIGN.md §8, ``benchmarks/shapes/heldout/``, drawn once by
benchmarks/heldout_gen.py) and the sweep readers that honour it: :func:`read_sweep_file` reads
training data and refuses a row whose shape (m, n, k, batch; any dtype or layout) is held out;
:func:`read_heldout_sweeps` reads the validation data and refuses any row that is not. Used by
``tritonblas calibrate --fit``, benchmarks/selection.py and the held-out tests. Every failure is a
one-line :class:`CalibrationError` naming the file (and the row). Pure CPU."""

from __future__ import annotations

import csv
import os
from pathlib import Path
from typing import Mapping, Sequence

from origami.fit import read_sweep
from origami.problem import GemmProblem
from tritonblas._measure import CalibrationError

__all__ = [
    "HELDOUT_SHAPES", "HELDOUT_SWEEP_COMMAND", "MIN_FIT_SHAPES", "SWEEP_COLUMNS", "heldout_split", "heldout_dims",
    "heldout_sweep_dir", "read_sweep_file", "read_sweep_files", "read_heldout_sweeps", "sweep_names",
]

ROOT = Path(__file__).resolve().parents[1]
HELDOUT_SHAPES = ROOT / "benchmarks" / "shapes" / "heldout"
HELDOUT_SWEEP_COMMAND = "torchrun --nproc-per-node gpu benchmarks/sweep.py --heldout"
MIN_FIT_SHAPES = 4
SWEEP_COLUMNS = ("m", "n", "k", "batch", "a_dtype", "b_dtype", "c_dtype", "a_layout", "b_layout", "kind",
                 "block_m", "block_n", "block_k", "num_warps", "num_stages", "median_ms")


def read_sweep_files(paths) -> list:
    """The shapes of one or more sweep CSVs (each checked by :func:`read_sweep_file`); a shape
    recorded in several files keeps every measured config (``origami.fit.read_sweep`` merges them)."""
    paths = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    for path in paths:
        read_sweep_file(path)
    return read_sweep(paths) if len(paths) > 1 else read_sweep_file(paths[0])


def sweep_names(paths) -> str:
    """How a report names one or more sweep files: the file name, or a count and the names."""
    paths = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    names = [Path(x).name for x in paths]
    return names[0] if len(names) == 1 else f"{len(names)} sweeps ({', '.join(names)})"


def heldout_split(directory: "str | os.PathLike[str]" = HELDOUT_SHAPES) -> dict[str, list[GemmProblem]]:
    """The committed held-out split: {file stem: problems} of every ``*.yaml`` in ``directory``.
    A missing or empty directory is a CalibrationError: without the split, a fit cannot know which
    shapes it must not read."""
    from origami.shapes import ShapesError, load_shapes

    d = Path(directory)
    files = sorted(d.glob("*.yaml")) if d.is_dir() else []
    if not files:
        raise CalibrationError(f"held-out split: no shapes under {d} (benchmarks/heldout_gen.py draws it); "
                               "a fit must know which shapes it may not read")
    try:
        return {f.stem: load_shapes(f) for f in files}
    except ShapesError as e:
        raise CalibrationError(f"held-out split: {e}") from None


def heldout_dims(directory: "str | os.PathLike[str]" = HELDOUT_SHAPES) -> dict[tuple[int, int, int, int], str]:
    """(m, n, k, batch) of every held-out shape -> the split file naming it. Dims only: a held-out
    shape stays held out in every dtype and layout."""
    d = Path(directory)
    label = d.relative_to(ROOT) if d.is_absolute() and d.is_relative_to(ROOT) else d
    return {(p.m, p.n, p.k, p.batch): f"{label}/{stem}.yaml" for stem, ps in heldout_split(d).items() for p in ps}


def _refuse_heldout_rows(p: Path, held: Mapping[tuple, str]) -> None:
    with open(p, newline="") as f:
        lines = (line for line in f if not line.startswith("#"))
        for i, row in enumerate(csv.DictReader(lines), start=2):
            try:
                dims = (int(row["m"]), int(row["n"]), int(row["k"]), int(row.get("batch") or 1))
            except (KeyError, TypeError, ValueError):
                continue  # read_sweep reports malformed rows
            if dims in held:
                raise CalibrationError(
                    f"--fit {p}: data row {i}: {dims[0]}x{dims[1]}x{dims[2]} is a held-out shape ({held[dims]}); "
                    "a fit reads training data only")


def read_sweep_file(path: "str | os.PathLike[str]", *, heldout: "Mapping[tuple, str] | None" = None) -> list:
    """``origami.fit.read_sweep`` with every failure as one CalibrationError naming the file. A row
    of a held-out shape (``heldout``: :func:`heldout_dims` of the committed split by default) is
    refused: this is the reader of training data."""
    p = Path(path)
    if p.is_dir():
        raise CalibrationError(f"--fit {p}: is a directory, not a sweep CSV")
    if not p.is_file():
        raise CalibrationError(f"--fit {p}: no such file")
    try:
        with open(p, newline="") as f:
            header = next(csv.reader(line for line in f if not line.startswith("#")), None)
        missing = [c for c in SWEEP_COLUMNS if c not in (header or ())]
        if missing:
            raise KeyError(", ".join(missing))
        _refuse_heldout_rows(p, heldout_dims() if heldout is None else heldout)
        data = read_sweep(p)
    except KeyError as e:
        raise CalibrationError(f"--fit {p}: not a sweep CSV (missing column(s) {e.args[0]}; "
                               "see DESIGN.md section 8 for the columns)") from None
    except (OSError, UnicodeDecodeError, csv.Error, TypeError, ValueError) as e:
        if isinstance(e, CalibrationError):
            raise
        msg = " ".join(str(e).split())
        raise CalibrationError(f"--fit {p}: not a valid sweep CSV: {type(e).__name__}: {msg}") from None
    if len(data) < MIN_FIT_SHAPES:
        raise CalibrationError(f"--fit {p}: {len(data)} shape(s) with at least two timed configs; "
                               f"a fit needs at least {MIN_FIT_SHAPES}")
    return data


def heldout_sweep_dir(profile_name: str) -> Path:
    """Where the exhaustive held-out sweeps of a profile live (benchmarks/sweep.py --heldout)."""
    return ROOT / "benchmarks" / "data" / f"{profile_name}_heldout"


def read_heldout_sweeps(paths: "Sequence[str | os.PathLike[str]]", *,
                        heldout: "Mapping[tuple, str] | None" = None) -> list:
    """The held-out validation data: every row must be a shape of the split (a training shape in a
    held-out file would make the guard score fitted data)."""
    held = heldout_dims() if heldout is None else heldout
    for path in paths:
        try:
            with open(path, newline="") as f:
                header = next(csv.reader(line for line in f if not line.startswith("#")), None)
            missing = [c for c in SWEEP_COLUMNS if c not in (header or ())]
            if missing:
                raise CalibrationError(f"held-out sweep {path}: not a sweep CSV (missing column(s) "
                                       f"{', '.join(missing)})")
            with open(path, newline="") as f:
                for i, row in enumerate(csv.DictReader(line for line in f if not line.startswith("#")), start=2):
                    try:
                        dims = (int(row["m"]), int(row["n"]), int(row["k"]), int(row.get("batch") or 1))
                    except (KeyError, TypeError, ValueError):
                        raise CalibrationError(f"held-out sweep {path}: data row {i}: m, n, k, batch must be "
                                               f"integers, got {row.get('m')!r}, {row.get('n')!r}, "
                                               f"{row.get('k')!r}, {row.get('batch')!r}") from None
                    if dims not in held:
                        raise CalibrationError(f"held-out sweep {path}: data row {i}: {dims[0]}x{dims[1]}x{dims[2]} "
                                               "is not in the held-out split (benchmarks/shapes/heldout)")
            read_sweep(path)  # every row parses (the merged read below cannot fail on one file)
        except (OSError, UnicodeDecodeError, csv.Error, KeyError, TypeError, ValueError) as e:
            if isinstance(e, CalibrationError):
                raise
            msg = " ".join(str(e).split())
            raise CalibrationError(f"held-out sweep {path}: not a valid sweep CSV: {type(e).__name__}: {msg}") from None
    return read_sweep(list(paths)) if paths else []


"""The committed held-out split (benchmarks/shapes/heldout/) is held out: no fitted file holds one of
its shapes, and it is the split DESIGN.md §8 asks for (sizes, dtypes, sets, alignment classes). CPU."""

from __future__ import annotations

import csv
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.heldout_gen import SETS, known_dims  # noqa: E402
from origami import GemmProblem  # noqa: E402
from tritonblas.heldout import heldout_dims, heldout_split  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "benchmarks" / "data"


def _fittable_csvs() -> list[Path]:
    """Every CSV under benchmarks/data that calibrate --fit may read: all sweeps (files with the
    sweep columns m, n, k) but the held-out ones. The AMD compile census (amd_aot/) has no timings
    and no m/n/k columns: calibrate cannot read it."""
    out = []
    for p in sorted(DATA.rglob("*.csv")):
        if any(part.endswith("_heldout") for part in p.parts):
            continue
        with open(p) as f:
            header = next((line for line in f if not line.startswith("#")), "")
        if {"m", "n", "k"} <= set(header.strip().split(",")):
            out.append(p)
        else:
            assert "amd_aot" in p.parts, f"{p}: a CSV under benchmarks/data that is neither a sweep nor the census"
    return out


def _profile_header_sweeps(profile: Path = ROOT / "hwprofiles" / "h200.yaml") -> list[Path]:
    """The sweep files named in the profile's header comments (globs and {a,b} lists expanded)."""
    text = " ".join(line[1:].strip() for line in profile.read_text().splitlines() if line.startswith("#"))
    text = re.sub(r"\{([^}]*)\}", lambda m: "{" + re.sub(r"\s+", "", m.group(1)) + "}", text)
    out = []
    for ref in re.findall(r"benchmarks/data/[\w./*{},-]+?\.csv", text):
        m = re.search(r"\{([^}]*)\}", ref)
        names = [ref[:m.start()] + x + ref[m.end():] for x in m.group(1).split(",")] if m else [ref]
        for n in names:
            out += sorted(ROOT.glob(n)) if "*" in n else [ROOT / n]
    return out


def _rows(path: Path):
    with path.open() as f:
        for i, r in enumerate(csv.DictReader(line for line in f if not line.startswith("#")), start=2):
            yield i, (int(r["m"]), int(r["n"]), int(r["k"]), int(r.get("batch") or 1))


def test_no_held_out_shape_in_any_fitted_file():
    held = heldout_dims()
    files = sorted(set(_fittable_csvs()) | set(_profile_header_sweeps()))
    assert len(files) >= 19, files
    leaks = [f"{p.relative_to(ROOT)} data row {i}: {d[0]}x{d[1]}x{d[2]} ({held[d]})"
             for p in files if p.exists() for i, d in _rows(p) if d in held]
    assert not leaks, f"held-out shapes in fitted data: {leaks[:10]}"


def test_profile_header_names_existing_sweeps():
    named = _profile_header_sweeps()
    assert {"calib.csv", "grid_fp8_e4m3.csv", "square.csv", "issue4.csv"} <= {p.name for p in named}, named
    missing = sorted({str(p.relative_to(ROOT)) for p in named if not p.exists()})
    assert not missing, f"hwprofiles/h200.yaml names sweeps that are gone: {missing}"


def test_split_is_new_disjoint_and_stratified():
    split = heldout_split()
    probs = [p for ps in split.values() for p in ps]
    dims = [(p.m, p.n, p.k, p.batch) for p in probs]
    assert len(set(dims)) == len(dims), "a shape is in the split twice"
    seen = set(dims) & known_dims()
    assert not seen, f"held-out shapes that a training set or recorded sweep already holds: {sorted(seen)[:5]}"
    by_dtype: dict[str, list[GemmProblem]] = {}
    for p in probs:
        by_dtype.setdefault(p.a_dtype.value, []).append(p)
    need = {"bf16": 64, "fp16": 16, "tf32": 16, "fp8_e4m3": 16}
    for dtype, n in need.items():
        ps = by_dtype.get(dtype, [])
        assert len(ps) >= n, f"{dtype}: {len(ps)} held-out shapes < {n}"
        aligned = sum(p.align_bytes == 16 for p in ps)
        assert 0 < aligned < len(ps), f"{dtype}: both alignment classes must be held out ({aligned} of {len(ps)} aligned)"
    assert set(split) >= set(SETS) and all(len(split[s]) >= 10 for s in SETS)


def test_ragged_training_set_is_its_generator_output_unaligned_and_disjoint_from_the_split():
    """benchmarks/shapes/ragged.yaml (training: unaligned skinny / long-K shapes drawn from the split's
    own distributions) is what shapes_gen.ragged() draws, every shape is under 16 bytes aligned as
    bf16 tensors, and none is a shape of the held-out split."""
    from benchmarks.shapes_gen import RAGGED_PER_SET, ragged
    from origami.shapes import load_shapes

    committed = [(p.m, p.n, p.k) for p in load_shapes(ROOT / "benchmarks" / "shapes" / "ragged.yaml")]
    assert committed == [(e["m"], e["n"], e["k"]) for e in ragged()]
    assert len(committed) == sum(RAGGED_PER_SET.values()) == len(set(committed))
    assert all(GemmProblem.contiguous_align_bytes(m, n, k, "bf16", "bf16", "bf16") < 16 for m, n, k in committed)
    split = {d[:3] for d in heldout_dims()}
    assert not split & set(committed)

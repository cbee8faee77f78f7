"""Training-split guard (fitted data): ``origami.select()``'s real pick on the recorded training sweeps (CPU, CI).

Every sweep under benchmarks/data/<profile>/ and <profile>_cold/ (h200; h100, whose three own terms were fitted on
its data) is training data, scored with that profile, so these numbers flatter the model; the reported number is the held-out one
(tests/benchmarks/test_heldout_selection.py). Per file: efficiency = best measured time / measured time of the
config ``origami.select()`` returns (``origami.fit.pick_efficiency``), over the shapes whose pick was
timed; floors, the fewest scored shapes, the most picks allowed missing and the data file's sha256
come from benchmarks/data/floors.yaml (section ``training``). A pick missing from these sampled
sweeps is counted and bounded by ``max_missing`` (re-sweep them: benchmarks/missing_picks.py); a
model change that moves more picks off the data fails instead of silently scoring fewer shapes.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.selection import (DATA, MISSING_SWEEP, entry_profile, file_sha256, load_floors,  # noqa: E402
                                  pooled_sha256, score)

FLOORS = load_floors()
TRAINING_DIRS = ("h200", "h200_cold", "h100", "h100_cold")


def _recorded() -> list[str]:
    return sorted(f"{d}/{p.name}" for d in TRAINING_DIRS for p in (DATA / d).glob("*.csv") if ".shard" not in p.name)


def _check(label: str, paths: list[Path], floors: dict, sha: str, profile: str) -> None:
    _, s = score(paths, profile)
    worst = [(round(float(e), 2), p.describe()) for e, p in s.worst(3)]
    got = (f"training split (fitted data) {label}: {len(s.per_shape)} picks scored, {len(s.missing)} missing, "
           f"geomean {s.geomean:.3f}, p10 {s.p10:.3f}; worst {worst}")
    print(got)
    assert sha == floors["sha256"], (
        f"{got}\n{label} changed (sha256 {sha[:12]} != {floors['sha256'][:12]} in floors.yaml): re-score it and update "
        f"its entry in benchmarks/data/floors.yaml (python benchmarks/selection.py --training-only)")
    assert len(s.missing) <= floors.get("max_missing", 0), (
        f"{got}\n{len(s.missing)} picks not in the data (allowed {floors.get('max_missing', 0)}), e.g. "
        f"{[(p.describe(), c.short()) for p, c in s.missing[:3]]}: re-sweep them: {MISSING_SWEEP}")
    assert len(s.per_shape) >= floors["min_shapes"], f"{got}\nexpected at least {floors['min_shapes']} scored picks"
    assert s.geomean >= floors["geomean"], f"{got}\ngeomean {s.geomean:.3f} < floor {floors['geomean']}"
    assert s.p10 >= floors["p10"], f"{got}\np10 {s.p10:.3f} < floor {floors['p10']}"


@pytest.mark.parametrize("name", sorted(FLOORS["training"]))
def test_training_split_selection_efficiency(name):
    path = DATA / name
    assert path.exists(), f"{path} is missing (benchmarks/data/floors.yaml names it)"
    _check(name, [path], FLOORS["training"][name], file_sha256(path), entry_profile(name))


@pytest.mark.parametrize("name", sorted(FLOORS["pooled"]))
def test_training_split_pooled(name):
    entry = FLOORS["pooled"][name]
    paths = [DATA / f for f in entry["files"]]
    assert all(p.exists() for p in paths), f"pooled {name}: missing {[str(p) for p in paths if not p.exists()]}"
    _check(f"pooled {name}", paths, entry, pooled_sha256(paths), entry_profile(name))


def test_every_recorded_training_sweep_has_floors():
    unguarded = sorted(set(_recorded()) - set(FLOORS["training"]))
    assert not unguarded, (f"training sweeps without an entry in benchmarks/data/floors.yaml (section training): "
                           f"{unguarded}")
    assert len(_recorded()) >= 19


def test_fit_refuses_a_fit_that_hurts_held_out_shapes():
    """origami.fit's guard (``accepts``, the rule calibrate --fit uses too): a fit on half the shapes
    is accepted only if select()'s picks on the other half were all timed and neither their geomean
    nor their p10 gets worse (here the 8-shape halves overfit, which the guard must catch or the fit
    must help)."""
    from origami.fit import fit, heldout_score, read_sweep

    data = read_sweep([DATA / n for n in FLOORS["training"] if n.startswith("h200/")])
    report = fit("h200", data[0::2], data[1::2], rounds=1, params=["mma_efficiency", "small_tile_efficiency"])
    b, a = report.heldout_before, report.heldout_after
    assert b == heldout_score(data[1::2], "h200")
    assert report.accepted == (a[2] == 0 and a[0] >= b[0] - 1e-9 and a[1] >= b[1] - 1e-9)
    assert report.train_after.geomean >= report.train_before.geomean - 1e-9

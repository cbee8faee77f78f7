"""Held-out guard: ``origami.select()``'s real pick on the exhaustive sweeps of the committed
held-out split (benchmarks/shapes/heldout/ -> benchmarks/data/h200_heldout/<file>.csv), CPU, CI.

No fit reads these shapes (tritonblas.calibrate refuses them), so this is the number to report.
Every shape of the split file must be in its sweep, and every pick must have been timed: a pick
missing from the data fails with the shape, the pick and the re-sweep command, never a skip. Floors
are benchmarks/data/floors.yaml's ``heldout`` section. A file not yet recorded (no GPU in the
session that drew the split) is a strict xfail naming the command that records it, so it cannot
pass silently and turns into a failure the day the file exists without floors.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.selection import HELDOUT_SWEEP, file_sha256, heldout_path, heldout_stems, load_floors, score  # noqa: E402
from tritonblas.calibrate import heldout_split  # noqa: E402

FLOORS = load_floors()["heldout"]
SPLIT = heldout_split()


def _case(stem: str):
    path = heldout_path(stem)
    if path.exists():
        return pytest.param(stem, id=stem)
    return pytest.param(stem, id=stem, marks=pytest.mark.xfail(
        strict=True, reason=f"held-out sweep not recorded: run {HELDOUT_SWEEP.format(stems=stem)}"))


@pytest.mark.parametrize("stem", [_case(s) for s in heldout_stems()])
def test_heldout_selection_efficiency(stem):
    path = heldout_path(stem)
    name = f"{path.parent.name}/{path.name}"
    cmd = HELDOUT_SWEEP.format(stems=stem)
    assert path.exists(), f"{name}: not recorded; run {cmd}"
    data, s = score([path])
    swept = {m.problem for m in data}
    unswept = [p.describe() for p in SPLIT[stem] if p not in swept]
    assert not unswept, f"{name}: {len(unswept)} shapes of the split have no sweep, e.g. {unswept[:3]}; run {cmd}"
    assert not s.missing, "\n".join(
        [f"{name}: {len(s.missing)} picks of origami.select() are not in the data; re-sweep with {cmd}:"]
        + [f"  {p.describe()}: pick {c.short()}" for p, c in s.missing[:10]])
    got = (f"held-out {name}: {len(s.per_shape)} shapes, geomean {s.geomean:.3f}, p10 {s.p10:.3f}, worst "
           f"{[(round(float(e), 2), p.describe()) for e, p in s.worst(3)]}")
    print(got)
    floors = FLOORS.get(name)
    assert floors is not None, (f"{got}\nno floors for {name}: add it to benchmarks/data/floors.yaml (section "
                                f"heldout): geomean {s.geomean - 0.02:.3f}, p10 {s.p10 - 0.02:.3f}, min_shapes "
                                f"{len(s.per_shape)}, max_missing 0, sha256 {file_sha256(path)}")
    assert file_sha256(path) == floors["sha256"], f"{got}\n{name} changed: re-score it and update its floors entry"
    assert len(s.per_shape) >= floors["min_shapes"], got
    assert s.geomean >= floors["geomean"] and s.p10 >= floors["p10"], f"{got} < floors {floors}"


def test_every_heldout_floor_has_its_split_file():
    stems = {f"h200_heldout/{s}.csv" for s in heldout_stems()}
    assert not set(FLOORS) - stems, f"heldout floors for files not in the split: {sorted(set(FLOORS) - stems)}"

"""Held-out guard: ``origami.select()``'s real pick on the exhaustive sweeps of the committed
held-out split (benchmarks/shapes/heldout/ -> benchmarks/data/h200_heldout/<file>.csv), CPU, CI.

No fit reads these shapes (tritonblas.heldout refuses them), so this is the number to report.
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

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.selection import (DATA, HELDOUT_SWEEP, file_sha256, heldout_command, heldout_path,  # noqa: E402
                                  heldout_stems, load_floors, score)
from origami.fit import read_sweep  # noqa: E402
from tritonblas.heldout import heldout_split  # noqa: E402

FLOORS = load_floors()["heldout"]
SPLIT = heldout_split()


def _case(stem: str):
    path = heldout_path(stem)
    if not path.exists():
        return pytest.param(stem, id=stem, marks=pytest.mark.xfail(
            strict=True, reason=f"held-out sweep not recorded: run {HELDOUT_SWEEP.format(stems=stem)}"))
    swept = {m.problem for m in read_sweep(path)}
    left = [p for p in SPLIT[stem] if p not in swept]
    if left:  # a sweep stopped at its time budget: still data not recorded, and resumable
        return pytest.param(stem, id=stem, marks=pytest.mark.xfail(
            strict=True, reason=f"held-out sweep incomplete: {len(SPLIT[stem]) - len(left)} of {len(SPLIT[stem])} "
                                f"shapes recorded; resume with {HELDOUT_SWEEP.format(stems=stem)}"))
    return pytest.param(stem, id=stem)


@pytest.mark.parametrize("stem", [_case(s) for s in heldout_stems()])
def test_heldout_selection_efficiency(stem):
    check_heldout(stem, heldout_path(stem))


def check_heldout(stem: str, path: Path) -> None:
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
    check_floors(name, path, s, got)


def check_floors(name: str, path: Path, s, got: str) -> None:
    """A complete held-out file (every shape of its split file swept) against its floors entry."""
    floors = FLOORS.get(name)
    assert floors is not None, (f"{got}\nno floors for {name}: add it to benchmarks/data/floors.yaml (section "
                                f"heldout): geomean {s.geomean - 0.02:.3f}, p10 {s.p10 - 0.02:.3f}, min_shapes "
                                f"{len(s.per_shape)}, max_missing 0, sha256 {file_sha256(path)}")
    assert file_sha256(path) == floors["sha256"], f"{got}\n{name} changed: re-score it and update its floors entry"
    assert len(s.per_shape) >= floors["min_shapes"], got
    assert s.geomean >= floors["geomean"] and s.p10 >= floors["p10"], f"{got} < floors {floors}"


def test_every_heldout_floor_has_its_split_file():
    import origami

    stems = {f"{profile}_heldout/{s}.csv" for profile in origami.list_profiles() for s in heldout_stems()}
    assert not set(FLOORS) - stems, f"heldout floors for files not in the split: {sorted(set(FLOORS) - stems)}"


def _write_sweep_without_picks(path: Path, problems, profile: str, with_picks: bool = False) -> None:
    """A synthetic held-out sweep at ``path``: per problem, the first two configs of its space other than
    ``origami.select()``'s pick for ``profile`` (times 1 and 2 ms); with ``with_picks``, the picks too (1.5 ms)."""
    import csv

    import origami
    from benchmarks.sweep import COLS, CONFIG_COLS, PROBLEM_COLS, _scored, cell

    hw = origami.load_profile(profile)
    path.parent.mkdir(exist_ok=True)
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLS)
        w.writeheader()
        for p in problems:
            pick = origami.select(p, hw).config
            others = [cp for cp in _scored(p, hw) if cp[0] != pick][:2]
            rows = [(c, pred, f"{1 + i}") for i, (c, pred) in enumerate(others)]
            if with_picks:
                rows.append((pick, 1.0, "1.5"))
            for c, pred, ms in rows:
                r = {k: cell(getattr(p, k)) for k in PROBLEM_COLS}
                r.update({k: cell(getattr(c, k)) for k in CONFIG_COLS}, median_ms=ms, error="",
                         predicted_ns=f"{pred:.1f}")
                w.writerow(r)


def test_a_pick_missing_from_held_out_data_fails_naming_shape_pick_and_command(tmp_path):
    """The guard on a (synthetic) held-out sweep of one split file that lacks select()'s picks."""
    import origami

    hw = origami.load_profile("h200")
    path = tmp_path / "h200_heldout" / "square.csv"
    _write_sweep_without_picks(path, SPLIT["square"], "h200")
    first = SPLIT["square"][0]
    with pytest.raises(AssertionError) as e:
        check_heldout("square", path)
    msg = str(e.value)
    assert "picks of origami.select() are not in the data" in msg and "re-sweep" in msg
    assert HELDOUT_SWEEP.format(stems="square") in msg
    assert f"{first.describe()}: pick {origami.select(first, hw).config.short()}" in msg


def test_the_table_says_which_held_out_files_are_missing():
    from benchmarks.selection import heldout_table, training_table

    lines = heldout_table()
    absent = [s for s in heldout_stems() if not heldout_path(s).exists()]
    for s in absent:
        assert any(line.startswith(f"h200_heldout/{s}.csv") and "not recorded" in line for line in lines)
    if absent:
        assert HELDOUT_SWEEP.format(stems=" ".join(absent)) in lines[-1]
    train = training_table()
    assert train[0].startswith("training split (fitted data") and any(x.startswith("h200/grid.csv ") for x in train)
    # each profile's table holds its own sweeps only: h100's picks scored on the H200's data (or the reverse) say nothing
    rows = {p: [x.split()[0] for x in training_table(p)[2:] if not x.startswith("pooled")] for p in ("h200", "h100")}
    assert rows["h200"] and all(r.split("/")[0] in ("h200", "h200_cold") for r in rows["h200"])
    assert rows["h100"] and all(r.split("/")[0] in ("h100", "h100_cold") for r in rows["h100"])


def test_misses_lists_exactly_the_shapes_under_the_threshold():
    from benchmarks import selection

    below = 0.9
    want = 0
    for stem in heldout_stems():
        path = heldout_path(stem)
        if path.exists():
            want += sum(e < below for e in score([path])[1].per_shape)
    lines = selection.misses("h200", below)
    rows = lines[2:]
    assert len(rows) == want
    import origami
    from origami.kmajor import mma_reads_through_registers

    hw = origami.load_profile("h200")
    for line in rows:
        eff = float(line.split()[4])
        assert eff < below, line
        m, n, k = map(int, line.split()[1].split("x"))
        dtype = line.split()[2]
        p = origami.GemmProblem(m, n, k, dtype, dtype, origami.DType.parse(dtype).default_output,
                                align_bytes=int(line.split()[3].rstrip("R")))
        assert line.split()[3].endswith("R") == mma_reads_through_registers(p, hw), line  # the regime mark
    for bad in ("0", "1.5"):
        with pytest.raises(SystemExit):
            selection.main(["--misses", bad])


# --- other profiles' held-out data (e.g. h100 on the H100s the device tool gives): the guard's rules hold from
# the first row (only the split's shapes, and every recorded shape holds origami.select()'s pick for that
# profile); once a file holds every shape of its split file, its floors entry is required and checked as h200's


def check_other_profile(stem: str, path: Path, profile: str) -> None:
    name = f"{path.parent.name}/{path.name}"
    data, s = score([path], profile)
    foreign = [m.problem.describe() for m in data if m.problem not in SPLIT[stem]]
    assert not foreign, f"{name}: {len(foreign)} shapes not in the split's {stem} file, e.g. {foreign[:3]}"
    assert not s.missing, "\n".join(
        [f"{name}: {len(s.missing)} picks of origami.select() for {profile} are not in the data; re-sweep with "
         f"{heldout_command(stem, profile)}:"] + [f"  {p.describe()}: pick {c.short()}" for p, c in s.missing[:10]])
    got = (f"held-out {name}: {len(s.per_shape)} of {len(SPLIT[stem])} shapes, geomean {s.geomean:.3f}, "
           f"p10 {s.p10:.3f}")
    print(got)
    swept = {m.problem for m in data}
    if all(p in swept for p in SPLIT[stem]):
        check_floors(name, path, s, got)


def _other_profiles() -> list[str]:
    """The profiles other than h200 with a benchmarks/data/<profile>_heldout/ folder (not h200_vendor_heldout:
    torch's times, vendor_times.py)."""
    import origami

    profiles = set(origami.list_profiles()) - {"h200"}
    return [d.name[:-len("_heldout")] for d in sorted(DATA.glob("*_heldout")) if d.name[:-len("_heldout")] in profiles]


def _other_cases():
    out = [pytest.param(profile, f.stem, id=f"{profile}-{f.stem}") for profile in _other_profiles()
           for f in sorted((DATA / f"{profile}_heldout").glob("*.csv"))]
    why = "no other profile's held-out data recorded yet (device_plan.sh with OTHER_HELDOUT=h100)"
    return out or [pytest.param(None, None, marks=pytest.mark.skip(reason=why))]


@pytest.mark.parametrize("profile,stem", _other_cases())
def test_other_profiles_held_out_data_holds_their_picks(profile, stem):
    check_other_profile(stem, heldout_path(stem, profile), profile)


def test_another_profiles_missing_pick_fails_naming_its_command(tmp_path):
    """The h100 check on a synthetic file that lacks h100's picks: it fails naming the profile's command."""
    path = tmp_path / "h100_heldout" / "skinny.csv"
    _write_sweep_without_picks(path, SPLIT["skinny"][:3], "h100")
    with pytest.raises(AssertionError) as e:
        check_other_profile("skinny", path, "h100")
    msg = str(e.value)
    assert "picks of origami.select() for h100 are not in the data" in msg
    assert heldout_command("skinny", "h100") in msg and msg.count("--profile h100") == 1
    # the same rows with each shape's pick added pass
    _write_sweep_without_picks(path, SPLIT["skinny"][:3], "h100", with_picks=True)
    check_other_profile("skinny", path, "h100")


def test_another_profiles_table_names_its_record_command():
    from benchmarks.selection import heldout_table

    lines = heldout_table("h100")
    assert lines[0].startswith("held-out split (h100,")
    absent = [s for s in heldout_stems() if not heldout_path(s, "h100").exists()]
    if absent:
        assert lines[-1].endswith(heldout_command(" ".join(absent), "h100"))
        assert lines[-1].endswith("--profile h100")


def test_common_table_of_one_profile_is_its_pooled_rows_and_two_share_their_shapes():
    from benchmarks.selection import common_table, heldout_table

    pooled = {line.split()[3]: line.split()[4:7] for line in heldout_table("h200") if line.startswith("pooled")}
    one = common_table(["h200"])
    rows = {line.split()[0]: line.split()[1:4] for line in one[2:]}
    assert rows and set(rows) == set(pooled)
    for dtype, (n, geo, p10) in rows.items():
        assert [n, geo, p10] == pooled[dtype], (dtype, rows[dtype], pooled[dtype])
    for other in _other_profiles():  # the shapes both recorded: never more than either has
        two = {line.split()[0]: int(line.split()[1]) for line in common_table(["h200", other])[2:]}
        for dtype, n in two.items():
            assert n <= int(rows[dtype][0]), (other, dtype)
    with pytest.raises(SystemExit, match="no held-out data recorded for b200"):
        common_table(["h200", "b200"])

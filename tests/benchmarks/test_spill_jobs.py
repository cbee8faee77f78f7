"""benchmarks/spill_jobs.py (CPU): the job times, on a training sweep's register-staged shapes, one config of
each census-spilling (kind, tile, warps) group the shape has not timed, heaviest spill first, beside every config
the shape already timed, into the sweep's repick file; a held-out sweep is refused."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks import spill_jobs as sj  # noqa: E402
from benchmarks.sweep import read_rows  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
RAGGED = ROOT / "benchmarks" / "data" / "h100" / "ragged.csv"


def _first_shapes(tmp_path, n: int) -> Path:
    """A copy of h100/ragged.csv holding its first ``n`` shapes without their census-spilling configs' rows (the
    committed file has every spilling group timed), at the same place under tmp_path."""
    from origami.spill_census import SPILL_BYTES as census

    lines = RAGGED.read_text().splitlines(keepends=True)
    head = [ln for ln in lines if ln.startswith("#")]
    body = [ln for ln in lines if not ln.startswith("#")]
    shapes = []
    keep = [body[0]]
    for ln, r in zip(body[1:], read_rows(RAGGED)):
        key = (r["m"], r["n"], r["k"])
        if key not in shapes:
            shapes.append(key)
        spills = census.get((r["kind"], int(r["block_m"]), int(r["block_n"]), int(r["block_k"]), int(r["num_warps"])), 0)
        if key in shapes[:n] and not spills:
            keep.append(ln)
    out = tmp_path / "benchmarks" / "data" / "h100" / "ragged.csv"
    out.parent.mkdir(parents=True)
    out.write_text("".join(head + keep))
    return out


def test_the_job_holds_untimed_spilling_groups_heaviest_first_then_the_timed_configs(tmp_path, monkeypatch):
    import origami
    from origami import space
    from origami.fit import read_sweep

    from origami.spill_census import SPILL_BYTES as census

    monkeypatch.setattr(sj, "ROOT", tmp_path)
    sweep = _first_shapes(tmp_path, 2)
    rows, shapes, new = sj.spill_rows(sweep, "h100")
    hw = origami.load_profile("h100")
    data = read_sweep(sweep)
    assert shapes == sum(space.register_staged(m.problem, hw) for m in data) == 2
    assert {r["out"] for r in rows} == {"benchmarks/data/h100_repick/ragged.csv"}
    assert new > 0
    for meas in data:
        mine = [r for r in rows if (int(r["m"]), int(r["n"]), int(r["k"])) == (meas.problem.m, meas.problem.n,
                                                                                 meas.problem.k)]
        groups = [(r["kind"], int(r["block_m"]), int(r["block_n"]), int(r["block_k"]), int(r["num_warps"]))
                  for r in mine]
        timed = {space.spill_group(c) for c in meas.configs}
        fresh = groups[: len(groups) - len(meas.configs)]
        assert set(groups[len(fresh):]) == timed, "the shape's timed configs follow the new ones, all of them"
        assert fresh and len(set(fresh)) == len(fresh), "one config per new group"
        assert all(census[g] > 0 and g not in timed for g in fresh)
        assert [census[g] for g in fresh] == sorted((census[g] for g in fresh), reverse=True)
        # every census-spilling group of the space the shape lacks is there, those the profile's slowdown limit
        # leaves out of its space included (they are what the job is for)
        full = hw.replace_model(staged_slowdown_limit=0.0)
        space_groups = {space.spill_group(c) for c in origami.candidates(meas.problem, full)}
        assert set(fresh) == {g for g in space_groups if census.get(g, 0) > 0} - timed
        limit = hw.model["staged_slowdown_limit"]
        assert any((space.measured_spill_slowdown(c, meas.problem, hw) or 0) >= limit
                   for c in origami.candidates(meas.problem, full) if space.spill_group(c) in fresh)


def test_a_heldout_sweep_is_refused():
    with pytest.raises(SystemExit, match="held-out"):
        sj.main(["--sweep", str(ROOT / "benchmarks" / "data" / "h100_heldout" / "skinny.csv")])

"""benchmarks/term_search.py (CPU): the objective counts an untimed pick at --untimed-eff, a step that
breaks a floor is never taken, and bad arguments name themselves."""

from __future__ import annotations

import math
import sys
from dataclasses import replace
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import origami  # noqa: E402
from benchmarks import term_search  # noqa: E402
from origami.fit import pick_efficiency, read_sweep  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
H200 = origami.load_profile("h200")
SWEEP = read_sweep(ROOT / "benchmarks" / "data" / "h200" / "issue4.csv")


def test_an_untimed_pick_counts_at_untimed_eff():
    s = pick_efficiency(SWEEP, H200)
    assert not s.missing
    # drop the first shape's pick from its timed configs: that shape is now untimed
    m = SWEEP[0]
    pick = origami.select(m.problem, H200).config
    kept = [(c, t) for c, t in zip(m.configs, m.ms) if c != pick]
    data = [replace(m, configs=tuple(c for c, _ in kept), ms=tuple(t for _, t in kept)), *SWEEP[1:]]
    obj, untimed, broken = term_search.evaluate({"h200/x.csv": data}, H200, 0.5, floors={})
    assert untimed == 1 and broken == []
    rest = pick_efficiency(data, H200).per_shape
    assert obj == pytest.approx(math.exp((sum(map(math.log, rest)) + math.log(0.5)) / (len(rest) + 1)))


def test_no_step_is_taken_while_a_floor_is_broken():
    floors = {"h200/issue4.csv": {"geomean": 1.01, "p10": 0.0}}  # unreachable: every candidate breaks it
    reached, ev = term_search.search({"h200/issue4.csv": SWEEP}, H200, ["tile_overhead_ns"], 0.8, 1,
                                     floors=floors, log=lambda *_: None)
    assert reached == dict(H200.model) and ev[2]


def test_a_step_is_taken_only_when_it_raises_the_objective():
    start = term_search.evaluate({"h200/issue4.csv": SWEEP}, H200, 0.8, floors={})
    reached, ev = term_search.search({"h200/issue4.csv": SWEEP}, H200, ["tile_overhead_ns"], 0.8, 1, floors={},
                                     log=lambda *_: None)
    assert ev[0] >= start[0]
    assert (reached == dict(H200.model)) == (ev[0] == start[0])


def test_the_grid_evaluates_every_point_as_evaluate_does():
    sweeps = {"h200/issue4.csv": SWEEP}
    out = term_search.grid(sweeps, H200, {"tile_overhead_ns": [300.0, 900.0], "fixup_ns": [1000.0]}, 0.8,
                           floors={}, log=lambda *_: None)
    assert [p for p, _ in out] == [{"tile_overhead_ns": 300.0, "fixup_ns": 1000.0},
                                   {"tile_overhead_ns": 900.0, "fixup_ns": 1000.0}]
    for point, ev in out:
        assert ev == term_search.evaluate(sweeps, H200.replace_model(**{**H200.model, **point}), 0.8, floors={})


@pytest.mark.parametrize("args,needle", [(["--params", "no_such_term"], "no_such_term"),
                                         (["--grid", "no_such_term=1"], "no_such_term"),
                                         (["--grid", "fixup_ns=x"], "--grid fixup_ns=x"),
                                         (["--grid", "fixup_ns=-5"], "--grid fixup_ns=-5"),
                                         ([], "none given"),
                                         (["--params", "fixup_ns", "--untimed-eff", "0"], "--untimed-eff"),
                                         (["--params", "fixup_ns", "--rounds", "0"], "--rounds"),
                                         (["--params", "fixup_ns", "--set", "fixup_ns"], "KEY=VALUE")])
def test_bad_arguments_name_themselves(args, needle, capsys):
    with pytest.raises(SystemExit) as e:
        term_search.main(args)
    assert needle in (str(e.value.code) + capsys.readouterr().err)

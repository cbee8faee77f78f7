"""benchmarks/term_eval.py (CPU): a change that changes nothing moves no pick on any sweep, and bad
arguments are refused naming themselves."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks import term_eval  # noqa: E402


def test_a_neutral_value_moves_no_pick(capsys):
    assert term_eval.main(["--set", "staged_spill_penalty=0,splitk_range_reads=0"]) == 0
    out = capsys.readouterr().out
    assert "changed: nothing" in out
    rows = [line.split() for line in out.splitlines() if line.startswith(("held-out", "training"))]
    assert len(rows) > 20 and all(r[3] == "0" for r in rows), out  # the 'moved' column
    assert "NOT met" in out  # nothing improved


@pytest.mark.parametrize("args,needle", [(["--fit", "no_such_term"], "no_such_term"),
                                         (["--set", "no_such_term=1"], "no_such_term"),
                                         (["--set", "staged_spill_penalty"], "KEY=VALUE")])
def test_bad_arguments_name_themselves(args, needle, capsys):
    with pytest.raises(SystemExit) as e:
        term_eval.main(args)
    assert needle in (str(e.value.code) + capsys.readouterr().err)


def test_training_only_prints_no_held_out_row_and_judges_the_floors(capsys):
    """--training-only is how a term is explored without looking at held-out data: no held-out row is
    printed, and the rule line judges only the training floors."""
    term_eval.main(["--training-only", "--set", "splitk_range_reads=0"])
    out = capsys.readouterr().out
    assert not [line for line in out.splitlines() if line.startswith("held-out")], out
    assert [line for line in out.splitlines() if line.startswith("training")]
    assert "training floors: no training floor broken: met (held-out rule not judged)" in out


def test_broken_floors_names_the_file_and_the_floor():
    from benchmarks.splitk_eval import broken_floors
    from origami.fit import PickScore

    floors = {"h200/llm.csv": {"geomean": 0.95, "p10": 0.90}}

    def score(g, p):
        return PickScore(geomean=g, p10=p, per_shape=(), problems=(), missing=())

    rows = [("training", "h200/llm.csv", 10, 1, score(0.97, 0.91), score(0.96, 0.89)),
            ("training", "h200/grid.csv", 10, 1, score(0.97, 0.91), score(0.5, 0.5)),  # no entry: not judged
            ("held-out", "h200_heldout/llm.csv", 10, 1, score(0.97, 0.91), score(0.5, 0.5))]
    assert broken_floors(rows, floors) == ["h200/llm.csv (p10 0.890 < 0.9)"]
    assert broken_floors(rows[:1], {"h200/llm.csv": {"geomean": 0.97, "p10": 0.5}}) == [
        "h200/llm.csv (0.960 / 0.890 < 0.97 / 0.5)"]
    assert broken_floors([("training", "h200/llm.csv", 10, 1, score(0.97, 0.91), score(0.95, 0.90))], floors) == []


def test_the_generic_rule_owes_no_particular_file_a_gain(capsys):
    """term_eval's rule (``gain_sets=()``): met when some held-out file goes up and none goes down by more than
    the slack, whatever the files; split-K's rule (the default) still asks skinny/longk/fp16/llm to go up."""
    from benchmarks.splitk_eval import report
    from origami.fit import PickScore

    def score(g, p):
        return PickScore(geomean=g, p10=p, per_shape=(), problems=(), missing=())

    up = [("held-out", "h200_heldout/tf32.csv", 18, 2, score(0.80, 0.70), score(0.85, 0.72)),
          ("held-out", "h200_heldout/llm.csv", 12, 0, score(0.92, 0.80), score(0.92, 0.80))]
    assert report(up, gain_sets=()) is True
    assert "met" in capsys.readouterr().out.splitlines()[-1]
    assert report(up) is False  # the split-K rule: llm (one of skinny/longk/fp16/llm) not up
    capsys.readouterr()
    flat = [(s, n, k, 0, a, a) for s, n, k, _, a, _ in up]
    assert report(flat, gain_sets=()) is False  # nothing lifted: nothing to ship
    assert "(not: every file)" in capsys.readouterr().out
    down = up + [("held-out", "h200_heldout/dlrm.csv", 12, 1, score(0.99, 0.97), score(0.97, 0.97))]
    assert report(down, gain_sets=()) is False
    assert "(down: h200_heldout/dlrm.csv)" in capsys.readouterr().out

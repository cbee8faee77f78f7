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

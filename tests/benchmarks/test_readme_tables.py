"""README.md quotes the held-out tables (issue 19 item 6): every row it shows must be what
``benchmarks/selection.py`` prints today for that profile, so a re-sweep, a refit or a changed floor that moves
a number makes the README wrong loudly instead of silently. CPU, recorded data only."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks.selection import heldout_table  # noqa: E402

ROW = re.compile(r"^(?:(?P<profile>\w+)_heldout/\S+\.csv|pooled \(recorded files\))\s")


def readme_tables() -> list[list[str]]:
    """The README's fenced blocks that hold held-out rows, each as its list of rows."""
    blocks, inside, rows = [], False, []
    for line in (ROOT / "README.md").read_text().splitlines():
        if line.startswith("```"):
            if inside and rows:
                blocks.append(rows)
            inside, rows = not inside, []
        elif inside and ROW.match(line):
            rows.append(line.rstrip())
    return blocks


def profile_of(rows: list[str]) -> str:
    found = {m.group("profile") for m in map(ROW.match, rows) if m.group("profile")}
    assert len(found) == 1, f"a README table mixes profiles: {sorted(found)}"
    return found.pop()


def test_readme_quotes_a_heldout_table_per_profile():
    tables = readme_tables()
    assert sorted(profile_of(t) for t in tables) == ["h100", "h200"], "the README quotes one table per GPU measured"


@pytest.mark.parametrize("rows", readme_tables(), ids=lambda rows: profile_of(rows))
def test_every_readme_row_is_what_selection_prints(rows):
    """Each README row is a prefix of a row ``selection.py --profile P`` prints (the README may drop the worst
    shape's dtype suffix), and the README leaves out no file the script scores."""
    printed = [line.rstrip() for line in heldout_table(profile_of(rows)) if ROW.match(line)]
    for row in rows:
        assert any(p.startswith(row) for p in printed), (
            f"README.md row is stale:\n  {row}\nselection.py prints:\n  " + "\n  ".join(printed))
    quoted, scored = {_key(r) for r in rows}, {_key(p) for p in printed if "not recorded" not in p}
    assert scored <= quoted, f"README.md leaves out rows selection.py scores: {sorted(scored - quoted)}"


def _key(row: str) -> tuple[str, str]:
    """(file, dtype) of a table row; ("pooled", dtype) for a pooled row."""
    t = row.split()
    return ("pooled", t[3]) if t[0] == "pooled" else (t[0], t[1])

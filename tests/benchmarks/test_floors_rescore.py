"""benchmarks/floors_rescore.py (CPU): re-scoring follows floors.yaml's rules — a floor on unchanged data
never goes down and a worse entry is refused; changed data gets achieved − 0.02 (not below an old floor
the model still meets), its counts and its new hash; rewriting touches only the re-scored lines and the
result still loads."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks import floors_rescore as fr  # noqa: E402
from benchmarks.selection import FLOORS_FILE, FloorsError, load_floors  # noqa: E402

FLOORS = load_floors()
NAME = "h200/llm.csv"


def test_nothing_to_do_while_every_file_matches_its_hash():
    assert fr.proposals() == []


def test_unchanged_data_never_lowers_a_floor():
    entry = FLOORS["training"][NAME]
    p = fr.propose("training", NAME, entry)
    assert not p.changed and p.refused is None
    assert p.new["geomean"] >= entry["geomean"] and p.new["p10"] >= entry["p10"]
    assert p.new["sha256"] == entry["sha256"] and p.new["max_missing"] == entry["max_missing"]
    # an entry that asks for more than the data gives: refused, never rewritten to fit
    strict = {**entry, "min_shapes": entry["min_shapes"] + 1}
    assert "time the missing picks" in fr.propose("training", NAME, strict).refused


def test_changed_data_takes_the_achieved_values_and_the_new_hash():
    entry = {**FLOORS["training"][NAME], "sha256": "0" * 64}  # as if the file had been re-recorded
    p = fr.propose("training", NAME, entry)
    g, q, n, miss = p.achieved
    assert p.changed and p.refused is None
    assert p.new["sha256"] == fr.file_sha256(fr.DATA / NAME)
    assert (p.new["min_shapes"], p.new["max_missing"]) == (n, miss)
    for key, got in (("geomean", g), ("p10", q)):
        want = max(round(got - fr.MARGIN, 3), entry[key]) if got >= entry[key] else round(got - fr.MARGIN, 3)
        assert p.new[key] == want
    high = {**entry, "geomean": 0.999}  # an old floor the model no longer meets: achieved − 0.02 on new data
    assert fr.propose("training", NAME, high).new["geomean"] == round(g - fr.MARGIN, 3)


def test_rewriting_touches_only_the_named_lines_and_still_loads():
    text = FLOORS_FILE.read_text()
    entry = {**FLOORS["training"][NAME], "geomean": 0.5}
    line = fr.render(NAME, entry, "test")
    new = fr.replace_entries(text, {NAME: line})
    old_lines, new_lines = text.splitlines(), new.splitlines()
    assert len(old_lines) == len(new_lines)
    assert [i for i, (a, b) in enumerate(zip(old_lines, new_lines)) if a != b] == [old_lines.index(
        next(t for t in old_lines if t.startswith(f"  {NAME}: {{")))]
    assert load_floors(new)["training"][NAME] == entry
    pooled = next(iter(FLOORS["pooled"]))
    assert load_floors(fr.replace_entries(text, {pooled: fr.render(pooled, FLOORS["pooled"][pooled], "x")}))[
        "pooled"][pooled] == FLOORS["pooled"][pooled]
    with pytest.raises(FloorsError, match="no_such"):
        fr.replace_entries(text, {"no_such.csv": "x"})
    with pytest.raises(FloorsError, match="no entry"):
        fr.proposals(["no_such.csv"])


def test_each_entry_is_scored_with_its_folders_profile():
    """The default profile of an entry is its folder's (``selection.entry_profile``, which the training guard and
    ``selection.py``'s training table read too), so h100's entries are never scored with h200's picks."""
    for name, want in [("h200/llm.csv", "h200"), ("h200_cold/bf16", "h200"), ("h200_heldout/llm.csv", "h200"),
                       ("h100/llm.csv", "h100"), ("h100_cold/decode.csv", "h100"), ("h100_heldout/square.csv", "h100")]:
        assert fr.entry_profile(name) == want, name

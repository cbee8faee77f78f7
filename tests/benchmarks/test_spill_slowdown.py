"""benchmarks/spill_slowdown.py (CPU): origami's slowdown table is what the committed H100 training sweeps give,
and each shipped profile's model.staged_slowdown_limit is what the chooser picks on that profile's own training
sweeps (no held-out file read)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks import spill_slowdown as ss  # noqa: E402


def _training_only(monkeypatch) -> list:
    from benchmarks import splitk_eval

    read = []
    real = splitk_eval._files

    def files(profile):
        train, heldout = real(profile)
        read.extend(train)
        return train, heldout

    monkeypatch.setattr(splitk_eval, "_files", files)
    return read


def test_the_slowdown_table_is_what_the_h100_training_sweeps_give(monkeypatch):
    read = _training_only(monkeypatch)
    assert (ss.ROOT / "origami" / "spill_slowdown.py").read_text() == ss.table_source(ss.slowdowns()), \
        "origami/spill_slowdown.py is stale: python benchmarks/spill_slowdown.py --table"
    assert read and not any("heldout" in p.parent.name for p in read)


@pytest.mark.parametrize("name", ["h100", "h200"])
def test_the_shipped_limit_is_what_the_chooser_picks_on_the_profiles_training_sweeps(name, monkeypatch):
    import origami

    read = _training_only(monkeypatch)
    limit, lines = ss.choose([name])
    assert read and not any("heldout" in p.parent.name for p in read)
    assert origami.load_profile(name).model.get("staged_slowdown_limit", 0.0) == (limit or 0.0), "\n".join(lines)


@pytest.mark.parametrize("name", ["h100", "h200"])
def test_the_shipped_fp8_limit_is_what_the_chooser_picks_on_the_profiles_training_sweeps(name, monkeypatch):
    """model.fp8_spill_traffic_limit: h100's from its unaligned fp8 training rows; h200 has none, so it keeps 0."""
    import origami

    read = _training_only(monkeypatch)
    limit, lines = ss.choose([name], "fp8_spill_traffic_limit")
    assert read and not any("heldout" in p.parent.name for p in read)
    assert origami.load_profile(name).model.get("fp8_spill_traffic_limit", 0.0) == (limit or 0.0), "\n".join(lines)
    assert (limit is None) == (name == "h200"), "\n".join(lines)

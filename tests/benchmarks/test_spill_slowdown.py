"""benchmarks/spill_traffic.py (CPU): the limit is derived from training rows by its stated rule, and the shipped
profiles hold what it derives from their own training sweeps (no held-out file read)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks import spill_traffic as stf  # noqa: E402


def test_the_limit_is_the_midpoint_under_the_run_of_slow_heavy_groups():
    g = {"a": (3.0, [2.0] * 12), "b": (2.5, [1.5] * 12), "few": (2.2, [0.5] * 3), "c": (1.8, [1.2] * 12),
         "fast": (1.4, [0.9] * 12), "slow_again": (0.7, [2.0] * 12)}
    assert stf.derive_limit(g, slow=1.1, min_rows=10) == pytest.approx((1.4 + 1.8) / 2)
    assert stf.derive_limit({"fast": (3.0, [1.0] * 12)}, slow=1.1, min_rows=10) is None
    assert stf.derive_limit({"a": (3.0, [2.0] * 12)}, slow=1.1, min_rows=10) == pytest.approx(1.5)


@pytest.mark.parametrize("name", ["h100", "h200"])
def test_the_shipped_limit_is_what_the_profiles_training_rows_give(name, monkeypatch):
    import origami
    from benchmarks import splitk_eval

    read = []
    real = splitk_eval._files

    def files(profile):
        train, heldout = real(profile)
        read.extend(train)
        return train, heldout

    monkeypatch.setattr(splitk_eval, "_files", files)
    limit = stf.derive_limit(stf.group_ratios(name), slow=1.1, min_rows=10)
    assert read and not any("heldout" in p.parent.name for p in read)
    assert origami.load_profile(name).model["staged_spill_traffic_limit"] == pytest.approx(limit, abs=5e-4)

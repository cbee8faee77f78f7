"""origami.fit's acceptance rule (``accepts``), the one that ``FitReport.accepted`` and
``tritonblas calibrate --fit`` (``FitOutcome.accepted``) both apply."""

from __future__ import annotations

import pytest

from origami.fit import FitReport, accepts


@pytest.mark.parametrize("before, after, ok", [
    ((0.9, 0.8, 0), (0.92, 0.8, 0), True),
    ((0.9, 0.8, 0), (0.9, 0.8, 0), True),              # no change is not a loss
    ((0.9, 0.8, 0), (0.9 - 1e-12, 0.8, 0), True),      # float noise
    ((0.9, 0.8, 0), (0.89, 0.85, 0), False),           # geomean drops
    ((0.9, 0.8, 0), (0.95, 0.79, 0), False),           # p10 drops
    ((0.9, 0.8, 0), (0.95, 0.85, 1), False),           # a pick of the fitted model was never timed
    ((0.9, 0.8, 2), (0.95, 0.85, 0), True),            # missing picks before the fit do not block it
    (None, None, False), ((0.9, 0.8, 0), None, False),  # no held-out data: the fit cannot be validated
    ((0.9, 0.8, 0), (float("nan"), float("nan"), 0), False),
])
def test_accepts(before, after, ok):
    assert accepts(before, after) is ok
    assert FitReport({}, None, None, before, after).accepted is ok


def test_ws_efficiency_fits_up_from_its_default_of_zero():
    """hwprofiles/README.md: ``model.ws_efficiency`` (default 0: no 'ws' kernel in the space) is
    fitted with ``calibrate --fit ... --params ws_efficiency``. A parameter at 0 was probed at
    (lo + hi) / 10 x steps = 0.14-0.28 of the data-parallel kernel's main-loop efficiency, where the
    kernel never wins, so the fit never moved: from h200 without the field, on the h200 sweeps that
    time the kernel (square.csv, llm.csv), it kept 0 (from 1.0 the same fit reaches 1.127). A relative
    efficiency at 0 is probed around 1 (the data-parallel kernel's own)."""
    from pathlib import Path

    import origami
    from origami.fit import fit, read_sweep, selection_efficiency

    data = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "h200"
    train = read_sweep([data / "square.csv", data / "llm.csv"])
    hw = origami.load_profile("h200").replace_model(ws_efficiency=0.0)
    report = fit(hw, train, [], params=["ws_efficiency"], rounds=2)
    assert report.params["ws_efficiency"] > 0.5, report.params["ws_efficiency"]
    assert report.train_after.geomean > report.train_before.geomean
    assert selection_efficiency(train, hw.replace_model(ws_efficiency=report.params["ws_efficiency"])) == \
        report.train_after

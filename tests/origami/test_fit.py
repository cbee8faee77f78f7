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

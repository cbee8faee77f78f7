"""Selection efficiency of the current model against recorded H200 sweeps (CPU, in CI).

For every shape of every sweep in benchmarks/data/h200/ the model picks, among the configs that
were measured, the one it predicts fastest; efficiency = best measured time / time of the pick.
The floors sit 2 points under what the model achieved when they were set, so a model change that
makes selection worse fails here. Raise them when the model improves; never lower them to make a
change pass (DEVELOPERS.md). Achieved at commit time (calib.csv, 16 shapes x 40 configs, CUDA-graph
timing, H200, 2026-11-30): geomean 0.838, p10 0.718.
"""

from pathlib import Path

import pytest

from origami.fit import read_sweep, selection_efficiency

DATA = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "h200"
GEOMEAN_FLOOR = 0.818
P10_FLOOR = 0.698


def _sweeps():
    return sorted(DATA.glob("*.csv"))


@pytest.mark.skipif(not _sweeps(), reason="no recorded sweep in benchmarks/data/h200")
def test_selection_efficiency_on_recorded_h200_sweeps():
    data = read_sweep(_sweeps())
    assert len(data) >= 10, f"expected at least 10 measured shapes, found {len(data)}"
    s = selection_efficiency(data, "h200")
    worst = sorted(zip(s.per_shape, (m.problem.describe() for m in data)))[:3]
    print(f"{len(data)} shapes: geomean {s.geomean:.3f}, p10 {s.p10:.3f}, median |log err| {s.log_error:.3f}; "
          f"worst {[(round(e, 2), d) for e, d in worst]}")
    assert s.geomean >= GEOMEAN_FLOOR, f"geomean selection efficiency {s.geomean:.3f} < floor {GEOMEAN_FLOOR}"
    assert s.p10 >= P10_FLOOR, f"p10 selection efficiency {s.p10:.3f} < floor {P10_FLOOR}"


def test_fit_refuses_a_fit_that_hurts_held_out_shapes():
    """The calibration guard: a fit on half the shapes is accepted only if the other half does not
    get worse (here the 8-shape halves overfit, which the guard must catch or the fit must help)."""
    from origami.fit import fit

    data = read_sweep(_sweeps())
    report = fit("h200", data[0::2], data[1::2], rounds=1, params=["mma_efficiency", "small_tile_efficiency"])
    assert report.accepted == (report.test_after.geomean >= report.test_before.geomean - 1e-9)
    assert report.train_after.geomean >= report.train_before.geomean - 1e-9

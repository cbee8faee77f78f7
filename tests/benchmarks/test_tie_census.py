"""benchmarks/tie_census.py (CPU): a tie is counted from origami's own ranking, the pick is the tie's first config,
the efficiencies come from the sweep's times, and bad arguments name themselves."""

from __future__ import annotations

import dataclasses
import math
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import origami  # noqa: E402
from benchmarks import tie_census  # noqa: E402
from origami.fit import read_sweep  # noqa: E402

H200 = origami.load_profile("h200")
CALIB = read_sweep(ROOT / "benchmarks" / "data" / "h200" / "calib.csv")


def _tied_shape():
    """A calib shape whose best predicted time two configs share under h200, and its tie."""
    for m in CALIB:
        tie = [e.config for e in tie_census.tied(m.problem, H200)]
        if len(tie) >= 2:
            return m, tie
    pytest.fail("no calib shape ties under h200: the census has nothing to test on")


def test_the_pick_is_the_first_config_of_its_tie():
    m, tie = _tied_shape()
    assert origami.select(m.problem, H200).config == tie[0]
    est = origami.rank(m.problem, H200, k=64)
    best = est[0].latency_ns
    assert [e.config for e in est[:len(tie)]] == tie
    assert est[len(tie)].latency_ns > best * (1 + tie_census.TIE_REL)  # the tie ends where the times part


def test_the_census_scores_the_pick_against_the_best_tied_config():
    """Two tied configs timed: the pick at twice the other's time reads 0.5 against 1.0; with the times swapped, both
    read 1.0. A shape without a tie adds to the shapes only."""
    m, tie = _tied_shape()
    slow = dataclasses.replace(m, configs=(tie[0], tie[1]), ms=(2.0, 1.0))
    c = tie_census.census([[slow]], H200)
    assert (c.shapes, c.tied, c.compared) == (1, 1, 1)
    assert c.pick_geomean == pytest.approx(0.5) and c.best_tied_geomean == pytest.approx(1.0)
    assert c.losses == ((pytest.approx(2.0), m.problem, tie[0], tie[1]),)
    fast = dataclasses.replace(m, configs=(tie[0], tie[1]), ms=(1.0, 2.0))
    c = tie_census.census([[fast]], H200)
    assert c.pick_geomean == pytest.approx(1.0) and c.best_tied_geomean == pytest.approx(1.0)
    assert c.losses == ()  # the pick is the fastest tied config: nothing lost
    worse = dataclasses.replace(m, configs=(tie[0], tie[1]), ms=(3.0, 1.0))
    c = tie_census.census([[slow, worse]], H200)
    assert [round(x[0], 6) for x in c.losses] == [3.0, 2.0]  # largest loss first
    untied = next(x for x in CALIB if len(tie_census.tied(x.problem, H200)) < 2)
    c = tie_census.census([[untied, slow]], H200)
    assert (c.shapes, c.tied, c.compared) == (2, 1, 1)
    untimed_pick = dataclasses.replace(m, configs=(tie[1], *[x for x in m.configs if x not in tie][:1]), ms=(1.0, 3.0))
    c = tie_census.census([[untimed_pick]], H200)
    assert (c.tied, c.compared) == (1, 0) and math.isnan(c.pick_geomean)


def test_pairs_count_configs_that_differ_in_one_thing_per_binding_term(monkeypatch):
    """A pair is counted under what the second config has more of (stages, GROUP_M, the persistent kernel) and the
    tie's binding term; configs that differ in two things (stages and warps) are no pair."""
    import types

    m, tie = _tied_shape()
    a = dataclasses.replace(tie[0], kind=origami.Kind.DP, group_m=1, grid=0, split_k=1)
    b = dataclasses.replace(a, num_stages=a.num_stages + 1)
    c_ = dataclasses.replace(a, num_stages=a.num_stages + 1, num_warps=a.num_warps * 2)
    d = dataclasses.replace(a, group_m=8)
    e = dataclasses.replace(a, kind=origami.Kind.PERSISTENT, grid=132)
    configs = (a, b, c_, d, e)
    monkeypatch.setattr(tie_census, "tied", lambda problem, hw: [types.SimpleNamespace(config=c, bound="l2")
                                                                 for c in configs])
    out = tie_census.census([[dataclasses.replace(m, configs=configs, ms=(2.0, 1.0, 5.0, 2.01, 3.0))]], H200)
    assert dict(out.pairs) == {("num_stages", "l2", "faster"): 1, ("group_m", "l2", "within 2%"): 1,
                               ("persistent", "l2", "slower"): 1}


def test_bad_arguments_name_themselves(capsys):
    with pytest.raises(SystemExit) as e:
        tie_census.main(["--files", "/nonexistent/x.csv"])
    assert e.value.code == 2 and "/nonexistent/x.csv" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        tie_census.main(["--profile", "no-such-gpu"])
    assert e.value.code == 2 and "--profile" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        tie_census.main(["--worst", "-1"])
    assert e.value.code == 2 and "--worst -1" in capsys.readouterr().err


def test_worst_lists_the_largest_losses(capsys):
    assert tie_census.main(["--files", str(ROOT / "benchmarks" / "data" / "h200" / "calib.csv"), "--worst", "2"]) == 0
    out = capsys.readouterr().out
    lines = [ln for ln in out.splitlines() if ln.strip().startswith("x")]
    census = tie_census.census([CALIB], H200)
    assert len(lines) == min(2, len(census.losses))
    for ln, (ratio, problem, pick, fastest) in zip(lines, census.losses):
        assert ln.strip().startswith(f"x{ratio:.2f}") and problem.describe() in ln and pick.short() in ln


@pytest.mark.parametrize("text", ["m,n\n1,2\n", "not a csv at all\n",
                                  "m,n,k,batch,a_dtype,b_dtype,c_dtype,a_layout,b_layout,median_ms\n"
                                  "1,2,3,1,bf16,bf16,bf16,N,N,abc\n"])
def test_a_file_that_is_no_sweep_is_an_error_naming_it(tmp_path, capsys, text):
    """A file with no timed shape, or one whose rows do not parse, exits 2 naming the file: never a census of
    nothing printed as if it were one."""
    bad = tmp_path / "bad.csv"
    bad.write_text(text)
    with pytest.raises(SystemExit) as e:
        tie_census.main(["--files", str(bad)])
    assert e.value.code == 2 and str(bad) in capsys.readouterr().err


def test_set_scores_the_census_with_the_parameters_replaced(capsys):
    """--set is the census of a candidate: its counts are those of the profile with those model parameters, and a
    parameter that changes the ranking changes them (mem_latency_ns far above h200's breaks latency ties apart)."""
    calib = str(ROOT / "benchmarks" / "data" / "h200" / "calib.csv")
    spec = "mem_latency_ns=5000,hbm_latency_ns=9000"
    assert tie_census.main(["--files", calib, "--set", spec]) == 0
    out = capsys.readouterr().out
    variant = H200.replace_model(mem_latency_ns=5000.0, hbm_latency_ns=9000.0)
    want, base = tie_census.census([CALIB], variant), tie_census.census([CALIB], H200)
    assert (want.tied, want.compared) != (base.tied, base.compared), "the variant moved no tie: the test tests nothing"
    assert f"{spec}: {want.shapes} training shapes" in out and f"; {want.tied} tie at" in out
    with pytest.raises(SystemExit) as e:
        tie_census.main(["--files", calib, "--set", "no_such_term=1"])
    assert "no_such_term" in str(e.value)

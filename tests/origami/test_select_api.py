"""The public selection API (DESIGN.md §3): errors, select_many order, the LRU cache, profile arguments."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import numpy as np
import pytest

import origami
from origami.problem import GemmProblem
from origami.select import select_many_arrays

HWPROFILES = Path(origami.__file__).resolve().parent.parent / "hwprofiles"


@pytest.mark.parametrize("m,n,batch", [(0, 128, 1), (128, 0, 1), (0, 0, 1), (64, 64, 0)])
@pytest.mark.parametrize("fn", ["select", "rank", "explain"])
def test_empty_output_raises(fn, m, n, batch):
    with pytest.raises(ValueError, match="empty output"):
        getattr(origami, fn)(GemmProblem(m, n, 64, batch=batch), "h200")


@pytest.mark.parametrize("m,n,batch", [(0, 128, 1), (128, 0, 1), (64, 64, 0)])
def test_empty_output_raises_in_candidates_and_select_many(m, n, batch):
    """``candidates`` of an empty output raised ZeroDivisionError, and ``select_many`` with one among its
    problems crashed inside numba (SystemError "returned a result with an exception set"), where select,
    rank and explain say "empty output"."""
    empty = GemmProblem(m, n, 64, batch=batch)
    with pytest.raises(ValueError, match="empty output"):
        origami.candidates(empty, "h200")
    with pytest.raises(ValueError, match=r"^problems\[1\]: .*empty output"):
        origami.select_many([GemmProblem(64, 64, 64), empty], "h200")


def test_select_among_names_a_bad_kinds_or_grid_per_cu():
    """``select_among(p, hw, "dp")`` iterated the string ("'d' is not a valid Kind", naming no argument), an
    unknown kind said "'bogus' is not a valid Kind", no kinds at all "no valid  configuration", and a
    ``grid_per_cu`` of 0, -1 or 1.5 "no valid persistent configuration" for a problem that has many."""
    p = GemmProblem(512, 512, 512)
    for kinds in ("dp", ["bogus"], [], None):
        with pytest.raises((TypeError, ValueError), match=r"^kinds: "):
            origami.select_among(p, "h200", kinds)
    for grid_per_cu in (0, -1, 1.5, True):
        with pytest.raises((TypeError, ValueError), match=r"^grid_per_cu: "):
            origami.select_among(p, "h200", ["persistent"], grid_per_cu=grid_per_cu)
    assert origami.select_among(p, "h200", ("dp",)).config.kind is origami.Kind.DP
    assert origami.select_among(p, "h200", [origami.Kind.PERSISTENT], grid_per_cu=1).config.kind is origami.Kind.PERSISTENT


@pytest.mark.parametrize("fn", ["rank", "explain"])
def test_k_must_be_a_positive_int(fn):
    """rank(p, hw, -1) sliced [:-1]: every candidate but the worst, silently; explain(k=-2) likewise,
    and k=1.5 or "3" were truncated/parsed. Now k names itself; numpy ints still work."""
    p = GemmProblem(256, 256, 256)
    for bad, exc in ((0, ValueError), (-1, ValueError), (-5, ValueError), (1.5, TypeError), ("3", TypeError),
                     (None, TypeError), (True, TypeError)):
        with pytest.raises(exc, match=r"^k: expected an int >= 1"):
            getattr(origami, fn)(p, "h200", bad)
    assert len(origami.rank(p, "h200", np.int64(3))) == 3
    assert origami.explain(p, "h200", 2).count("\n  #") == 2


def test_unknown_profile_raises_profile_error():
    with pytest.raises(origami.ProfileError, match="unknown profile") as exc:
        origami.select(GemmProblem(64, 64, 64), "no_such_gpu")
    assert isinstance(exc.value, ValueError)
    assert "h200" in str(exc.value), "the message should list the available profiles"
    with pytest.raises(origami.ProfileError):
        origami.select_many([GemmProblem(64, 64, 64)], "no_such_gpu")


def test_unsupported_dtype_raises_value_error():
    with pytest.raises(ValueError, match="tf32"):
        origami.select(GemmProblem(256, 256, 256, "tf32", "tf32", "fp32"), "mi350x")


def _random_problems(n: int, seed: int) -> list[GemmProblem]:
    rng = np.random.default_rng(seed)
    dtypes = (("bf16", "bf16"), ("fp16", "fp16"), ("fp32", "fp32"), ("fp8_e4m3", "bf16"))
    out = []
    for _ in range(n):
        ab, c = dtypes[rng.integers(len(dtypes))]
        m, n_, k = (int(v) for v in np.exp(rng.uniform(0, np.log(16384), 3)).round().clip(1, 16384))
        out.append(GemmProblem(m, n_, k, ab, ab, c, rng.choice(["N", "T"]).item(), rng.choice(["N", "T"]).item(),
                               batch=int(rng.integers(1, 5)), align_bytes=int(rng.choice([2, 4, 8, 16]))))
    return out


@pytest.mark.parametrize("name", ["h200", "mi300x"])
def test_select_many_equals_select_in_order(name):
    problems = _random_problems(200, seed=11)
    hw = origami.load_profile(name)
    configs = origami.select_many(problems, hw)
    assert len(configs) == len(problems)
    idx, lat, _ = select_many_arrays(problems, hw)
    for j, (p, cfg) in enumerate(zip(problems, configs)):
        best = origami.select(p, hw)
        assert cfg == best.config, (f"problem {j} {p.describe()}: select_many {cfg.short()} "
                                    f"!= select {best.config.short()}")
        assert lat[j] == best.latency_ns
    assert origami.select_many([], hw) == []
    assert origami.select_many(problems[:3], name) == configs[:3]  # a profile name works too


def test_select_is_cached_and_clear_cache_works():
    p = GemmProblem(3000, 1000, 700)
    a = origami.select(p, "h200")
    assert origami.select(p, "h200") is a
    assert origami.select(GemmProblem(3000, 1000, 700), origami.load_profile("h200")) is a  # equal keys hit
    r = origami.rank(p, "h200", 3)
    assert origami.rank(p, "h200", 3)[0] is r[0]
    origami.clear_cache()
    b = origami.select(p, "h200")
    assert b is not a and b == a
    assert origami.rank(p, "h200", 3)[0] is not r[0]


def test_estimate_is_frozen():
    est = origami.select(GemmProblem(512, 512, 512), "h200")
    with pytest.raises(dataclasses.FrozenInstanceError):
        est.latency_ns = 1.0  # type: ignore[misc]
    with pytest.raises(TypeError):
        est.terms["compute"] = 0.0  # type: ignore[index]
    with pytest.raises(dataclasses.FrozenInstanceError):
        est.config.block_m = 16  # type: ignore[misc]
    assert set(est.terms) >= {"compute", "l2", "hbm", "launch"}
    assert all(isinstance(v, float) and v >= 0 for v in est.terms.values())
    assert est.latency_ns > 0 and isinstance(est.bound, str)


def test_profile_may_be_a_name_a_profile_or_a_yaml_path(tmp_path):
    p = GemmProblem(4096, 1000, 7000)
    by_name = origami.select(p, "h200")
    by_profile = origami.select(p, origami.load_profile("h200"))
    copy = tmp_path / "my_h200.yaml"
    shutil.copy(HWPROFILES / "h200.yaml", copy)
    by_path = origami.select(p, str(copy))
    by_pathlike = origami.select(p, copy)
    assert by_name == by_profile == by_path == by_pathlike
    assert origami.rank(p, str(copy), 2) == origami.rank(p, "h200", 2)


def test_rank_returns_k_best_first():
    p = GemmProblem(2048, 2048, 2048)
    ranked = origami.rank(p, "mi300x", 7)
    assert len(ranked) == 7
    assert [e.latency_ns for e in ranked] == sorted(e.latency_ns for e in ranked)
    assert ranked[0] == origami.select(p, "mi300x")
    assert origami.rank(p, "mi300x", 1) == ranked[:1]


def test_warmup_runs():
    origami.warmup()


@pytest.mark.parametrize("entry", ["select", "rank", "explain", "candidates", "predict", "select_many"])
def test_a_problem_that_is_not_a_gemmproblem_is_a_typeerror_naming_it(entry):
    bad = {"m": 1, "n": 2, "k": 3}
    call = {"select": lambda: origami.select(bad, "h200"), "rank": lambda: origami.rank(bad, "h200"),
            "explain": lambda: origami.explain(bad, "h200"), "candidates": lambda: origami.candidates(bad, "h200"),
            "predict": lambda: origami.predict(bad, "h200", origami.TileConfig("dp", 64, 64, 32, 4, 3)),
            "select_many": lambda: origami.select_many([origami.GemmProblem(8, 8, 8), bad], "h200")}[entry]
    with pytest.raises(TypeError, match=r"problem: expected an origami.GemmProblem, got dict"):
        call()

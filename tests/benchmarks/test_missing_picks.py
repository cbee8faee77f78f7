"""benchmarks/missing_picks.py (CPU): the job it writes re-times each missing pick together with the
shape's timed configs, and --apply swaps exactly those shapes' rows into the original file."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks import missing_picks as mp  # noqa: E402
from benchmarks.sweep import read_rows  # noqa: E402
from origami.fit import read_sweep  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
GRID = ROOT / "benchmarks" / "data" / "h200" / "grid.csv"
LLM = ROOT / "benchmarks" / "data" / "h200" / "llm.csv"


def test_job_rows_hold_each_pick_and_the_shapes_timed_configs(tmp_path, monkeypatch):
    # a copy of grid.csv with the shipped pick's rows of three shapes taken out: exactly those three
    # picks are missing, and the job re-times each with every config its shape still has
    import origami
    from benchmarks.sweep import CONFIG_COLS, cell

    data_dir = tmp_path / "benchmarks" / "data"
    (data_dir / "h200").mkdir(parents=True)
    copy = data_dir / "h200" / "grid.csv"
    monkeypatch.setattr(mp, "ROOT", tmp_path)
    full = read_sweep(GRID)
    dropped = {}
    for meas in full[:3]:
        pick = origami.select(meas.problem, "h200").config
        dropped[meas.problem] = {c: cell(getattr(pick, c)) for c in CONFIG_COLS}
    lines = GRID.read_text().splitlines(keepends=True)
    rows = read_rows(GRID)
    body = [ln for ln in lines if not ln.startswith("#")]
    keep = [body[0]] + [ln for ln, r in zip(body[1:], rows) if not any(
        (int(r["m"]), int(r["n"]), int(r["k"])) == (p.m, p.n, p.k) and all(r[c] == v for c, v in cfg.items())
        for p, cfg in dropped.items())]
    assert len(keep) == len(body) - 3, "each of the three picks was timed once in grid.csv"
    copy.write_text("".join(ln for ln in lines if ln.startswith("#")) + "".join(keep))

    data, miss = mp.missing(copy, "h200")
    assert {p for p, _ in miss} == set(dropped)
    rows = mp.job_rows(copy, data, miss)
    timed = {m.problem: len(m.configs) for m in data}
    assert len(rows) == sum(timed[p] + 1 for p, _ in miss)
    assert {r["out"] for r in rows} == {"benchmarks/data/h200_repick/grid.csv"}
    for prob, pick in miss:
        mine = [r for r in rows if (int(r["m"]), int(r["n"]), int(r["k"])) == (prob.m, prob.n, prob.k)]
        assert {c: mine[0][c] for c in CONFIG_COLS} == dropped[prob]
        assert len(mine) == timed[prob] + 1 and mine[0]["kind"] == pick.kind.value


def _data_dir(tmp_path, monkeypatch, folder: str = "repick"):
    """A data tree holding a copy of llm.csv and an empty repick (or lean) folder, which missing_picks reads:
    (the repick file to write, the copied original, the original's rows)."""
    data_dir = tmp_path / "data"
    (data_dir / "h200").mkdir(parents=True)
    (data_dir / f"h200_{folder}").mkdir()
    orig = data_dir / "h200" / "llm.csv"
    orig.write_text(LLM.read_text())
    monkeypatch.setattr(mp, "DATA", data_dir)
    monkeypatch.setattr(mp, "ROOT", tmp_path)
    return data_dir / f"h200_{folder}" / "llm.csv", orig, read_rows(LLM)


def _first_shape_repick(rows: list[dict]) -> tuple[dict, str]:
    """(the first row, a repick file's text re-timing every config of that row's shape at 9.0 ms)."""
    first = rows[0]
    shape = [r for r in rows if all(r[c] == first[c] for c in ("m", "n", "k"))]
    return first, "# git_sha=abc\n" + ",".join(shape[0]) + "\n" + "".join(
        ",".join({**r, "median_ms": "9.0"}.values()) + "\n" for r in shape)


def test_apply_replaces_only_the_repicked_shapes(tmp_path, monkeypatch):
    repick, orig, rows = _data_dir(tmp_path, monkeypatch)
    first, rep = _first_shape_repick(rows)
    repick.write_text(rep)
    done = mp.apply("h200")
    assert len(done) == 1 and "1 shapes replaced" in done[0]
    after = read_rows(orig)
    assert len(after) == len(rows)
    assert {r["median_ms"] for r in after if r["m"] == first["m"] and r["n"] == first["n"] and r["k"] == first["k"]} == {"9.0"}
    assert len(read_sweep(orig)) == len(read_sweep(LLM)) and "# repick" in orig.read_text()


def test_apply_leaves_a_shape_the_repick_did_not_finish_out_and_keeps_it_for_the_resume(tmp_path, monkeypatch):
    """A repick cut by its budget: one shape fully re-timed, the next only in part. The first is merged; the
    second keeps every row the original had (merging it would drop the oracle's configs the cut run never
    reached) and stays, alone, in the repick file for the resumed job; once finished, it merges too."""
    repick, orig, rows = _data_dir(tmp_path, monkeypatch)
    keys = list(dict.fromkeys((r["m"], r["n"], r["k"]) for r in rows))
    done_shape = [r for r in rows if (r["m"], r["n"], r["k"]) == keys[0]]
    cut_shape = [r for r in rows if (r["m"], r["n"], r["k"]) == keys[1]]
    assert len(cut_shape) > 2
    head = "# git_sha=abc\n" + ",".join(done_shape[0]) + "\n"
    body = "".join(",".join({**r, "median_ms": "9.0"}.values()) + "\n" for r in done_shape + cut_shape[:2])
    repick.write_text(head + body)
    done = mp.apply("h200")
    assert len(done) == 1 and "1 shapes replaced" in done[0] and "1 shapes incomplete" in done[0]
    after = read_rows(orig)
    assert len(after) == len(rows)
    by_shape = lambda rs, k: [r for r in rs if (r["m"], r["n"], r["k"]) == k]  # noqa: E731
    assert {r["median_ms"] for r in by_shape(after, keys[0])} == {"9.0"}
    assert [r["median_ms"] for r in by_shape(after, keys[1])] == [r["median_ms"] for r in cut_shape]
    left = read_rows(repick)
    assert {(r["m"], r["n"], r["k"]) for r in left} == {keys[1]} and len(left) == 2
    assert repick.read_text().startswith("# git_sha=abc")
    # the resumed run finishes the shape: the next apply merges it
    repick.write_text(head + "".join(",".join({**r, "median_ms": "7.0"}.values()) + "\n" for r in cut_shape))
    done = mp.apply("h200")
    assert "1 shapes replaced" in done[0] and "incomplete" not in done[0]
    assert {r["median_ms"] for r in by_shape(read_rows(orig), keys[1])} == {"7.0"}


def test_apply_removes_a_repick_merged_whole_and_a_second_apply_writes_nothing(tmp_path, monkeypatch):
    """A repick file merged whole is removed, so --apply twice cannot append its provenance and rows twice; a copy of
    one the original already holds (merged before that rule) is removed without touching the original."""
    repick, orig, rows = _data_dir(tmp_path, monkeypatch)
    _, rep = _first_shape_repick(rows)
    repick.write_text(rep)
    before = orig.read_text().count("# repick")
    assert "1 shapes replaced" in mp.apply("h200")[0]
    merged = orig.read_text()
    assert not repick.exists() and merged.count("# repick") == before + 1
    assert mp.apply("h200") == [] and orig.read_text() == merged
    repick.write_text(rep)  # the same file again, as a tree that kept it would hold
    done = mp.apply("h200")
    assert len(done) == 1 and "already holds" in done[0]
    assert orig.read_text() == merged and not repick.exists()


@pytest.mark.parametrize("cut", ["short", "schema"])
def test_apply_refuses_a_cut_or_foreign_repick_file_and_writes_nothing(tmp_path, monkeypatch, cut):
    repick, orig, rows = _data_dir(tmp_path, monkeypatch)
    cols = list(rows[0])
    rep = "# git_sha=abc\n" + ",".join(cols) + "\n" + ",".join({**rows[0], "median_ms": "9.0"}.values()) + "\n"
    rep += ",".join(list(rows[1].values())[: cols.index("median_ms")]) + ",0.0\n"  # a killed run's last row
    if cut == "schema":
        rep = "# git_sha=abc\nshape,ms\n16x16x16,0.1\n"
    repick.write_text(rep)
    with pytest.raises(SystemExit, match=r"llm\.csv.*(data row 2|not a sweep CSV)"):
        mp.apply("h200")
    assert orig.read_text() == LLM.read_text()


def test_a_variant_adds_its_own_untimed_picks_and_a_bad_one_names_itself():
    # llm.csv: every pick of the shipped h200 is timed; the fitted-but-off split-K range term moves some
    # of its picks to configs the sweep never timed (benchmarks/splitk_eval.py): the job must hold those
    base = mp.missing(LLM, "h200")[1]
    (variant,) = mp.variant_profiles("h200", ["splitk_range_reads=1"])
    data, both = mp.missing(LLM, "h200", [variant])
    assert set(base) <= set(both) and len(both) > len(base)
    only_variant = mp.missing(LLM, variant)[1]
    assert set(both) == set(base) | set(only_variant)
    with pytest.raises(SystemExit, match="no_such_term"):
        mp.variant_profiles("h200", ["no_such_term=1"])
    with pytest.raises(SystemExit, match="KEY=VALUE"):
        mp.variant_profiles("h200", ["splitk_range_reads"])


def test_cold_files_get_their_own_job(tmp_path):
    warm, cold = tmp_path / "warm.csv", tmp_path / "cold.csv"
    assert mp.main(["--variant", "splitk_range_reads=1", "-o", str(warm), "--cold-output", str(cold)]) == 0
    outs_warm = {r["out"] for r in read_rows(warm)}
    outs_cold = {r["out"] for r in read_rows(cold)}
    assert outs_cold and all("_cold_repick/" in o for o in outs_cold)
    assert outs_warm and not any("_cold" in o for o in outs_warm)
    rows = read_rows(cold)
    assert len({tuple(r.items()) for r in rows}) == len(rows)  # each (shape, config) once


def test_a_lean_job_holds_each_pick_and_its_shapes_fastest_configs_fastest_first(tmp_path, monkeypatch):
    import origami
    from benchmarks.sweep import CONFIG_COLS, cell

    data_dir = tmp_path / "benchmarks" / "data"
    (data_dir / "h200").mkdir(parents=True)
    copy = data_dir / "h200" / "llm.csv"
    copy.write_text(LLM.read_text())
    monkeypatch.setattr(mp, "ROOT", tmp_path)
    data = read_sweep(copy)
    variant = mp.variant_profiles("h200", ["mn_major_tile_cost=0,k_iter_overhead_ns=40"])[0]
    _, miss = mp.missing(copy, variant)
    miss = miss or [(data[0].problem, origami.select(data[0].problem, "h200").config)]
    rows = mp.job_rows(copy, data, miss, lean=3)
    assert {r["out"] for r in rows} == {"benchmarks/data/h200_lean/llm.csv"}
    by = {m.problem: m for m in data}
    for prob, pick in miss:
        mine = [r for r in rows if (int(r["m"]), int(r["n"]), int(r["k"])) == (prob.m, prob.n, prob.k)]
        fastest = [c for _, c in sorted(zip(by[prob].ms, by[prob].configs), key=lambda t: t[0])[:3]]
        want = list(dict.fromkeys((pick, *fastest)))
        assert [{c: r[c] for c in CONFIG_COLS} for r in mine] == [{c: cell(getattr(x, c)) for c in CONFIG_COLS}
                                                                   for x in want]


def test_apply_lean_replaces_the_retimed_rows_adds_the_pick_and_keeps_the_rest(tmp_path, monkeypatch):
    """One shape re-timed lean (its 2 fastest configs, plus a new config standing in for the pick) is merged row by
    row; a second shape whose rows skip its fastest config is left in the lean file; nothing else changes."""
    lean, orig, rows = _data_dir(tmp_path, monkeypatch, "lean")
    keys = list(dict.fromkeys((r["m"], r["n"], r["k"]) for r in rows))
    one = sorted((r for r in rows if (r["m"], r["n"], r["k"]) == keys[0] and r["median_ms"]),
                 key=lambda r: float(r["median_ms"]))
    two = sorted((r for r in rows if (r["m"], r["n"], r["k"]) == keys[1] and r["median_ms"]),
                 key=lambda r: float(r["median_ms"]))
    pick = {**one[-1], "block_k": "999", "median_ms": "0.5"}  # a config the original does not hold
    body = [pick, {**one[0], "median_ms": "7.0"}, {**one[1], "median_ms": "8.0"},
            {**two[1], "median_ms": "9.0"}]  # shape two re-times its second-fastest only: not merged
    lean.write_text("# git_sha=abc\n" + ",".join(rows[0]) + "\n" + "".join(",".join(r.values()) + "\n" for r in body))
    done = mp.apply_lean("h200")
    assert len(done) == 1 and "1 shapes merged" in done[0] and "1 shapes not merged" in done[0], done
    after = read_rows(orig)
    assert len(after) == len(rows) + 1
    from benchmarks.sweep import CONFIG_COLS

    mine = [r for r in after if (r["m"], r["n"], r["k"]) == keys[0]]
    cfg = lambda r: tuple(r[c] for c in CONFIG_COLS)  # noqa: E731
    times = {cfg(r): r["median_ms"] for r in mine}
    assert len(times) == len(mine), "one row per config"
    assert times[cfg(one[0])] == "7.0" and times[cfg(one[1])] == "8.0" and times[cfg(pick)] == "0.5"
    assert all(times[cfg(r)] == r["median_ms"] for r in one[2:])
    untouched = [r for r in after if (r["m"], r["n"], r["k"]) != keys[0]]
    assert untouched == [r for r in rows if (r["m"], r["n"], r["k"]) != keys[0]]
    assert "# lean repick" in orig.read_text()
    left = read_rows(lean)
    assert [(r["m"], r["n"], r["k"]) for r in left] == [keys[1]]


def test_apply_lean_counts_a_shape_whose_oracle_stays_from_an_earlier_run(tmp_path, monkeypatch):
    lean, orig, rows = _data_dir(tmp_path, monkeypatch, "lean")
    key = (rows[0]["m"], rows[0]["n"], rows[0]["k"])
    fast = sorted((r for r in rows if (r["m"], r["n"], r["k"]) == key and r["median_ms"]),
                  key=lambda r: float(r["median_ms"]))
    slow = str(float(fast[1]["median_ms"]) * 10)  # the fastest re-timed far slower than the second-fastest's old time
    lean.write_text("# git_sha=abc\n" + ",".join(rows[0]) + "\n" + ",".join({**fast[0], "median_ms": slow}.values())
                    + "\n")
    done = mp.apply_lean("h200")
    assert "1 shapes merged" in done[0] and "1 of them keep a faster row from an earlier run" in done[0]
    assert not lean.exists()

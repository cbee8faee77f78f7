"""benchmarks/decode_probe.py: the probe's tiles, its job file as sweep.py reads it, the best-tile table, the merge."""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import decode_probe  # noqa: E402
import sweep  # noqa: E402

import origami  # noqa: E402
from origami.problem import GemmProblem, Layout  # noqa: E402
from origami.space import violations  # noqa: E402

HW = origami.load_profile("h100")
P = GemmProblem(1, 2048, 2048, b_layout=Layout.T)


def test_probe_tiles_are_outside_the_space_and_admitted_by_every_predicate():
    cfgs = decode_probe.probe_configs(P, HW)
    space = set(origami.candidates(P, HW))
    assert cfgs and not space & set(cfgs)
    assert all(not violations(c, P, HW) for c in cfgs)
    assert {c.block_n for c in cfgs} == {16, 32, 64} and {c.block_k for c in cfgs} == {128, 256, 512}
    assert {c.kind.value for c in cfgs} == {"dp", "splitk"}


def test_the_job_file_is_what_sweep_rows_times(tmp_path):
    jobs = tmp_path / "jobs.csv"
    assert decode_probe.main(["--shapes", str(ROOT / "benchmarks/shapes/decode.yaml"), "--out-jobs", str(jobs)]) == 0
    ((shapes, out, configs_of),) = sweep.row_jobs(jobs)
    assert out == ROOT / "benchmarks/data/h100_probe/decode.csv" and len(shapes) == 30
    p = next(s for s in shapes if (s.m, s.n, s.k) == (1, 2048, 2048))
    assert p == P and [c for c, _ in configs_of(p, HW)] == decode_probe.probe_configs(P, HW)


def _sweep(path: Path, rows: list[tuple]) -> None:
    """A sweep CSV of ``P`` with (kind, block_n, block_k, median_ms) rows."""
    cols = [*sweep.PROBLEM_COLS, *sweep.CONFIG_COLS, "median_ms", "error", "predicted_ns"]
    with path.open("w", newline="") as f:
        f.write("# gpu=test\n")
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        for kind, bn, bk, ms in rows:
            w.writerow(dict(m=1, n=2048, k=2048, batch=1, a_dtype="bf16", b_dtype="bf16", c_dtype="bf16", a_layout="N",
                            b_layout="T", align_bytes=16, kind=kind, block_m=16, block_n=bn, block_k=bk, num_warps=4,
                            num_stages=4, group_m=1, num_chiplets=1, chunk=1, grid=0,
                            split_k=2 if kind == "splitk" else 1, median_ms=ms, error="" if ms else "failed"))


def test_best_table_keeps_each_shapes_fastest_row_over_every_file_and_merged_keeps_them_all(tmp_path):
    from tritonblas import tables

    a, b = tmp_path / "space.csv", tmp_path / "probe.csv"
    _sweep(a, [("dp", 64, 128, 0.0090), ("splitk", 64, 128, 0.0081)])
    _sweep(b, [("dp", 32, 256, 0.0078), ("dp", 16, 256, "")])  # a failed row never wins
    t = tmp_path / "best.json"
    m = tmp_path / "merged.csv"
    assert decode_probe.main(["--best-table", str(t), "--merged", str(m), str(a), str(b)]) == 0
    best = tables.load_table(t, strict=True).entries[P]
    assert (best.kind.value, best.block_n, best.block_k) == ("dp", 32, 256)
    assert len(sweep.read_rows(m)) == 4 and m.read_text().startswith("# gpu=test\n")
    _sweep(b, [("dp", 32, 256, 0.0095)])
    decode_probe.main(["--best-table", str(t), str(a), str(b)])
    assert tables.load_table(t, strict=True).entries[P].kind.value == "splitk"


def test_rank_scores_the_models_pick_among_the_recorded_rows_without_and_with_the_probes(tmp_path, capsys):
    """--rank: the predicted-fastest of each file set's rows, scored against the best of both files (times chosen
    so that each outcome of the model's preference gives a different number)."""
    from origami.fit import read_sweep
    from origami.select import predict

    a, b = tmp_path / "space.csv", tmp_path / "probe.csv"
    _sweep(a, [("dp", 64, 128, 0.0100), ("splitk", 64, 128, 0.0080)])
    _sweep(b, [("dp", 32, 256, 0.0050)])
    (sa,), (sab,) = read_sweep(a), read_sweep([a, b])  # (a one-row shape is no Measured alone: read together)

    def picked_ms(m):
        return min(zip(m.configs, m.ms), key=lambda r: predict(P, HW, r[0]).latency_ns)[1]

    own, both = picked_ms(sa), picked_ms(sab)
    assert len(sab.configs) == 3
    assert decode_probe.main(["--rank", "--profile", "h100", str(a), str(b)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "1 shapes" in lines[0]
    assert f"geomean {0.0050 / own:.3f}" in lines[1] and f"geomean {0.0050 / both:.3f}" in lines[2]
    with pytest.raises(SystemExit):
        decode_probe.main(["--rank", str(a)])  # one file


def test_bad_invocations_exit_naming_the_option(tmp_path):
    with pytest.raises(SystemExit):
        decode_probe.main(["--best-table", str(tmp_path / "t.json")])  # no sweep files
    with pytest.raises(SystemExit):
        decode_probe.main([str(tmp_path / "x.csv")])  # sweep files without --best-table/--merged
    empty = tmp_path / "empty.csv"
    _sweep(empty, [])
    with pytest.raises(SystemExit, match="no timed row"):
        decode_probe.main(["--best-table", str(tmp_path / "t.json"), str(empty)])


def test_the_committed_h100_decode_table_serves_the_shipped_h100_profile():
    """docs/dropin.md points H100 users at benchmarks/results/decode_best_h100.json: it must load strictly,
    for the shipped h100.yaml (a profile edit makes it stale: regenerate it or change the docs), with an entry for
    every decode shape, each a config the predicates admit."""
    from tritonblas import tables
    from origami.shapes import load_shapes

    import json

    path = ROOT / "benchmarks/results/decode_best_h100.json"
    made_with, here = json.loads(path.read_text())["triton_version"], tables.installed_triton()
    if here is not None and made_with.split(".")[:2] != here.split(".")[:2]:  # another Triton: stale, as documented
        with pytest.raises(tables.TableError, match="stale"):
            tables.load_table(path, strict=True)
        return
    table = tables.load_table(path, strict=True)
    assert (table.profile_name, table.profile_hash) == ("h100", HW.content_hash)
    shapes = load_shapes(ROOT / "benchmarks/shapes/decode.yaml")
    assert set(table.entries) == set(shapes)
    assert all(not violations(c, p, HW) for p, c in table.entries.items())
    tables.set_table(table)
    try:
        assert all(tables.lookup(p, HW) == table.entries[p] for p in shapes)
    finally:
        tables.set_table(None)

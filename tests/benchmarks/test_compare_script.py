"""benchmarks/compare.py and benchmarks/plots.py run end to end on CPU (kernels under the interpreter,
perf_counter timing), so the H200 run does not trip on the scripts themselves."""

from __future__ import annotations

import csv
import math
import os
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks import compare  # noqa: E402
from origami.config import TileConfig  # noqa: E402

SHAPES = "- {m: 33, n: 17, k: 40}\n- {m: 64, n: 48, k: 96, a_layout: T}\n"
SWEEP_COLS = (compare.PROBLEM_COLS + [f.name for f in fields(TileConfig)] + ["median_ms", "error", "predicted_ns"])


def _sweep_fixture(path: Path) -> None:
    """A two-config 'sweep' of the first tiny shape (the contract's columns, DESIGN.md §8)."""
    rows = []
    for cfg, ms in ((TileConfig("dp", 32, 64, 32, 4, 3), 0.010), (TileConfig("dp", 64, 64, 64, 4, 3), 0.012)):
        r = dict(m=33, n=17, k=40, batch=1, a_dtype="bf16", b_dtype="bf16", c_dtype="bf16", a_layout="N",
                 b_layout="N", median_ms=ms, error="", predicted_ns=1000.0)
        r.update({k: ("" if v is None else v) for k, v in cfg.to_dict().items()})
        rows.append(r)
    with path.open("w", newline="") as f:
        f.write("# git_sha=fixture\n")
        w = csv.DictWriter(f, fieldnames=SWEEP_COLS)
        w.writeheader()
        w.writerows(rows)


def _run(args, tmp_path):
    env = dict(os.environ, TRITON_INTERPRET="1", GIT_SHA="test-sha", CUDA_VISIBLE_DEVICES="")  # CPU, also on a GPU host
    env.pop("TRITONBLAS_TABLE", None)
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, timeout=120, cwd=tmp_path)


@pytest.mark.timeout(180)
def test_compare_runs_on_cpu_and_writes_the_contract_columns(tmp_path):
    (tmp_path / "tiny.yaml").write_text(SHAPES)
    _sweep_fixture(tmp_path / "sweep.csv")
    out = tmp_path / "compare_tiny.csv"
    r = _run([str(ROOT / "benchmarks" / "compare.py"), "--shapes", str(tmp_path / "tiny.yaml"), "--sweep",
              str(tmp_path / "sweep.csv"), "--out", str(out), "--cpu-reps", "1", "--select-reps", "2",
              "--nvmmh-k", "2"], tmp_path)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    assert "summary over 2 shapes" in r.stdout and "geomean" in r.stdout
    with out.open() as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == compare.COLUMNS
    assert [(r["m"], r["n"], r["k"], r["a_layout"]) for r in rows] == [("33", "17", "40", "N"), ("64", "48", "96", "T")]
    for row in rows:
        for col in ("ours_ms", "torch_ms", "predicted_ms", "select_us", "ours_tflops", "ratio_to_torch"):
            v = float(row[col])
            assert math.isfinite(v) and v > 0, (col, row[col])
        assert float(row["rel_err_vs_torch"]) < 2e-2
        assert row["timer"] == "cpu" and row["git_sha"] == "test-sha" and row["our_config"] not in ("", "torch fallback")
    first = rows[0]  # the shape of the sweep fixture has an oracle, the other one none
    assert first["oracle_config"] == "dp 32x64x32 w4 s3 g8" and float(first["oracle_sweep_ms"]) == 0.01
    assert float(first["oracle_ms"]) > 0 and float(first["pct_of_oracle"]) > 0
    assert rows[1]["oracle_ms"] == "" and rows[1]["pct_of_oracle"] == ""
    from benchmarks import nvmmh

    if nvmmh.available():
        assert all(float(row["nvmmh1_ms"]) > 0 and float(row["nvmmh8_ms"]) <= float(row["nvmmh1_ms"]) for row in rows)
    else:
        assert "nvMMH skipped" in r.stdout and all(row["nvmmh1_ms"] == "" for row in rows)

    # resumable: a second run finds both shapes done and only prints the summary
    r2 = _run([str(ROOT / "benchmarks" / "compare.py"), "--shapes", str(tmp_path / "tiny.yaml"), "--sweep", "none",
               "--out", str(out), "--no-nvmmh"], tmp_path)
    assert r2.returncode == 0, r2.stderr[-3000:]
    assert "[1/2]" not in r2.stdout and "summary over 2 shapes" in r2.stdout


def test_summary_statistics():
    rows = [dict(pct_of_oracle="90", ratio_to_torch="0.5", ours_ms="1", nvmmh1_ms="2", nvmmh8_ms="0.9"),
            dict(pct_of_oracle="100", ratio_to_torch="2", ours_ms="1", nvmmh1_ms="0.5", nvmmh8_ms=""),
            dict(pct_of_oracle="", ratio_to_torch="", ours_ms="1", nvmmh1_ms="", nvmmh8_ms="")]
    s = compare.summarize(rows)
    assert s["oracle_shapes"] == 2 and math.isclose(s["geomean_pct_of_oracle"], math.sqrt(9000))
    assert math.isclose(s["p10_pct_of_oracle"], 91.0) and math.isclose(s["geomean_ratio_to_torch"], 1.0)
    assert s["beats_nvmmh1"] == 0.5 and s["nvmmh1_shapes"] == 2 and s["beats_nvmmh8"] == 0.0
    assert "summary over 3 shapes" in compare.summary_text(s)


FIXTURE = """m,n,k,batch,a_dtype,b_dtype,c_dtype,a_layout,b_layout,align_bytes,dtype,our_config,ours_ms,oracle_ms,torch_ms,nvmmh1_ms,nvmmh8_ms,ours_tflops,pct_of_oracle,ratio_to_torch,predicted_ms
4096,4096,4096,1,bf16,bf16,bf16,N,N,16,bf16,dp 128x256x64 w8 s3 g8,0.20,0.19,0.18,0.25,0.21,687,95,0.9,0.17
16,4096,4096,1,bf16,bf16,bf16,N,N,16,bf16,splitk 16x64x128 w4 s4 g1 split4,0.012,0.011,0.014,0.02,0.013,44.7,91.7,1.17,0.010
1024,1000,7000,1,bf16,bf16,bf16,N,N,16,bf16,dp 128x128x64 w4 s4 g8,0.030,0.030,0.028,,,,100,0.93,0.028
"""


def test_plots_and_summary_from_fixture_csvs(tmp_path):
    pytest.importorskip("matplotlib", reason="matplotlib is an optional extra (pip install 'tritonblas[plots]')")
    (tmp_path / "compare_fixture.csv").write_text(FIXTURE)
    _sweep_fixture(tmp_path / "sweep.csv")
    out_dir = tmp_path / "plots"
    r = _run([str(ROOT / "benchmarks" / "plots.py"), "--compare", str(tmp_path / "compare_fixture.csv"), "--sweep",
              str(tmp_path / "sweep.csv"), "--out-dir", str(out_dir)], tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    for name in ("selection_efficiency_ecdf.png", "ours_vs_torch_ecdf.png", "predicted_vs_measured.png", "roofline.png"):
        png = out_dir / name
        assert png.exists() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000, name
    r = _run([str(ROOT / "benchmarks" / "plots.py"), "summary", "--compare", str(tmp_path / "compare_fixture.csv"),
              "--sweep", str(tmp_path / "sweep.csv")], tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "sweep.csv" in r.stdout and "geomean" in r.stdout and "summary over 3 shapes" in r.stdout


def test_the_gluon_columns_are_summarised_against_the_oracle_and_torch():
    """``--gluon`` rows: the summary's geomeans of oracle_ms / gluon_ms and torch_ms / gluon_ms over
    the shapes that have a Gluon time (rows without one, ineligible shapes, are left out)."""
    rows = [dict(gluon_ms="1.0", oracle_ms="2.0", torch_ms="1.0"), dict(gluon_ms="4.0", oracle_ms="2.0", torch_ms="4.0"),
            dict(gluon_ms="", oracle_ms="1.0", torch_ms="1.0")]
    s = compare.summarize(rows)
    assert s["gluon_shapes"] == 2
    assert abs(s["geomean_oracle_over_gluon"] - 1.0) < 1e-12  # sqrt(2 * 0.5)
    assert abs(s["geomean_torch_over_gluon"] - 1.0) < 1e-12
    assert "Gluon kernel (2 shapes)" in compare.summary_text(s)
    assert "Gluon" not in compare.summary_text(compare.summarize(rows[2:]))


def test_gluon_is_skipped_with_its_reason_where_it_cannot_run():
    import torch

    notes = []
    a, b, out = torch.zeros(256, 128), torch.zeros(128, 256), torch.zeros(256, 256)
    assert compare._gluon_variants(a, b, out, notes) == []
    assert len(notes) == 1 and notes[0].startswith("gluon: ")

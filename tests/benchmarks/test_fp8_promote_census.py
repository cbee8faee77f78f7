"""benchmarks/fp8_promote_census.py (CPU, sm_90 compile only): each mode compiles with the promotion interval it
names (capped at the tile's BLOCK_K, as the launch caps it), ptxas's registers and spills are recorded, the
provenance-headed CSV is written, and bad arguments name themselves."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks import fp8_promote_census as census  # noqa: E402

PTXAS = Path(__import__("triton").__file__).parent / "backends" / "nvidia" / "bin" / "ptxas"


@pytest.mark.timeout(600)
@pytest.mark.skipif(not PTXAS.exists(), reason="Triton's bundled ptxas is missing")
def test_each_mode_compiles_with_its_interval_and_records_ptxas(tmp_path):
    """In a child process, as tests/kernels/test_aot_compile.py runs its compiles: this one's kernels are decorated
    for the interpreter."""
    out = tmp_path / "c.csv"
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["TRITON_CACHE_DIR"] = str(tmp_path / "cache")
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "fp8_promote_census.py"), "--shape", "512", "512",
                        "512", "--top", "1", "--modes", "32", "fast", "--out", str(out)],
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    text = out.read_text()
    assert text.startswith("# git_sha: ")
    rows = list(csv.DictReader(line for line in text.splitlines() if not line.startswith("#")))
    assert [r["mode"] for r in rows] == ["32", "fast"] and rows[0]["config"] == rows[1]["config"]
    assert all(r["error"] == "" for r in rows), rows
    bk = int(rows[0]["config"].split()[1].split("x")[2])
    assert rows[0]["max_imprecise"] == str(min(32, bk)) and rows[1]["max_imprecise"] == ""
    for r in rows:
        assert 0 < int(r["registers"]) <= 255 and int(r["spill_stores"]) >= 0 and int(r["spill_loads"]) >= 0


@pytest.mark.parametrize("argv, says", [(["--modes", "48"], "--modes: 48"), (["--modes", "slow"], "--modes: 'slow'"),
                                        (["--top", "0"], "--top"), (["--shape", "0", "8", "8"], "--shape"),
                                        (["--profile", "no-such-gpu"], "--profile")])
def test_bad_arguments_name_themselves(argv, says, capsys):
    with pytest.raises(SystemExit) as e:
        census.main(argv)
    assert e.value.code == 2 and says in capsys.readouterr().err


def test_the_promoted_spill_table_is_what_the_space_census_gives():
    """origami/promoted_spill.py is ``--table``'s output for the committed space census, which compiled every spill
    group of the fp8 space (none failed): regenerate with `python benchmarks/fp8_promote_census.py --table`."""
    assert census.TABLE.read_text() == census.table_source(), "origami/promoted_spill.py is stale"
    with open(census.SPACE_OUT) as f:
        rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
    assert len(rows) >= 100 and not any(r["error"] for r in rows)
    from origami.space import spill_group
    import origami

    hw = origami.load_profile("h200").replace_model(fp8_promoted_spill_limit=0.0)
    groups = {(r["kind"], int(r["block_m"]), int(r["block_n"]), int(r["block_k"]), int(r["num_warps"])) for r in rows}
    for m, n, k in census.SPACE_PROBES:
        p = origami.GemmProblem(m, n, k, "fp8_e4m3", "fp8_e4m3", "bf16", "N", "T", 1, 16)
        assert {spill_group(c) for c in origami.candidates(p, hw)} <= groups, "the space has groups the census lacks"


def test_table_source_refuses_a_census_without_compiled_rows(tmp_path):
    f = tmp_path / "c.csv"
    f.write_text("# x\n" + ",".join(census.SPACE_FIELDS) + "\n" + "8,8,8,dp,128,128,128,4,dp 128x128x128,128,,,,boom\n")
    with pytest.raises(ValueError, match="no compiled row"):
        census.table_source(f)


@pytest.mark.parametrize("content", [None, "# x\nkind,block_m\n", "# x\nm,n,k\n1,2,3\n"])
def test_table_refuses_a_missing_or_broken_census_by_name_and_writes_nothing(tmp_path, capsys, monkeypatch, content):
    src = tmp_path / "census.csv"
    if content is not None:
        src.write_text(content)
    target = tmp_path / "promoted_spill.py"
    monkeypatch.setattr(census, "TABLE", target)
    with pytest.raises(SystemExit) as e:
        census.main(["--table", "--out", str(src)])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "--table" in err and str(src) in err and "--space" in err
    assert not target.exists()

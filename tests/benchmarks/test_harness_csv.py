"""benchmarks/_harness.write_csv: atomic (a failed write leaves the old file and no temporary),
provenance lines that stay comments, and the rows it was given."""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import _harness  # noqa: E402


def _read(path: Path):
    lines = path.read_text().splitlines()
    comments = [ln for ln in lines if ln.startswith("#")]
    return comments, list(csv.DictReader(ln for ln in lines if not ln.startswith("#")))


def test_rows_and_provenance_round_trip(tmp_path):
    out = tmp_path / "r.csv"
    _harness.write_csv(out, [{"a": 1, "b": 0.123456789}, {"a": 2}], ["a", "b"],
                       {"git_sha": "abc", "note": "two\nlines\r\nhere"}, digits=4)
    comments, rows = _read(out)
    assert comments == ["# git_sha: abc", "# note: two lines here"]  # a newline in a value stays a comment
    assert rows == [{"a": "1", "b": "0.1235"}, {"a": "2", "b": ""}]
    assert not list(tmp_path.glob("*.tmp"))


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path):
    out = tmp_path / "r.csv"
    _harness.write_csv(out, [{"a": 1}], ["a"], {"git_sha": "old"})
    before = out.read_bytes()

    class Bad(dict):
        def get(self, *args):
            raise RuntimeError("row generator failed half-way")

    with pytest.raises(RuntimeError, match="half-way"):
        _harness.write_csv(out, [{"a": 5}, Bad(a=6)], ["a"], {"git_sha": "new"})
    assert out.read_bytes() == before
    assert not list(tmp_path.glob("*.tmp")), "the temporary file was left behind"

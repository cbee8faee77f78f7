"""Floors never go down while their data is unchanged (DESIGN.md §8), across every committed version
of benchmarks/data/floors.yaml and the working copy (CPU, CI).

Reads the file's versions with ``git log --follow`` / ``git show``; CI's clone has full history. A
missing git, a checkout that is not a repository, or a shallow clone is a failure naming the fix,
never a pass: without history the rule cannot be checked.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.selection import DATA, FLOORS_FILE, file_sha256, load_floors, pooled_sha256  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
REL = FLOORS_FILE.relative_to(ROOT).as_posix()


def lowered(older: dict, newer: dict, current_sha=None) -> list[str]:
    """What ``newer`` lowered against ``older`` on data whose sha256 both record the same: a floor
    down, min_shapes down, max_missing up, or an entry dropped while its data file (as
    ``current_sha(section, name)`` hashes it now) is still what ``older`` recorded."""
    out = []
    for sec, entries in older.items():
        for name, old in entries.items():
            new = newer.get(sec, {}).get(name)
            if new is None:
                if current_sha is not None and current_sha(sec, name, old) == old["sha256"]:
                    out.append(f"{sec}.{name}: entry dropped while its data is unchanged")
                continue
            if new["sha256"] != old["sha256"]:
                continue  # the data changed: floors may be re-set
            for key in ("geomean", "p10", "min_shapes"):
                if new[key] < old[key]:
                    out.append(f"{sec}.{name}: {key} {old[key]} -> {new[key]} with unchanged data")
            if "max_missing" in old and new["max_missing"] > old["max_missing"]:
                out.append(f"{sec}.{name}: max_missing {old['max_missing']} -> {new['max_missing']} with unchanged data")
    return out


def _current_sha(sec: str, name: str, entry: dict):
    if sec == "pooled":
        paths = [DATA / f for f in entry["files"]]
        return pooled_sha256(paths) if all(p.exists() for p in paths) else None
    return file_sha256(DATA / name) if (DATA / name).exists() else None


def _git(*args: str) -> str:
    r = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=60)
    if r.returncode:
        pytest.fail(f"git {' '.join(args)} failed ({r.stderr.strip()}): the floors-history guard needs a git clone "
                    "with full history")
    return r.stdout


def versions() -> list[tuple[str, str]]:
    """(label, text) of every committed version of the floors file, oldest first, then the working copy."""
    if shutil.which("git") is None:
        pytest.fail("git is not installed: the floors-history guard needs it (and a full clone) to compare versions")
    if _git("rev-parse", "--is-inside-work-tree").strip() != "true":
        pytest.fail(f"{ROOT} is not a git work tree: the floors-history guard needs a full clone")
    if _git("rev-parse", "--is-shallow-repository").strip() == "true":
        pytest.fail("shallow clone: the floors-history guard needs the full history (git fetch --unshallow)")
    out = []
    for chunk in reversed(_git("log", "--follow", "--format=@@%H", "--name-only", "--", REL).split("@@")):
        parts = chunk.split()
        if len(parts) >= 2:  # a commit, then the file's path in it (renames followed)
            sha, path = parts[0], parts[-1]
            out.append((f"{sha[:10]}:{path}", _git("show", f"{sha}:{path}")))
    out.append(("working copy", FLOORS_FILE.read_text()))
    return out


def test_no_floor_went_down_on_unchanged_data():
    vs = versions()
    problems = []
    for (la, a), (lb, b) in zip(vs, vs[1:]):
        problems += [f"{la} -> {lb}: {p}" for p in lowered(load_floors(a, la), load_floors(b, lb), _current_sha)]
    assert not problems, "floors lowered while their data did not change:\n" + "\n".join(problems)


def test_floors_file_is_committed():
    """The history check compares against committed versions: the file must be among them."""
    assert any(label != "working copy" for label, _ in versions()), f"{REL} has no committed version"


def test_lowered_flags_what_it_must_and_only_that():
    e = {"geomean": 0.9, "p10": 0.8, "min_shapes": 10, "max_missing": 2, "sha256": "a"}
    older = {"training": {"x.csv": e}, "pooled": {}, "heldout": {}}
    same = lambda **kw: {"training": {"x.csv": {**e, **kw}}, "pooled": {}, "heldout": {}}  # noqa: E731
    assert lowered(older, same()) == []
    assert lowered(older, same(geomean=0.95, p10=0.85, min_shapes=12, max_missing=0)) == []
    for kw in (dict(geomean=0.89), dict(p10=0.79), dict(min_shapes=9), dict(max_missing=3)):
        assert len(lowered(older, same(**kw))) == 1, kw
    assert lowered(older, same(geomean=0.5, p10=0.1, sha256="b")) == []  # new data: floors may be re-set
    gone = {"training": {}, "pooled": {}, "heldout": {}}
    assert lowered(older, gone, lambda *a: "a") and not lowered(older, gone, lambda *a: "b")

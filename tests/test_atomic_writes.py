"""One home for writing a file atomically (RELIABILITY.md: nothing a user wrote is ever half-overwritten):
``tritonblas.tables.AtomicFile`` (temp file in the destination's directory, fsync, ``os.replace``, fsync of the
directory, the temp file removed on failure). Every other module of origami/, tritonblas/ and benchmarks/ publishes
through it: a hand-rolled temp-file rename (``os.replace``, ``os.rename``, ``Path.replace`` / ``Path.rename``)
anywhere else fails this test. Read from the source (ast)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HOME = ROOT / "tritonblas" / "tables.py"


def renames(source: str) -> list[int]:
    """Lines of ``os.replace(...)`` / ``os.rename(...)`` calls and of ``x.replace(target)`` / ``x.rename(target)``
    with one argument (``Path``'s; ``str.replace`` takes two)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr not in ("replace", "rename"):
            continue
        on_os = isinstance(node.func.value, ast.Name) and node.func.value.id == "os"
        if on_os or (len(node.args) == 1 and not node.keywords):
            found.append(node.lineno)
    return found


def test_the_detector_finds_renames():
    src = ("import os\nos.replace(a, b)\np.with_suffix('.tmp').replace(path)\ns.replace('\\n', ' ')\n"
           "os.rename(a, b)\nt.rename(u)\nx.replace(old, new, 1)\n")
    assert renames(src) == [2, 3, 5, 6]


def test_only_tables_renames_files():
    offenders = []
    for pkg in ("origami", "tritonblas", "benchmarks"):
        for f in sorted((ROOT / pkg).rglob("*.py")):
            if f == HOME:
                continue
            offenders += [f"{f.relative_to(ROOT)}:{line}" for line in renames(f.read_text())]
    assert not offenders, "write through tritonblas.tables.AtomicFile instead: " + ", ".join(offenders)

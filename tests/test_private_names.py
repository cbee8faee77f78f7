"""A module's private names stay inside it (issue 21's target: at most 3 reads of another module's
``_name`` in origami/ and tritonblas/, each justified). Read from the source (ast): ``from X import _y``
and ``m._y`` where ``m`` is a module of the two packages bound by an import, at any depth."""

from __future__ import annotations

import ast
from pathlib import Path

from test_import_graph import PACKAGES, ROOT

# (reader, module read, name): why the read is needed. Empty: every cross-module read goes through
# a public name (plan.workspace, _device.device_properties, tables.GENERATION, ...).
ALLOWED: dict[tuple[str, str, str], str] = {}
MAX_ALLOWED = 3


def _modules() -> dict[str, Path]:
    return {(pkg.replace("/", ".") + "." + f.stem).replace(".__init__", ""): f
            for pkg in PACKAGES for f in (ROOT / pkg).glob("*.py")}


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_reads(source: str, me: str, modules) -> list[tuple[str, str, int]]:
    """(module read, private name, line) for every read of another module's private name in ``source``."""
    tree = ast.parse(source)
    bound: dict[str, str] = {}  # local name → module it is bound to
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name in modules:
                    bound[a.asname or a.name] = a.name
                    bound.setdefault(a.name.split(".")[0], a.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0 \
                and node.module.split(".")[0] in ("origami", "tritonblas"):
            for a in node.names:
                sub = f"{node.module}.{a.name}"
                if sub in modules:
                    bound[a.asname or a.name] = sub
                elif _private(a.name) and node.module != me:
                    found.append((node.module, a.name, node.lineno))
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and _private(node.attr)):
            continue
        parts, v = [], node.value
        while isinstance(v, ast.Attribute):
            parts.append(v.attr)
            v = v.value
        if not isinstance(v, ast.Name) or v.id not in bound:
            continue
        target = ".".join([bound[v.id], *reversed(parts)])
        if target in modules and target != me:
            found.append((target, node.attr, node.lineno))
    return found


def _all_reads() -> list[tuple[str, str, str, int]]:
    modules = _modules()
    return [(me, target, name, line) for me, f in sorted(modules.items())
            for target, name, line in private_reads(f.read_text(), me, modules)]


def test_the_detector_finds_private_reads():
    modules = {"tritonblas.plan": None, "tritonblas._device": None, "tritonblas.dispatch": None}
    src = ("from tritonblas import plan as _plan, _device\nimport tritonblas.plan\n"
           "from tritonblas.plan import _order, workspace\n"
           "def f():\n    _plan._workspace(); _device.CACHE; _device._CACHE; tritonblas.plan._x; self._y\n")
    got = sorted((t, n) for t, n, _ in private_reads(src, "tritonblas.dispatch", modules))
    assert got == [("tritonblas._device", "_CACHE"), ("tritonblas.plan", "_order"),
                   ("tritonblas.plan", "_workspace"), ("tritonblas.plan", "_x")]
    assert not private_reads("from tritonblas.plan import _order\n_order(1)\n", "tritonblas.plan", modules)


def test_private_reads_stay_within_the_allow_list():
    reads = _all_reads()
    assert len(ALLOWED) <= MAX_ALLOWED and all(ALLOWED.values())
    extra = [f"{me}:{line} reads {target}.{name}" for me, target, name, line in reads
             if (me, target, name) not in ALLOWED]
    assert not extra, "make the name public (documented) or move the code:\n" + "\n".join(extra)
    assert len(reads) <= MAX_ALLOWED, reads

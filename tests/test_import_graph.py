"""No import cycles in origami/ and tritonblas/, counting function-level imports (issue 21's target).
Read from the source (ast), so a lazy import inside a function counts like a top-level one."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("origami", "tritonblas", "tritonblas/kernels")


def _graph() -> dict[str, set[str]]:
    files = {(pkg.replace("/", ".") + "." + f.stem).replace(".__init__", ""): f
             for pkg in PACKAGES for f in (ROOT / pkg).glob("*.py")}
    graph = {}
    for name, f in files.items():
        deps = set()
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 \
                    and node.module.split(".")[0] in ("origami", "tritonblas"):
                for a in node.names:
                    sub = f"{node.module}.{a.name}"
                    deps.add(sub if sub in files else node.module)
            elif isinstance(node, ast.Import):
                deps.update(a.name for a in node.names if a.name in files)
        graph[name] = deps - {name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> set[tuple[str, ...]]:
    found = set()

    def walk(start, node, path):
        for nxt in graph.get(node, ()):
            if nxt == start:
                i = path.index(min(path))
                found.add(tuple(path[i:] + path[:i]))
            elif nxt not in path and nxt in graph:
                walk(start, nxt, path + [nxt])

    for m in graph:
        walk(m, m, [m])
    return found


def test_the_detector_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == {("a", "b", "c")}


def test_no_import_cycles():
    graph = _graph()
    assert {"origami.select", "tritonblas.dispatch", "tritonblas.routing"} <= set(graph)
    assert not _cycles(graph), sorted(" -> ".join(c) for c in _cycles(graph))


if __name__ == "__main__":  # python tests/test_import_graph.py [TREE]: the graph's size and its cycles
    import sys

    ROOT = Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else ROOT
    g = _graph()
    found = _cycles(g)
    print(f"{ROOT}: {len(g)} modules, {sum(map(len, g.values()))} import edges, {len(found)} cycles")
    for c in sorted(found, key=len):
        print("  cycle:", " -> ".join(c + (c[0],)))

"""origami never imports torch or triton (DESIGN.md §1): selection works on a machine without them.

The check runs in a fresh interpreter whose meta-path finder refuses torch and triton and records
every attempt, so a module that swallows the ImportError (``try: import torch``) is caught too.
Every module of the origami package is imported, so modules added later are covered automatically.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CHILD = r"""
import importlib, importlib.abc, json, pkgutil, sys

BLOCKED = ("torch", "triton")
attempts = []

class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            attempts.append(name)
            raise ImportError(f"{name} is blocked: origami must not import it")
        return None

sys.meta_path.insert(0, Block())

import origami
hw = origami.load_profile("h200")
assert hw.compute_units == 132, hw.compute_units
profiles = [origami.load_profile(n).name for n in origami.list_profiles()]

modules, failed = [], {}
for info in pkgutil.walk_packages(origami.__path__, "origami."):
    try:
        importlib.import_module(info.name)
        modules.append(info.name)
    except Exception as e:  # report, do not stop: every module should be checked
        failed[info.name] = f"{type(e).__name__}: {e}"

print(json.dumps({
    "attempts": attempts, "modules": modules, "failed": failed, "profiles": profiles,
    "loaded": sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED),
}))
"""


def run_child() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env.setdefault("NUMBA_CACHE_DIR", str(ROOT / ".numba_cache"))
    proc = subprocess.run([sys.executable, "-c", CHILD], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=240)
    assert proc.returncode == 0, f"child failed:\n{proc.stdout}\n{proc.stderr}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_origami_imports_without_torch_or_triton():
    out = run_child()
    assert out["attempts"] == [], f"origami tried to import {out['attempts']}"
    assert out["loaded"] == []
    assert out["failed"] == {}, f"origami modules failed to import without torch/triton: {out['failed']}"
    assert "origami.hardware" in out["modules"] and "origami.problem" in out["modules"]
    assert out["profiles"] == ["mi300x", "mi325x", "mi350x", "mi355x", "h100", "h200", "b200"]

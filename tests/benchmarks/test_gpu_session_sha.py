"""benchmarks/gpu_session.sh refuses to run without a commit's hex in GIT_SHA: every CSV a device call writes
takes its provenance from it (session 23 sent a placeholder). The check runs before anything touches the GPU."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
@pytest.mark.parametrize("sha", ["", "REPLACE_SHA", "abc", "008f895 ; rm"])
def test_a_placeholder_sha_stops_the_session(tmp_path, sha):
    env = {**os.environ, "GIT_SHA": sha, "OUT": str(tmp_path / "out"), "STEPS": "none"}
    r = subprocess.run(["bash", "benchmarks/gpu_session.sh"], cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "7-40 hex digits" in r.stderr and not (tmp_path / "out").exists()

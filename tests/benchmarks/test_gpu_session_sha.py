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


@pytest.mark.skipif(shutil.which("bash") is None or shutil.which("git") is None, reason="needs bash and git")
def test_a_sha_of_a_stale_checkout_stops_the_session(tmp_path):
    """The device copy's .git is the last landing: a GIT_SHA equal to its HEAD while the tracked files differ from
    that commit names the wrong tree (session 26's first run). A clean tree at that sha passes the check."""
    repo = tmp_path / "repo"
    (repo / "benchmarks").mkdir(parents=True)
    shutil.copy(ROOT / "benchmarks" / "gpu_session.sh", repo / "benchmarks" / "gpu_session.sh")
    shutil.copy(ROOT / "benchmarks" / "_gpu.sh", repo / "benchmarks" / "_gpu.sh")
    (repo / "code.py").write_text("x = 1\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    for cmd in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "one"]):
        subprocess.run([*git, *cmd], cwd=repo, check=True, capture_output=True)
    sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, check=True).stdout.strip()

    def run(out):
        env = {**os.environ, "GIT_SHA": sha[:7], "OUT": str(out), "STEPS": "none"}
        return subprocess.run(["bash", "benchmarks/gpu_session.sh"], cwd=repo, env=env, capture_output=True, text=True,
                              timeout=120)

    clean = run(tmp_path / "clean")
    assert "is this copy's git HEAD" not in clean.stderr
    (repo / "code.py").write_text("x = 2\n")
    r = run(tmp_path / "stale")
    assert r.returncode == 2 and "is this copy's git HEAD" in r.stderr, (r.returncode, r.stderr)
    assert not (tmp_path / "stale").exists()

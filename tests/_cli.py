"""Running ``python -m tritonblas`` as a user runs it (a subprocess), for the CLI and table tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def cli_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRITONBLAS_", "PYTEST_"))}
    env["PYTHONPATH"] = str(ROOT)
    env.update(extra)
    return env


def run_cli(*args: str, timeout: float = 120, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tritonblas", *args], capture_output=True, text=True,
                          cwd=ROOT, env=cli_env(**env), timeout=timeout)


def assert_usage_error(r: subprocess.CompletedProcess, *needles: str) -> None:
    lines = r.stderr.splitlines()
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr
    for n in needles:
        assert n in lines[0], (n, lines[0])

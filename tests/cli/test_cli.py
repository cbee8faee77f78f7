"""``python -m tritonblas``, run as a user runs it (a subprocess): every subcommand has a --help, the
commands work, and bad input exits with code 2 and exactly one line on stderr."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SUBCOMMANDS = ("profiles", "select", "explain", "table", "calibrate", "bench", "demo")


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


def test_top_level_help_lists_every_subcommand():
    r = run_cli("--help")
    assert r.returncode == 0, r.stderr
    for name in SUBCOMMANDS:
        assert name in r.stdout


@pytest.mark.parametrize("name", SUBCOMMANDS)
def test_subcommand_help(name):
    r = run_cli(name, "--help")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"usage: python -m tritonblas {name}"), r.stdout
    if name in ("select", "explain", "table", "bench"):
        assert "--profile" in r.stdout
    if name == "calibrate":
        for opt in ("--base", "--fit", "--quick", "--no-measure", "-o"):
            assert opt in r.stdout


def test_profiles_list_and_show():
    r = run_cli("profiles")
    assert r.returncode == 0, r.stderr
    for name in ("mi300x", "h200", "b200"):
        assert name in r.stdout
    r = run_cli("profiles", "show", "h200")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("# h200 (")


def test_select_and_explain():
    r = run_cli("select", "4096", "4096", "4096", "--profile", "h200", "--top", "3")
    assert r.returncode == 0, r.stderr
    assert "4096x4096x4096" in r.stdout
    r = run_cli("explain", "512", "1000", "7000", "--dtype", "fp16", "--profile", "mi300x")
    assert r.returncode == 0, r.stderr
    assert "roofline floor" in r.stdout and "bound:" in r.stdout


def test_demo_one_profile():
    r = run_cli("demo", "--profile", "h200")
    assert r.returncode == 0, r.stderr
    assert "model selections" in r.stdout


@pytest.mark.parametrize("args, needles", [
    (("select", "-5", "4", "4"), ("M:", "'-5'")),
    (("select", "4", "x", "4"), ("N:",)),
    (("select", "0", "4", "4"), ("M and N must be > 0",)),
    (("select", "4", "4", "4", "--dtype", "fp64"), ("fp64",)),
    (("select", "4", "4", "4", "--profile", "nope"), ("nope", "unknown profile")),
    (("explain", "4", "4"), ("explain",)),
    (("frobnicate",), ("frobnicate",)),
    (("table", "--profile", "h200"), ("--shapes", "-o")),
    (("table", "--profile", "h200", "--shapes", "s.yaml", "-o", "t.json", "--format", "xml"), ("xml",)),
])
def test_bad_arguments_one_line_exit_2(args, needles):
    assert_usage_error(run_cli(*args), *needles)


def test_tables_never_fold_a_header_or_cell_outside_a_terminal(capsys):
    """Piped or logged output (not a TTY) keeps every column name and cell on one line, however many
    columns the table has: `bench` on the H200 once folded "ours/torch" into "ours/" + "torch"."""
    from tritonblas.cli import _table

    cols = ("problem", "config", "ours ms", "ours TFLOP/s", "torch ms", "torch TFLOP/s", "ours/torch",
            "pred. ms", "pred. TFLOP/s", "pred/measured", "select us", "rel. error vs fp32")
    row = ("1024x1024x1024 / 3", "streamk 128x128x64 w8 s3 g8 grid132", *(f"{i}.123456789" for i in range(10)))
    _table("a wide table", cols, [row])
    lines = capsys.readouterr().out.splitlines()
    header = next(line for line in lines if "problem" in line)
    body = next(line for line in lines if "1024x1024x1024" in line)
    for c in cols:
        assert c in header, (c, header)
    for cell in row:
        assert cell in body, (cell, body)

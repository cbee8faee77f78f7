"""``python -m tritonblas``, run as a user runs it (a subprocess): every subcommand has a --help, the
commands work, and bad input exits with code 2 and exactly one line on stderr."""

from __future__ import annotations

import pytest

from _cli import assert_usage_error, run_cli

SUBCOMMANDS = ("profiles", "select", "explain", "table", "calibrate", "bench", "demo")


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
    (("profiles", "list", "h200"), ("profiles list", "'h200'", "profiles show h200")),  # was silently ignored
    (("profiles", "h200"), ("profiles", "h200")),
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


@pytest.mark.parametrize("args,needles", [
    (("select", "64", "64", "64", "--top", "0"), ("--top", "'0'")),
    (("select", "64", "64", "64", "--top", "-3"), ("--top", "'-3'")),
    (("explain", "64", "64", "64", "--top", "x"), ("--top", "'x'")),
    (("select", "64", "64", "64", "--out-dtype", "int8"), ("--out-dtype", "int8")),
    (("select", "64", "64", "64", "--batch", "0"), ("--batch", "'0'")),
])
def test_option_values_validated(args, needles):
    assert_usage_error(run_cli(*args), *needles)


def test_version():
    r = run_cli("--version")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("tritonblas 0.") and "numba " in r.stdout


def test_help_is_plain_text():
    for args in (("--help",), ("select", "--help"), ("table", "--help")):
        r = run_cli(*args)
        assert r.returncode == 0 and "``" not in r.stdout and ":func:" not in r.stdout, r.stdout


def test_json_outputs():
    import json

    r = run_cli("select", "128", "1024", "65536", "--top", "3", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["problem"]["m"] == 128 and doc["profile"]["name"] == "h200" and len(doc["ranked"]) == 3
    lat = [e["latency_ns"] for e in doc["ranked"]]
    assert lat == sorted(lat) and doc["ranked"][0]["config"]["kind"] in ("dp", "persistent", "streamk", "splitk")
    # the numba warm-up is reported on its own, never as query time (a cold rank is ~0.1-1 ms)
    assert "warmup_s" in doc and doc["query_s"] < 0.25
    r = run_cli("explain", "16", "4096", "4096", "--top", "2", "--json")
    doc = json.loads(r.stdout)
    assert 0 < doc["ranked"][0]["roofline_fraction"] <= 1 and doc["roofline_floor_ns"] > 0
    r = run_cli("profiles", "--json")
    names = [p["name"] for p in json.loads(r.stdout)]
    assert {"h200", "mi300x", "b200"} <= set(names)
    r = run_cli("profiles", "show", "h200", "--json")
    assert json.loads(r.stdout)["profile"]["name"] == "h200"


def test_table_json(tmp_path):
    import json

    shapes = tmp_path / "s.yaml"
    shapes.write_text("- {m: 128, n: 256, k: 512}\n- {m: 4096, n: 4096, k: 4096}\n- {m: 128, n: 256, k: 512}\n")
    out = tmp_path / "t.json"
    r = run_cli("table", "--profile", "h200", "--shapes", str(shapes), "-o", str(out), "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["entries"] == 2 and doc["shapes"] == 3 and doc["output"] == str(out) and out.exists()


def test_verbose_logs_on_stderr():
    r = run_cli("-v", "select", "64", "64", "64", "--top", "1")
    assert r.returncode == 0, r.stderr
    assert "tritonblas.cli: numba warm-up" in r.stderr and "ranked in" in r.stderr


def test_closed_stdout_pipe_gives_no_traceback():
    """`python -m tritonblas select ... --json | head -1`: the reader leaves early. The write raised
    BrokenPipeError with a traceback (and another "Exception ignored" at exit)."""
    import subprocess
    import sys

    from _cli import ROOT, cli_env

    p = subprocess.Popen([sys.executable, "-m", "tritonblas", "select", "4096", "4096", "4096", "--top", "100000",
                          "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT, env=cli_env())
    p.stdout.close()  # far more than a pipe buffer of JSON follows
    err = p.stderr.read().decode()
    assert p.wait(timeout=120) != 0
    assert "Traceback" not in err and "BrokenPipeError" not in err and "Exception ignored" not in err, err


@pytest.mark.parametrize("command", [("select", "4", "4", "4"), ("explain", "4", "4", "4"), ("profiles", "show")])
def test_profile_with_several_bad_fields_names_them(tmp_path, command):
    """A profile YAML with more than one bad field: origami's ProfileError is "N error(s) in profile F:"
    then one field per line; the one-line error kept only that header (nothing named which fields),
    while `calibrate --base` named them. Reproduction: `select 4 4 4 --profile p.yaml` with p.yaml
    holding only `name: x` printed "error: 10 error(s) in profile p.yaml:"."""
    prof = tmp_path / "p.yaml"
    prof.write_text("name: x\n")
    args = (*command, str(prof)) if command[0] == "profiles" else (*command, "--profile", str(prof))
    assert_usage_error(run_cli(*args), "p.yaml", "error(s)", "vendor: field required", "memory: field required")

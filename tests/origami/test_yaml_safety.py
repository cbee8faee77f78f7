"""YAML anchors/aliases and duplicate keys (RELIABILITY.md §7): every reader of profiles, shapes files
and tile tables refuses a nested "billion laughs", a self-referencing anchor and a repeated key with
one error naming the file, in well under a second; the CLI exits 2 with one line. Before the shared
reader (origami/_yaml.py) the profile loader hung in its duplicate-key walk, a self-reference raised
RecursionError, and a shapes entry ``{m: 64, n: 64, k: 64, m: 8}`` was read as m = 8."""

from __future__ import annotations

import re
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

from origami import ProfileError, load_profile
from origami.shapes import ShapesError, load_shapes

ROOT = Path(__file__).resolve().parents[2]
H200 = (ROOT / "hwprofiles" / "h200.yaml").read_text()
LIMIT_S = 1.0


def laughs(depth: int = 9, width: int = 9, key: str = "extra") -> str:
    """A nested-alias bomb: ``width**depth`` leaves (~3.9e8 here) from about 500 bytes."""
    lines = [f"{key}:", "  a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    for i in range(1, depth):
        lines.append(f"  a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]")
    return "\n".join(lines) + "\n"


SELF_REF = "extra: &a [*a]\n"
BOMBS = {"laughs": laughs(), "self_ref": SELF_REF}


def timed(fn, *args):
    t = time.perf_counter()
    with pytest.raises((ProfileError, ShapesError)) as ei:
        fn(*args)
    dt = time.perf_counter() - t
    assert dt < LIMIT_S, f"took {dt:.2f} s"
    return str(ei.value)


@pytest.mark.parametrize("bomb", sorted(BOMBS))
def test_profile_rejects_anchors_and_aliases(tmp_path, bomb):
    f = tmp_path / "bomb.yaml"
    f.write_text(H200 + BOMBS[bomb])
    msg = timed(load_profile, f)
    assert msg.startswith("bomb.yaml: line ") and "anchors and aliases are not allowed" in msg, msg
    assert "\n" not in msg


def test_profile_rejects_an_unused_anchor(tmp_path):
    f = tmp_path / "anchor.yaml"
    f.write_text(H200.replace("name: h200", "name: &n h200", 1))
    assert "name: &n h200" in f.read_text()
    msg = timed(load_profile, f)
    assert "anchor &n" in msg, msg


def test_a_star_inside_a_quoted_string_is_not_an_alias(tmp_path):
    """The fast path only skips the event scan when '&'/'*' are absent; present in a string, the scan
    must still accept the file."""
    f = tmp_path / "star.yaml"
    text = H200.replace("name: h200", 'name: "h200*&"', 1)
    assert text != H200
    f.write_text(text)
    assert load_profile(f).name == "h200*&"


@pytest.mark.parametrize("bomb", sorted(BOMBS))
def test_shapes_reject_anchors_and_aliases(tmp_path, bomb):
    f = tmp_path / "shapes.yaml"
    text = "- {m: 64, n: 64, k: 64}\n- " + BOMBS[bomb].replace("\n  ", "\n    ")
    f.write_text(text)
    msg = timed(load_shapes, f)
    assert msg.startswith(f"{f}: line ") and "anchors and aliases are not allowed" in msg, msg


@pytest.mark.parametrize("text, entry, lines", [
    ("- {m: 64, n: 64, k: 64, m: 8}\n", 0, "1 and 1"),           # flow mapping (the line reader)
    ("- {m: 1, n: 1, k: 1}\n- m: 64\n  n: 64\n  k: 64\n  m: 8\n", 1, "2 and 5"),  # block mapping
    ('[{"m": 64, "n": 64, "k": 64, "m": 8}]', 0, "1 and 1"),      # JSON (the json reader)
])
def test_shapes_reject_duplicate_keys(tmp_path, text, entry, lines):
    f = tmp_path / "dup.yaml"
    f.write_text(text)
    with pytest.raises(ShapesError) as ei:
        load_shapes(f)
    msg = str(ei.value)
    assert f"entry {entry}: duplicate key 'm' (lines {lines})" in msg, msg


def test_shapes_without_duplicates_still_read(tmp_path):
    f = tmp_path / "ok.yaml"
    f.write_text("- {m: 64, n: 32, k: 16}\n- m: 8\n  n: 4\n  k: 2\n")
    assert [(p.m, p.n, p.k) for p in load_shapes(f)] == [(64, 32, 16), (8, 4, 2)]


@pytest.mark.parametrize("old, new", [
    ("compute_units: 132", "compute_units: 0x_"),          # YAML 1.1 resolves it as an int: int("", 16)
    ("compute_units: 132", "compute_units: 0b_"),
    ("name: h200", "name: !!timestamp soon"),              # an explicit tag whose value does not parse
    ("launch_overhead_ns: 580.4", "launch_overhead_ns: !!float fast"),
    ("dispatch: linear", "dispatch: !!bool maybe"),
    ("compute_units: 132", "0x_: 1\n  compute_units: 132"),  # as a key
])
def test_a_scalar_the_yaml_library_cannot_construct_is_an_error_naming_the_file(tmp_path, old, new):
    """A scalar PyYAML resolves (or is told with a tag) to a type whose constructor then fails raised that
    constructor's bare ValueError / AttributeError / KeyError ("invalid literal for int() with base 16: ''",
    "'NoneType' object has no attribute 'groupdict'") out of load_profile and load_shapes, naming neither the
    file nor the field."""
    f = tmp_path / "odd.yaml"
    assert old in H200
    f.write_text(H200.replace(old, new, 1))
    with pytest.raises(ProfileError, match=r"^odd\.yaml: "):
        load_profile(f)
    s = tmp_path / "shapes.yaml"
    key, value = new.split("\n")[0].split(": ", 1)
    s.write_text(f"- {{m: 64, n: 64, k: 64}}\n- {{m: 64, n: 64, {'k' if value != '1' else key}: {value}}}\n")
    with pytest.raises(ShapesError, match=rf"^{re.escape(str(s))}: "):
        load_shapes(s)


@pytest.mark.parametrize("text, yaml11", [
    ("0132", 90),        # a leading zero: octal under YAML 1.1, decimal 132 under 1.2
    ("2:12", 132),       # base 60 under YAML 1.1, a string under 1.2
    ("0b10000100", 132),  # binary: YAML 1.1 only
    ("1_32", 132),       # digit separators: YAML 1.1 only
])
def test_a_number_yaml_11_and_12_read_differently_is_refused(tmp_path, text, yaml11):
    """RELIABILITY.md §5.1's YAML 1.1 traps: ``compute_units: 0132`` loaded as 90 compute units (an octal) and
    ``2:12`` as 132 (base 60), silently; YAML 1.2 reads the first as 132 and the second as a string. Such a number
    is refused with the field's path and line, in profiles and shapes files alike; plain decimal, floats and hex
    (one meaning in both versions) still read."""
    import yaml

    assert yaml.safe_load(f"x: {text}")["x"] == yaml11  # what PyYAML makes of it
    f = tmp_path / "octal.yaml"
    f.write_text(H200.replace("compute_units: 132", f"compute_units: {text}", 1))
    with pytest.raises(ProfileError, match=rf"^octal\.yaml: compute\.compute_units: {re.escape(repr(text))} "):
        load_profile(f)
    s = tmp_path / "shapes.yaml"
    s.write_text(f"- {{m: 64, n: 64, k: 64}}\n- {{m: {text}, n: 64, k: 64}}\n")
    with pytest.raises(ShapesError, match=rf"entry 1\.m: {re.escape(repr(text))} "):
        load_shapes(s)
    s.write_text("- {m: 0x40, n: 64, k: 64, batch: +2}\n- {m: 0, n: 64, k: 64}\n")
    assert [(p.m, p.batch) for p in load_shapes(s)] == [(64, 2), (0, 1)]
    f.write_text(H200.replace("launch_overhead_ns: 580.4", "launch_overhead_ns: 5.804e+2", 1))
    assert load_profile(f).launch_overhead_ns == 580.4


@pytest.mark.parametrize("bomb", sorted(BOMBS))
def test_tile_table_with_aliases_is_refused_quickly(tmp_path, bomb):
    """Tile tables are json or csv (no anchors exist there); a YAML bomb in their place is a corrupt
    table: a warning and an empty table, or TableError when strict, never a hang."""
    from tritonblas.tables import TableError, TableWarning, load_table

    f = tmp_path / "table.json"
    f.write_text(BOMBS[bomb])
    t = time.perf_counter()
    with pytest.raises(TableError):
        load_table(f, strict=True)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert len(load_table(f)) == 0
    assert time.perf_counter() - t < LIMIT_S
    assert any(issubclass(x.category, TableWarning) for x in w)


def _cli(*args):
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "NUMBA_CACHE_DIR": "/tmp/numba-yaml-test"}
    return subprocess.run([sys.executable, "-m", "tritonblas", *args], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=60)


def test_cli_exits_2_on_bombs(tmp_path):
    prof = tmp_path / "bomb.yaml"
    prof.write_text(H200 + laughs())
    shapes = tmp_path / "shapes.yaml"
    shapes.write_text("- {m: 64, n: 64, k: 64}\n- " + SELF_REF)
    dup = tmp_path / "dup.yaml"
    dup.write_text("- {m: 64, n: 64, k: 64, m: 8}\n")
    for args, needle in [(("select", "64", "64", "64", "--profile", str(prof)), "anchors and aliases"),
                         (("table", "--shapes", str(shapes), "-o", str(tmp_path / "t.json"), "--profile", "h200"),
                          "anchors and aliases"),
                         (("table", "--shapes", str(dup), "-o", str(tmp_path / "t.json"), "--profile", "h200"),
                          "duplicate key 'm'")]:
        r = _cli(*args)
        lines = r.stderr.splitlines()
        assert r.returncode == 2 and len(lines) == 1 and needle in lines[0], (args, r.returncode, r.stderr)
    assert not (tmp_path / "t.json").exists()

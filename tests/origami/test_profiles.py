"""Hardware profiles: the shipped ones load, and bad input fails loudly (RELIABILITY.md §5, §6.31).

Every bad-input case is a copy of the shipped h200.yaml with one edit, loaded by path; the error
must be an ``origami.ProfileError`` whose message names the file and the dotted field path.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
import yaml

import origami
from origami._yaml import float_text
from origami.hardware import MODEL_PARAMS, SCHEMA, as_written, check_profile_text, render_profile

SHIPPED = ["mi300x", "mi325x", "mi350x", "mi355x", "h100", "h200", "b200"]
HWPROFILES = Path(origami.__file__).resolve().parent.parent / "hwprofiles"
H200 = (HWPROFILES / "h200.yaml").read_text()
BAD = "bad_h200.yaml"


# --- helpers ------------------------------------------------------------------------------------
def _line(text: str, key: str, section: str | None) -> re.Match:
    """The line ``<indent>key: ...`` (inside ``section:`` when given), which must be unique there."""
    start = 0
    if section is not None:
        sec = list(re.finditer(rf"^\s*{re.escape(section)}:.*\n", text, re.M))
        assert len(sec) == 1, f"h200.yaml no longer has exactly one {section!r} section"
        start = sec[0].end()
    found = list(re.compile(rf"^(\s*){re.escape(key)}:.*\n", re.M).finditer(text, start))
    assert found, f"h200.yaml has no {key!r} line" + (f" in {section!r}" if section else "")
    if section is None:
        assert len(found) == 1, f"h200.yaml no longer has exactly one {key!r} line"
    return found[0]


def set_field(text: str, key: str, value: str, section: str | None = None) -> str:
    """Replace the value of ``key`` (the unique line, or the first one inside ``section``)."""
    m = _line(text, key, section)
    return f"{text[:m.start()]}{m.group(1)}{key}: {value}\n{text[m.end():]}"


def drop_line(text: str, key: str, section: str | None = None) -> str:
    m = _line(text, key, section)
    return text[:m.start()] + text[m.end():]


def insert_after(text: str, key: str, line: str, section: str | None = None) -> str:
    """Insert ``line`` (same indentation as ``key``) right after the line of ``key``."""
    m = _line(text, key, section)
    return f"{text[:m.end()]}{m.group(1)}{line}\n{text[m.end():]}"


def load_bad(tmp_path: Path, text: str) -> str:
    """Write ``text`` as a profile, load it by path and return the ProfileError message."""
    f = tmp_path / BAD
    f.write_text(text)
    with pytest.raises(origami.ProfileError) as exc:
        origami.load_profile(f)
    msg = str(exc.value)
    assert BAD in msg, f"the message does not name the file: {msg}"
    return msg


def schema_paths(spec: dict, prefix: str = "") -> list[str]:
    out = []
    for k, v in spec.items():
        p = f"{prefix}.{k}" if prefix else k
        out += schema_paths(v, p) if isinstance(v, dict) else [p]
    return out


# --- the shipped profiles -----------------------------------------------------------------------
def test_list_profiles_is_exactly_the_shipped_set(monkeypatch):
    monkeypatch.delenv("ORIGAMI_PROFILE_DIR", raising=False)
    assert origami.list_profiles() == SHIPPED


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_profile_loads(name):
    hw = origami.load_profile(name)
    assert hw.name == name
    assert hw.compute_units % hw.chiplets == 0
    assert 0 < hw.sustained_peak_flops("bf16") <= hw.matrix_peak_flops["bf16"]
    assert set(hw.matrix_peak_flops) == set(hw.matrix_instr_shape) == {"fp32", "tf32", "fp16", "bf16", "fp8", "int8"}
    assert set(hw.model) == set(MODEL_PARAMS)
    assert hw.arch.startswith("gfx" if hw.is_amd else "sm_")


def test_shipped_profiles_key_facts():
    p = {n: origami.load_profile(n) for n in SHIPPED}
    assert (p["mi300x"].arch, p["mi300x"].compute_units, p["mi300x"].chiplets) == ("gfx942", 304, 8)
    assert p["mi300x"].compute["dispatch"] == "round_robin"
    assert p["mi300x"].memory["llc_bytes"] == 256 * 2**20
    assert p["mi325x"].memory["hbm_bytes"] > p["mi300x"].memory["hbm_bytes"]
    assert p["mi325x"].matrix_peak_flops == p["mi300x"].matrix_peak_flops
    for n in ("mi350x", "mi355x"):
        assert (p[n].arch, p[n].compute_units, p[n].compute["smem_bytes_per_cu"]) == ("gfx950", 256, 160 * 1024)
        assert p[n].matrix_peak_flops["tf32"] == 0.0  # no xf32 on gfx950
    assert p["mi355x"].compute["boost_clock_mhz"] > p["mi350x"].compute["boost_clock_mhz"]
    assert (p["h100"].arch, p["h100"].compute_units, p["h100"].memory["l2_bytes_per_chiplet"]) == ("sm_90", 132, 50 * 2**20)
    assert (p["b200"].arch, p["b200"].compute_units, p["b200"].chiplets) == ("sm_100", 148, 2)
    assert p["b200"].compute["dispatch"] == "linear"
    for n in SHIPPED:  # the sustained clock is what the model uses, and it is below boost everywhere
        assert p[n].compute["sustained_clock_mhz"] < p[n].compute["boost_clock_mhz"]


@pytest.mark.parametrize("name", SHIPPED)
def test_every_estimate_says_so_and_every_number_has_a_source(name):
    hw = origami.load_profile(name)
    for key, text in hw.sources.items():
        assert len(text) >= 8, key
    model_src = hw.sources.get("model", "")
    assert "initial" in model_src or "measured" in model_src or "fitted" in model_src


def test_readme_documents_every_field():
    readme = (HWPROFILES / "README.md").read_text()
    paths = {re.sub(r"^(matrix\.\w+)\.\w+$", r"\1.<dtype>", p) for p in schema_paths(SCHEMA)} - {"sources"}
    missing = sorted(p for p in paths if f"`{p}" not in readme)
    missing += [f"dtype {k}" for k in SCHEMA["matrix"]["peak_flops"] if f"`{k}`" not in readme]
    missing += [f"model.{k}" for k in MODEL_PARAMS if f"`model.{k}`" not in readme]
    assert not missing, f"hwprofiles/README.md does not document: {missing}"


# --- bad input ----------------------------------------------------------------------------------
def test_profile_error_is_a_value_error():
    assert issubclass(origami.ProfileError, ValueError)


def test_unknown_key_typo(tmp_path):
    assert H200.count("\n  compute_units:") == 1
    msg = load_bad(tmp_path, H200.replace("\n  compute_units:", "\n  compute_unit:"))
    assert "compute.compute_unit: unknown field" in msg
    assert "did you mean 'compute_units'" in msg
    assert "compute.compute_units: field required" in msg


def test_missing_key(tmp_path):
    msg = load_bad(tmp_path, drop_line(H200, "hbm_bytes_per_s"))
    assert "memory.hbm_bytes_per_s: field required" in msg


def test_yaml11_exponent_without_sign_is_a_string(tmp_path):
    msg = load_bad(tmp_path, set_field(H200, "l2_bytes_per_s", "8.0e12"))
    assert "memory.l2_bytes_per_s" in msg
    assert "got str '8.0e12'" in msg
    assert "8.0e+12" in msg or "e+12" in msg  # the hint shows how to write it


def test_quoted_number(tmp_path):
    msg = load_bad(tmp_path, set_field(H200, "compute_units", '"132"'))
    assert "compute.compute_units" in msg and "got str '132'" in msg


def test_boolean_is_not_a_number(tmp_path):
    msg = load_bad(tmp_path, set_field(H200, "chiplets", "yes"))  # YAML 1.1: yes -> True
    assert "compute.chiplets" in msg and "bool" in msg


@pytest.mark.parametrize("value", ["-4", "0"])
def test_non_positive_compute_units(tmp_path, value):
    msg = load_bad(tmp_path, set_field(H200, "compute_units", value))
    assert "compute.compute_units: must be >= 1" in msg and "must be > 0" in msg


def test_zero_bandwidth(tmp_path):
    msg = load_bad(tmp_path, set_field(H200, "hbm_bytes_per_s", "0.0"))
    assert "memory.hbm_bytes_per_s: must be >= 1e+11" in msg


def test_nan(tmp_path):
    msg = load_bad(tmp_path, set_field(H200, "boost_clock_mhz", ".nan"))
    assert "compute.boost_clock_mhz: must be a finite number" in msg


def test_bandwidth_in_wrong_units(tmp_path):
    msg = load_bad(tmp_path, set_field(H200, "hbm_bytes_per_s", "4.8"))  # TB/s, not bytes/s
    assert "memory.hbm_bytes_per_s" in msg and "check the units" in msg


def test_bandwidth_too_large(tmp_path):
    msg = load_bad(tmp_path, set_field(H200, "l2_bytes_per_s", "8.0e+15"))  # 8000 TB/s
    assert "memory.l2_bytes_per_s: must be <= 5e+13" in msg


def test_too_many_compute_units(tmp_path):
    msg = load_bad(tmp_path, set_field(H200, "compute_units", "2048"))
    assert "compute.compute_units: must be <= 1024" in msg


def test_duplicate_key_names_key_and_both_lines(tmp_path):
    text = insert_after(H200, "compute_units", "compute_units: 16")
    lines = text.splitlines()
    first, second = [i + 1 for i, ln in enumerate(lines) if ln.strip().startswith("compute_units:")]
    msg = load_bad(tmp_path, text)
    assert "compute.compute_units" in msg and "duplicate key 'compute_units'" in msg
    assert f"lines {first} and {second}" in msg


def test_chiplets_must_divide_compute_units(tmp_path):
    msg = load_bad(tmp_path, set_field(H200, "chiplets", "5"))
    assert "compute.chiplets: must divide compute.compute_units (132)" in msg


def test_unknown_dtype_key(tmp_path):
    msg = load_bad(tmp_path, insert_after(H200, "fp8", "fp8_e4m3fnuz: 1.9789e+15", section="peak_flops"))
    assert "matrix.peak_flops.fp8_e4m3fnuz: unknown field" in msg
    assert "allowed: fp32, tf32, fp16, bf16, fp8, int8" in msg


def test_unknown_arch(tmp_path):
    msg = load_bad(tmp_path, set_field(H200, "arch", "sm_89"))
    assert "arch: expected one of gfx942, gfx950, sm_90, sm_100, got 'sm_89'" in msg


def test_arch_of_the_other_vendor(tmp_path):
    msg = load_bad(tmp_path, set_field(H200, "arch", "gfx942"))
    assert "arch: 'gfx942' is not an NVIDIA arch" in msg


def test_not_yaml(tmp_path):
    msg = load_bad(tmp_path, H200 + "\ncompute: [unclosed\n")
    assert "not valid YAML" in msg


def test_top_level_not_a_mapping(tmp_path):
    msg = load_bad(tmp_path, "- just\n- a list\n")
    assert "(top level): expected a mapping" in msg


def test_mapping_where_a_number_is_expected(tmp_path):
    msg = load_bad(tmp_path, set_field(H200, "l2_bytes_per_s", "{value: 8.0e+12, unit: B/s}"))
    assert "memory.l2_bytes_per_s: expected a number" in msg and "dict" in msg


def test_bad_instruction_shape(tmp_path):
    msg = load_bad(tmp_path, set_field(H200, "bf16", "[64, 8]", section="instr_shape"))
    assert "matrix.instr_shape.bf16: expected [m, n, k]" in msg


def test_missing_source(tmp_path):
    msg = load_bad(tmp_path, drop_line(H200, "memory.hbm_bytes"))
    assert "sources: no source for memory.hbm_bytes" in msg


def test_source_for_a_field_that_does_not_exist(tmp_path):
    msg = load_bad(tmp_path, insert_after(H200, "memory.hbm_bytes", 'memory.hbm_gbps: "NVIDIA datasheet"'))
    assert "sources.memory.hbm_gbps: names no field of the schema" in msg


def test_all_errors_reported_at_once(tmp_path):
    text = set_field(set_field(H200, "compute_units", "-4"), "hbm_bytes_per_s", "4.8")
    msg = load_bad(tmp_path, text)
    assert msg.startswith(f"2 error(s) in profile {BAD}")
    assert "compute.compute_units" in msg and "memory.hbm_bytes_per_s" in msg


def test_model_parameter_out_of_range(tmp_path):
    msg = load_bad(tmp_path, set_field(H200, "mma_efficiency", "85.0"))  # a percentage, not a fraction
    assert "model.mma_efficiency: must be <= 1" in msg


def test_unknown_profile_name_lists_the_available_ones(monkeypatch):
    monkeypatch.delenv("ORIGAMI_PROFILE_DIR", raising=False)
    with pytest.raises(origami.ProfileError) as exc:
        origami.load_profile("h300")
    msg = str(exc.value)
    assert "h300: unknown profile" in msg
    assert ", ".join(SHIPPED) in msg
    assert "calibrate" in msg


def test_missing_profile_file(tmp_path):
    with pytest.raises(origami.ProfileError, match="no such profile file"):
        origami.load_profile(tmp_path / "nope.yaml")


@pytest.mark.parametrize("name", ["x" * 300, "x" * 300 + ".yaml", "h200" * 100])
def test_overlong_profile_name_is_a_profile_error(name, monkeypatch, tmp_path):
    """A name longer than the OS allows (ENAMETOOLONG) raised OSError out of load_profile, so out of
    the CLI's --profile (a traceback) and out of load_table for a table naming such a profile."""
    monkeypatch.setenv("ORIGAMI_PROFILE_DIR", str(tmp_path))
    with pytest.raises(origami.ProfileError, match="unknown profile|no such profile file"):
        origami.load_profile(name)


def test_profile_argument_of_the_wrong_type_names_it():
    for bad in (None, 42, b"h200", ["h200"]):
        with pytest.raises(TypeError, match="^profile: expected a profile name"):
            origami.load_profile(bad)


# --- ORIGAMI_PROFILE_DIR, immutability, content hash --------------------------------------------
def test_profile_dir_adds_a_profile(tmp_path, monkeypatch):
    (tmp_path / "myh200.yaml").write_text(set_field(H200, "name", "myh200"))
    (tmp_path / "notes.txt").write_text("not a profile")
    monkeypatch.setenv("ORIGAMI_PROFILE_DIR", str(tmp_path))
    assert origami.list_profiles() == SHIPPED + ["myh200"]
    hw = origami.load_profile("myh200")
    assert hw.name == "myh200" and hw.compute_units == 132


def test_unreadable_file_in_the_profile_dir_is_a_profile_error(tmp_path, monkeypatch):
    """A non-UTF-8 ``<name>.yaml`` in $ORIGAMI_PROFILE_DIR raised UnicodeDecodeError (a traceback from
    the CLI); now a ProfileError naming the file, as for a path."""
    (tmp_path / "junk.yaml").write_bytes(b"\xff\xfe\x00 not text")
    monkeypatch.setenv("ORIGAMI_PROFILE_DIR", str(tmp_path))
    with pytest.raises(origami.ProfileError, match=r"junk\.yaml: cannot read"):
        origami.load_profile("junk")
    assert origami.load_profile("h200").name == "h200"  # the other profiles still load


def test_loaded_profile_is_immutable():
    hw = origami.load_profile("h200")
    with pytest.raises(dataclasses.FrozenInstanceError):
        hw.name = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        hw.compute["compute_units"] = 16  # type: ignore[index]
    with pytest.raises(TypeError):
        hw.memory["hbm_bytes_per_s"] = 1.0  # type: ignore[index]
    with pytest.raises(TypeError):
        hw.model["mma_efficiency"] = 1.0  # type: ignore[index]
    with pytest.raises(TypeError):
        hw.matrix_peak_flops["bf16"] = 1.0  # type: ignore[index]
    assert isinstance(hw.device_names, tuple)
    assert origami.load_profile("h200").compute_units == 132


def test_content_hash_follows_the_numbers(tmp_path):
    same, changed = tmp_path / "same.yaml", tmp_path / "changed.yaml"
    same.write_text(H200)
    changed.write_text(set_field(H200, "l2_bytes_per_s", "1.1e+13"))
    base = origami.load_profile("h200")
    assert origami.load_profile(same).content_hash == base.content_hash
    assert origami.load_profile(same) == base and hash(origami.load_profile(same)) == hash(base)
    other = origami.load_profile(changed)
    assert other.content_hash != base.content_hash and other != base


def test_replace_model_is_validated():
    hw = origami.load_profile("h200")
    tuned = hw.replace_model(mma_efficiency=0.5)
    assert tuned.model["mma_efficiency"] == 0.5 and hw.model["mma_efficiency"] != 0.5
    assert tuned.content_hash != hw.content_hash
    with pytest.raises(origami.ProfileError, match="model.mma_efficiency"):
        hw.replace_model(mma_efficiency=2.0)



@pytest.mark.parametrize("section, key, value", [
    ("compute", "compute_units", 0), ("compute", "warp_size", 0), ("memory", "hbm_bytes_per_s", 0.0),
    ("memory", "l2_bytes_per_s", float("nan")), ("compute", "compute_units", "132"), ("model", "mma_efficiency", 0.0),
])
def test_a_profile_made_with_dataclasses_replace_is_validated(section, key, value):
    """``dataclasses.replace(hw, compute=...)`` (the documented way to vary a profile, tests/dropin/test_compile.py)
    skipped every check of the schema: 0 compute units or 0 bytes/s of HBM bandwidth reached the scorer and
    ``origami.select`` raised ZeroDivisionError (warp_size 0: "integer division or modulo by zero"), a string
    TypeError, a NaN or zero efficiency "no valid kernel configuration" for 512^3."""
    hw = origami.load_profile("h200")
    changed = dict(getattr(hw, section))
    changed[key] = value
    with pytest.raises(origami.ProfileError, match=rf"{section}\.{key}"):
        dataclasses.replace(hw, **{section: changed})
    with pytest.raises(origami.ProfileError, match="launch_overhead_ns"):
        dataclasses.replace(hw, launch_overhead_ns=-1e9)  # was a negative predicted latency
    ok = dataclasses.replace(hw, launch_overhead_ns=hw.launch_overhead_ns * 10)
    assert origami.select(origami.GemmProblem(512, 512, 512), ok).latency_ns > 0

def test_a_replaced_profile_keeps_its_checked_sections_not_the_callers_dict():
    """The sections a replaced profile holds are the checked, read-only copies: the caller's dict, changed after the
    check (compute_units 0), changes neither the profile nor its hash; an unchanged replace is the same profile."""
    hw = origami.load_profile("h200")
    same = dataclasses.replace(hw)
    assert same == hw and same.content_hash == hw.content_hash
    compute = dict(hw.compute)
    replaced = dataclasses.replace(hw, compute=compute)
    compute["compute_units"] = 0
    assert replaced.compute["compute_units"] == hw.compute["compute_units"] and replaced.content_hash == hw.content_hash
    with pytest.raises(TypeError):
        replaced.compute["compute_units"] = 0  # read-only, as a loaded profile's
    assert origami.select(origami.GemmProblem(512, 512, 512), replaced).latency_ns > 0


# --- the writer (what tritonblas calibrate writes) ---------------------------------------------
@pytest.mark.parametrize("name", SHIPPED)
def test_render_profile_reads_back_as_the_same_profile(name):
    hw = origami.load_profile(name)
    text = render_profile(hw.to_yaml_dict(), ["a header line"])
    assert text.startswith("# a header line\n")
    again = check_profile_text(text, f"{name}-copy.yaml")
    assert again == hw and again.to_yaml_dict() == hw.to_yaml_dict() and again.path == f"{name}-copy.yaml"


def test_a_number_is_one_number_however_it_is_spelled():
    """A float field written as an integer (``mn_major_tile_cost: 2``) and an int field written with a decimal
    point (``compute_units: 132.0``) hash as the profile written ``2.0`` and ``132``, and the rendered copy of either
    reads back as the same profile."""
    text = H200
    assert "  mn_major_tile_cost: 2.0\n" in text and "  compute_units: 132\n" in text
    plain = check_profile_text(text, "h200-plain.yaml")
    spelled = check_profile_text(text.replace("  mn_major_tile_cost: 2.0\n", "  mn_major_tile_cost: 2\n")
                                 .replace("  compute_units: 132\n", "  compute_units: 132.0\n"), "h200-spelled.yaml")
    assert spelled == plain and spelled.content_hash == plain.content_hash
    assert isinstance(spelled.model["mn_major_tile_cost"], float) and isinstance(spelled.compute["compute_units"], int)
    again = check_profile_text(render_profile(spelled.to_yaml_dict(), []), "copy.yaml")
    assert again == spelled
    changed = check_profile_text(text.replace("  mn_major_tile_cost: 2.0\n", "  mn_major_tile_cost: 3\n"), "h200-3.yaml")
    assert changed.content_hash != plain.content_hash  # a different number is a different profile


@pytest.mark.parametrize("v, text", [(4.8e12, "4.8e+12"), (1.2e13, "1.2e+13"), (1976.5, "1976.5"), (0.0, "0.0"),
                                      (3000.0, "3000.0"), (0.861, "0.861"), (1e-4, "1.0e-04"),
                                      (150754820096.0, "1.507548e+11")])
def test_float_text_is_a_yaml11_float(v, text):
    assert float_text(v) == text
    assert isinstance(yaml.safe_load(f"x: {text}")["x"], float)
    assert as_written(v) == float(text)


def test_profile_by_hash_finds_a_loaded_profile_after_many_builds():
    """``profile_by_hash`` (how a profile object crosses torch.compile) kept the newest 256 profiles
    built; ``load_profile`` hands its cached object out without a rebuild, so after 256 calibration
    builds (``replace_model``) the loaded h200 was no longer found and a compiled call with
    ``profile=<it>`` raised "was not built by origami"."""
    from origami.hardware import profile_by_hash

    hw = origami.load_profile("h200")
    for i in range(300):
        hw.replace_model(mma_efficiency=0.5 + i / 1000)
    assert origami.load_profile("h200") is hw and profile_by_hash(hw.content_hash) == hw  # (or a copy of its file)


def test_a_replaced_profile_gets_the_hash_of_its_contents():
    """``dataclasses.replace(hw, ...)`` kept ``hw``'s content_hash: equal to ``hw`` and, under
    torch.compile (where ``profile=`` crosses as its hash), silently replaced by ``hw``."""
    import dataclasses

    from origami.hardware import profile_by_hash

    hw = origami.load_profile("h200")
    slow = dataclasses.replace(hw, launch_overhead_ns=hw.launch_overhead_ns * 10)
    assert slow.content_hash != hw.content_hash and slow != hw
    assert profile_by_hash(slow.content_hash) is slow and profile_by_hash(hw.content_hash) == hw  # (or a copy of its file)
    assert dataclasses.replace(hw) == hw  # same contents, same hash


def test_profile_by_hash_keeps_a_live_profile_when_a_copy_with_its_hash_dies(tmp_path):
    """A copy of h200.yaml loaded by path has h200's hash; when that newer copy was dropped, the
    registry's one slot for the hash emptied and the h200 still in use was no longer found."""
    import gc

    from origami.hardware import _build, profile_by_hash

    hw = origami.load_profile("h200")
    copy = _build(yaml.safe_load((Path(origami.__file__).resolve().parent.parent / "hwprofiles" / "h200.yaml")
                                 .read_text()), "copy.yaml")
    assert copy.content_hash == hw.content_hash and profile_by_hash(hw.content_hash) is copy
    del copy
    gc.collect()
    assert profile_by_hash(hw.content_hash) == hw


def test_ws_efficiency_at_its_default_does_not_change_the_content_hash():
    """``model.ws_efficiency`` is optional with default 0 and ``to_yaml_dict``/``render_profile`` leave
    it out at 0, so a profile with ``ws_efficiency: 0`` written out is the profile without the field.
    The hash was of the raw YAML, field included: ``h200.replace_model(ws_efficiency=0)`` (what
    ``space.without_ws`` returns) and a file with ``ws_efficiency: 0.0`` hashed differently from the same
    contents without the field, so rendering the profile and loading it back changed its content hash
    (a tile table made with the one was stale for the other) and ``dataclasses.replace(p) != p``."""
    from origami.space import without_ws

    hw = origami.load_profile("h200")
    zero = hw.replace_model(ws_efficiency=0.0)
    text = render_profile(zero.to_yaml_dict())
    assert "ws_efficiency" not in text
    written = check_profile_text(text, "h200_zero.yaml")
    assert written.content_hash == zero.content_hash == without_ws(hw).content_hash
    absent = check_profile_text(H200.replace("  ws_efficiency: 1.15\n", ""), "a.yaml")
    explicit = check_profile_text(H200.replace("ws_efficiency: 1.15", "ws_efficiency: 0.0"), "b.yaml")
    assert absent.content_hash == explicit.content_hash == zero.content_hash
    assert dataclasses.replace(explicit) == explicit
    # a fitted value is part of the contents
    assert hw.content_hash != zero.content_hash


def test_fp8_encodings_run_at_the_rate_each_architecture_compiles_them_to():
    """HardwareProfile.rate_key: gfx942 takes fnuz on fp8 MFMA and upcasts OCP to fp16; gfx950 the reverse;
    NVIDIA takes OCP only (fnuz does not compile); other dtypes keep their own key. select() prices and refuses
    accordingly."""
    import origami
    from origami import GemmProblem
    from origami.problem import DType

    want = {"mi300x": ("fp16", "fp8"), "mi325x": ("fp16", "fp8"), "mi350x": ("fp8", "fp16"),
            "mi355x": ("fp8", "fp16"), "h100": ("fp8", None), "h200": ("fp8", None), "b200": ("fp8", None)}
    for name, (ocp, fnuz) in want.items():
        hw = origami.load_profile(name)
        assert (hw.rate_key(DType.FP8_E4M3), hw.rate_key(DType.FP8_E4M3_FNUZ)) == (ocp, fnuz), name
        assert (hw.rate_key(DType.FP8_E5M2), hw.rate_key(DType.FP8_E5M2_FNUZ)) == (ocp, fnuz), name
        assert hw.rate_key(DType.BF16) == "bf16" and hw.rate_key(DType.TF32) == "tf32"
    mi300x = origami.load_profile("mi300x")

    def fp8(dtype):
        return GemmProblem(8192, 8192, 8192, a_dtype=dtype, b_dtype=dtype, c_dtype="bf16")

    t_fnuz = origami.select(fp8("fp8_e4m3fnuz"), mi300x).latency_ns
    t_ocp = origami.select(fp8("fp8_e4m3"), mi300x).latency_ns
    t_fp16 = origami.select(GemmProblem(8192, 8192, 8192, a_dtype="fp16", b_dtype="fp16", c_dtype="fp16"),
                            mi300x).latency_ns
    assert t_fnuz < 0.7 * t_ocp and t_ocp <= 1.05 * t_fp16  # OCP fp8 on gfx942 is fp16 work with half the bytes
    with pytest.raises(ValueError, match="fp8_e4m3fnuz is not an operand type"):
        origami.select(fp8("fp8_e4m3fnuz"), origami.load_profile("h200"))

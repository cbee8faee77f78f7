"""Tile tables (DESIGN.md §7, RELIABILITY.md §6 items 33-34): `python -m tritonblas table`, load_table,
the TRITONBLAS_TABLE hook, every corruption/staleness fallback, atomic export under SIGKILL and
concurrent writers, and the Inductor format read back by Inductor's own lookup code."""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import pytest

import origami
from origami.toolchain import installed_triton
from origami.select import select_many
from origami.shapes import load_shapes
from tritonblas import tables
from tritonblas.tables import TableError, TableWarning

from _cli import ROOT, assert_usage_error, cli_env, run_cli

SHAPES_YAML = """\
- {m: 4096, n: 4096, k: 4096}
- {m: 4096, n: 4096, k: 4096}          # duplicate: merged
- {m: 0, n: 128, k: 64}                # empty output: skipped
- {m: 16, n: 4096, k: 4096}
- {m: 1, n: 8192, k: 8192, a_layout: T}
- {m: 4096, n: 1000, k: 7000, a_dtype: fp16, b_dtype: fp16, c_dtype: fp16, b_layout: T}
- {m: 32768, n: 1056, k: 479, align_bytes: 2}
- {m: 512, n: 512, k: 512, batch: 8}
- {m: 2048, n: 14336, k: 4096, a_dtype: fp32, b_dtype: fp32, c_dtype: fp32}
- {m: 2048, n: 2048, k: 2048, a_dtype: tf32, b_dtype: tf32, c_dtype: fp32}
- {m: 8192, n: 8192, k: 8192, a_dtype: fp8_e4m3, b_dtype: fp8_e4m3, c_dtype: bf16}
- {m: 727, n: 577, k: 859}
- {m: 64, n: 64, k: 65536}
"""


def _problems(n: int, seed: int) -> list[origami.GemmProblem]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        d = rng.choice(["bf16", "fp16", "fp32", "bf16"])
        out.append(origami.GemmProblem(rng.randint(1, 9000), rng.randint(1, 9000), rng.randint(1, 9000), d, d, d,
                                       rng.choice("NT"), rng.choice("NT"), batch=rng.choice((1, 1, 1, 4)),
                                       align_bytes=rng.choice((16, 16, 4, 2))))
    return out


def _shapes_yaml(problems) -> str:
    return "".join(f"- {{m: {p.m}, n: {p.n}, k: {p.k}, batch: {p.batch}, a_dtype: {p.a_dtype.value}, "
                   f"b_dtype: {p.b_dtype.value}, c_dtype: {p.c_dtype.value}, a_layout: {p.a_layout.value}, "
                   f"b_layout: {p.b_layout.value}, align_bytes: {p.align_bytes}}}\n" for p in problems)


def _no_temp_files(d: Path) -> None:
    left = [p.name for p in d.iterdir() if p.name.endswith(".tmp")]
    assert not left, left


@pytest.fixture(scope="module")
def hw():
    return origami.load_profile("h200")


@pytest.fixture(scope="module")
def table_file(tmp_path_factory, hw) -> Path:
    """A valid JSON table of 200 random problems (written in-process)."""
    path = tmp_path_factory.mktemp("table") / "t.json"
    tables.write_table(tables.make_table(_problems(200, 1), hw), path)
    return path


@pytest.fixture(autouse=True)
def _fresh_hook(monkeypatch):
    monkeypatch.delenv(tables.ENV_TABLE, raising=False)
    tables.clear_cache()
    yield
    tables.clear_cache()


def _load_recording(path, **kw):
    """load_table(path) and the TableWarnings it gave."""
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        t = tables.load_table(path, **kw)
    return t, [x for x in w if issubclass(x.category, TableWarning)]


def _assert_fallback(path, *needles: str) -> str:
    """Non-strict: exactly one TableWarning naming the file (and the needles), an empty table.
    Strict: TableError (a ValueError) with the same file and reason."""
    t, w = _load_recording(path)
    assert len(w) == 1, [str(x.message) for x in w]
    msg = str(w[0].message)
    assert str(path) in msg, msg
    for n in needles:
        assert n in msg, (n, msg)
    assert len(t) == 0 and t.reason and t.get(origami.GemmProblem(4096, 4096, 4096)) is None
    with pytest.raises(TableError) as e:
        tables.load_table(path, strict=True)
    assert isinstance(e.value, ValueError)
    assert str(e.value).startswith(f"{path}: ")
    for n in needles:
        assert n in str(e.value)
    return msg


def _rewrite(src: Path, dst: Path, edit) -> Path:
    """Apply ``edit`` to the parsed document and re-sign it with the documented checksum."""
    doc = json.loads(src.read_text())
    doc.pop("checksum")
    edit(doc)
    canonical = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    doc["checksum"] = "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()
    dst.write_text(json.dumps(doc, indent=1))
    return dst


# --- generation and round trip -------------------------------------------------------------
def test_make_table_equals_select_many(hw):
    probs = _problems(1500, 2) + [origami.GemmProblem(64, 64, 1 << 16), origami.GemmProblem(16, 64, 8192)]
    table = tables.make_table(probs, hw)
    assert len(table) == len(set(probs))
    assert [table.get(p) for p in probs] == select_many(probs, hw)
    mi = origami.load_profile("mi300x")  # AMD: chiplet remap and vendor knobs in the configs
    amd = _problems(300, 3)
    amd_table = tables.make_table(amd, mi)
    assert [amd_table.get(p) for p in amd] == select_many(amd, mi)


def test_make_table_names_the_entry_without_a_matrix_rate(tmp_path):
    mi = origami.load_profile("mi350x")
    assert mi.matrix_peak_flops["tf32"] == 0  # CDNA4 has no TF32 matrix instructions
    probs = [origami.GemmProblem(64, 64, 64), origami.GemmProblem(64, 64, 64, "tf32", "tf32", "fp32")]
    with pytest.raises(ValueError, match=r"entry 1 \(64x64x64 tf32.*no matrix rate"):
        tables.make_table(probs, mi)
    shapes = tmp_path / "s.yaml"
    shapes.write_text("- {m: 64, n: 64, k: 64}\n- {m: 64, n: 64, k: 64, a_dtype: tf32, b_dtype: tf32, c_dtype: fp32}\n")
    r = run_cli("table", "--profile", "mi350x", "--shapes", str(shapes), "-o", str(tmp_path / "t.json"))
    assert_usage_error(r, str(shapes), "entry 1", "tf32")
    assert sorted(x.name for x in tmp_path.iterdir()) == ["s.yaml"]


def test_checksum_is_the_documented_canonical_sha256(table_file):
    doc = json.loads(table_file.read_text())
    stored = doc.pop("checksum")
    canonical = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    assert stored == "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()
    assert doc["format"] == tables.FORMAT and doc["format_version"] == tables.FORMAT_VERSION
    h200 = origami.load_profile("h200")
    assert doc["profile"] == {"name": "h200", "arch": "sm_90", "content_hash": h200.content_hash}
    assert doc["generator"].startswith("tritonblas ") and "triton_version" in doc and doc["created"].endswith("Z")


def test_cli_table_round_trip(tmp_path, hw):
    shapes = tmp_path / "shapes.yaml"
    shapes.write_text(SHAPES_YAML)
    out = tmp_path / "t.json"
    r = run_cli("table", "--profile", "h200", "--shapes", str(shapes), "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("\n") == 1 and "shapes/s" in r.stdout and "1 duplicate" in r.stdout, r.stdout
    assert r.stderr == ""  # no progress bar when stderr is not a terminal
    _no_temp_files(tmp_path)
    probs = [p for p in load_shapes(shapes) if p.m and p.n]
    t, w = _load_recording(out, strict=True)
    assert not w and len(t) == len(set(probs))
    for p in probs:  # write -> load -> lookup equals the model's select
        assert t.get(p) == origami.select(p, hw).config, p.describe()
    tables.set_table(t)
    assert all(tables.lookup(p, "h200") == origami.select(p, hw).config for p in probs)
    assert tables.lookup(origami.GemmProblem(4096, 4096, 4095), hw) is None  # a miss: the model decides
    assert tables.lookup(origami.GemmProblem(4096, 4096, 4096, align_bytes=4), hw) is None  # exact match only


@pytest.mark.parametrize("target", ["shapes", "shapes_via_link", "profile"])
def test_cli_table_refuses_to_replace_its_own_inputs(tmp_path, target):
    """-o naming the --shapes file (or the --profile YAML) replaced that input with the table: the
    user's shapes list / profile was gone (calibrate refuses -o on its --base and sweeps). Reproduction:
    `table --profile h200 --shapes s.yaml -o s.yaml` exited 0 and s.yaml held the JSON table."""
    shapes = tmp_path / "shapes.yaml"
    shapes.write_text(SHAPES_YAML)
    prof = tmp_path / "prof.yaml"
    prof.write_text((ROOT / "hwprofiles" / "h200.yaml").read_text())
    link = tmp_path / "link.yaml"
    link.symlink_to(shapes)
    out = {"shapes": shapes, "shapes_via_link": link, "profile": prof}[target]
    before = {f: f.read_bytes() for f in (shapes, prof)}
    r = run_cli("table", "--profile", str(prof), "--shapes", str(shapes), "-o", str(out))
    assert_usage_error(r, str(out), "--profile" if target == "profile" else "--shapes")
    assert {f: f.read_bytes() for f in (shapes, prof)} == before
    assert link.is_symlink()
    _no_temp_files(tmp_path)


def test_cli_csv_carries_the_same_table(tmp_path, table_file):
    shapes = tmp_path / "s.yaml"
    probs = _problems(100, 4)
    shapes.write_text(_shapes_yaml(probs))
    r = run_cli("table", "--profile", "h200", "--shapes", str(shapes), "-o", str(tmp_path / "t.csv"),
                "--format", "csv", "--quiet")
    assert r.returncode == 0 and r.stdout == "" and r.stderr == "", r.stderr
    text = (tmp_path / "t.csv").read_text().splitlines()
    assert text[0].startswith("# tritonblas-tile-table") and any(x.startswith("# checksum: ") for x in text)
    header = next(x for x in text if not x.startswith("#")).split(",")
    assert header[:9] == ["m", "n", "k", "batch", "a_dtype", "b_dtype", "c_dtype", "a_layout", "b_layout"]
    assert {"kind", "block_m", "num_warps", "split_k", "waves_per_eu"} <= set(header)
    c, w = _load_recording(tmp_path / "t.csv", strict=True)
    assert not w and [c.get(p) for p in probs] == select_many(probs, "h200")
    # the checksum does not depend on the format: CSV of a JSON table keeps it
    j = tables.load_table(table_file, strict=True)
    tables.write_table(j, tmp_path / "j.csv", "csv")
    jc = tables.load_table(tmp_path / "j.csv", strict=True)
    assert jc.checksum == j.checksum and dict(jc.entries) == dict(j.entries)


def test_progress_bar_only_on_a_terminal(tmp_path):
    import pty

    shapes = tmp_path / "s.yaml"
    shapes.write_text(_shapes_yaml(_problems(50, 14)))
    for quiet in (False, True):
        master, slave = pty.openpty()
        p = subprocess.Popen([sys.executable, "-m", "tritonblas", "table", "--profile", "h200", "--shapes", str(shapes),
                              "-o", str(tmp_path / "t.json"), *(["--quiet"] if quiet else [])], cwd=ROOT,
                             env=cli_env(TERM="xterm", COLUMNS="100"), stdout=subprocess.PIPE, stderr=slave)
        os.close(slave)
        chunks = []
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        out, _ = p.communicate(timeout=120)
        os.close(master)
        assert p.returncode == 0
        err = b"".join(chunks).decode(errors="replace")
        if quiet:
            assert err == "" and out == b""
        else:
            assert "selecting (h200)" in err and b"wrote " in out


# --- bad input to the CLI: exit 2, one line, nothing written -----------------------------------
_BAD_SHAPES = {
    "negative": ("- {m: 64, n: 64, k: 64}\n- {m: -4, n: 64, k: 64}\n", ("entry 1", "m must be a non-negative")),
    "non_integer": ("- {m: 64, n: 64.5, k: 64}\n", ("entry 0", "n must be")),
    "unknown_key": ("- {m: 64, n: 64, k: 64, bacth: 2}\n", ("entry 0", "unknown key", "bacth")),
    "unknown_dtype": ("- {m: 64, n: 64, k: 64, a_dtype: fp8_e4m3fnuz}\n", ("entry 0", "fp8_e4m3fnuz")),
    "missing_k": ("- {m: 64, n: 64}\n", ("entry 0", "missing key", "k")),
    "not_a_list": ("m: 64\nn: 64\nk: 64\n", ("expected a YAML list",)),
    "not_a_mapping": ("- [64, 64, 64]\n", ("entry 0", "expected a mapping")),
    "bad_yaml": ("- {m: 64, n: [\n", ("not valid YAML",)),
}


def _unwritable(d: str) -> bool:
    try:
        fd, name = tempfile.mkstemp(dir=d)
    except OSError:
        return Path(d).is_dir()
    os.close(fd)
    os.unlink(name)
    return False


def _bad_cases(tmp: Path) -> dict[str, tuple[list[str], tuple[str, ...], Path]]:
    good = tmp / "good.yaml"
    good.write_text("- {m: 64, n: 64, k: 64}\n")
    cases = {}
    for name, (text, needles) in _BAD_SHAPES.items():
        s = tmp / f"{name}.yaml"
        s.write_text(text)
        out = tmp / f"{name}.json"
        cases[f"shapes_{name}"] = (["--profile", "h200", "--shapes", str(s), "-o", str(out)], (str(s), *needles), out)
    out = tmp / "p.json"
    cases["missing_shapes_file"] = (["--profile", "h200", "--shapes", str(tmp / "nope.yaml"), "-o", str(out)],
                                    (str(tmp / "nope.yaml"), "cannot read"), out)
    cases["unknown_profile"] = (["--profile", "h900", "--shapes", str(good), "-o", str(out)],
                                ("h900", "unknown profile"), out)
    missing_dir = tmp / "no_such_dir" / "t.json"
    cases["output_dir_missing"] = (["--profile", "h200", "--shapes", str(good), "-o", str(missing_dir)],
                                   (str(missing_dir), "cannot write"), missing_dir)
    (tmp / "a_file").write_text("")
    under_file = tmp / "a_file" / "t.json"
    cases["output_parent_is_a_file"] = (["--profile", "h200", "--shapes", str(good), "-o", str(under_file)],
                                        (str(under_file), "cannot write"), under_file)
    cases["output_is_a_directory"] = (["--profile", "h200", "--shapes", str(good), "-o", str(tmp)],
                                      (str(tmp), "is a directory"), tmp / "never")
    if _unwritable("/sys"):
        sysout = Path("/sys/tritonblas-table.json")  # sysfs: no new files, even for root
        cases["output_dir_unwritable"] = (["--profile", "h200", "--shapes", str(good), "-o", str(sysout)],
                                          (str(sysout), "cannot write"), sysout)
    if os.geteuid() != 0:
        ro = tmp / "readonly"
        ro.mkdir()
        ro.chmod(0o555)
        cases["output_dir_readonly"] = (["--profile", "h200", "--shapes", str(good), "-o", str(ro / "t.json")],
                                        (str(ro / "t.json"), "cannot write"), ro / "t.json")
    cases["device_key_without_inductor"] = (["--profile", "h200", "--shapes", str(good), "-o", str(out),
                                             "--device-key", "NVIDIA H200"], ("--device-key",), out)
    return cases


@pytest.fixture(scope="module")
def bad_runs(tmp_path_factory):
    """Every bad-input case, run concurrently once (each is a separate `python -m tritonblas table`)."""
    tmp = tmp_path_factory.mktemp("bad")
    cases = _bad_cases(tmp)
    procs = {name: subprocess.Popen([sys.executable, "-m", "tritonblas", "table", *args], cwd=ROOT, env=cli_env(),
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for name, (args, _, _) in cases.items()}
    results = {}
    for name, p in procs.items():
        out, err = p.communicate(timeout=120)
        results[name] = subprocess.CompletedProcess(p.args, p.returncode, out, err)
    return tmp, cases, results


BAD_CASE_NAMES = [f"shapes_{n}" for n in _BAD_SHAPES] + [
    "missing_shapes_file", "unknown_profile", "output_dir_missing", "output_parent_is_a_file",
    "output_is_a_directory", "output_dir_unwritable", "output_dir_readonly", "device_key_without_inductor"]


@pytest.mark.parametrize("name", BAD_CASE_NAMES)
def test_cli_bad_input_exit_2_one_line_nothing_written(bad_runs, name):
    tmp, cases, results = bad_runs
    if name not in cases:
        pytest.skip("needs a non-root user (root writes to a mode-0555 directory)" if name == "output_dir_readonly"
                    else "no read-only /sys here")
    _, needles, out = cases[name]
    assert_usage_error(results[name], *needles)
    assert not out.exists()
    _no_temp_files(tmp)


# --- load_table: every way a file can be untrustworthy --------------------------------------
def test_valid_table_loads_without_warnings(table_file, hw):
    t, w = _load_recording(table_file, strict=True)
    assert not w and len(t) == 200 and t.checksum.startswith("sha256:") and not t.rejected
    assert t.profile_name == "h200" and t.profile_hash == hw.content_hash


@pytest.mark.parametrize("seed", range(6))
def test_flipped_byte_falls_back(tmp_path, table_file, seed):
    data = bytearray(table_file.read_bytes())
    rng = random.Random(seed)
    i = rng.randrange(len(data))
    data[i] ^= 1 << rng.randrange(8)
    bad = tmp_path / "flipped.json"
    bad.write_bytes(bytes(data))
    msg = _assert_fallback(bad)
    assert any(r in msg for r in ("checksum mismatch", "not valid JSON", "not a tritonblas", "not UTF-8", "stale",
                                  "duplicate key", "corrupt")), msg


@pytest.mark.parametrize("keep", [-3, 0, 0.01, 0.5, 0.99])
def test_truncated_falls_back(tmp_path, table_file, keep):
    data = table_file.read_bytes()
    bad = tmp_path / "truncated.json"
    bad.write_bytes(data[:keep] if isinstance(keep, int) else data[:int(len(data) * keep)])
    _assert_fallback(bad, "not valid JSON")


def test_truncated_csv_falls_back(tmp_path, table_file):
    full = tmp_path / "t.csv"
    tables.write_table(tables.load_table(table_file, strict=True), full, "csv")
    lines = full.read_text().splitlines(keepends=True)
    (tmp_path / "rows.csv").write_text("".join(lines[:-40]))  # whole rows lost: only the checksum can tell
    _assert_fallback(tmp_path / "rows.csv", "checksum mismatch")
    (tmp_path / "mid.csv").write_text("".join(lines)[:-17])   # cut inside a row
    _assert_fallback(tmp_path / "mid.csv", "line ")


@pytest.mark.parametrize("content, reason", [
    ('{"hello": "world"}', "not a tritonblas tile table"),
    ('[1, 2, 3]', "not a tritonblas tile table"),
    ('{"((torch.float16, [64, 64], [64, 1]), (torch.float16, [64, 64], [64, 1]))+mm": [{"template_id": "triton::mm"}]}',
     "PyTorch Inductor lookup table"),
    ("m,n,k\n1,2,3\n", "not valid JSON"),
    ("", "not valid JSON"),
])
def test_foreign_file_falls_back(tmp_path, content, reason):
    bad = tmp_path / "foreign.json"
    bad.write_text(content)
    _assert_fallback(bad, reason)


def test_binary_and_missing_files_fall_back(tmp_path):
    junk = tmp_path / "junk.json"
    junk.write_bytes(bytes(range(256)) * 4)
    _assert_fallback(junk, "not UTF-8")
    _assert_fallback(tmp_path / "absent.json", "cannot read")


def test_stale_profile_hash_falls_back(tmp_path, table_file, hw):
    bad = _rewrite(table_file, tmp_path / "stale.json", lambda d: d["profile"].update(content_hash="0123456789abcdef"))
    _assert_fallback(bad, "stale", "0123456789abcdef", hw.content_hash)
    # and a table checked against another profile explicitly
    _, w = _load_recording(table_file, profile="mi300x")
    assert len(w) == 1 and "stale" in str(w[0].message)


def test_stale_format_version_falls_back(tmp_path, table_file):
    for v in (0, 2, "1", True, 1.0):  # True == 1 and 1.0 == 1 in Python: not this format's version
        bad = _rewrite(table_file, tmp_path / f"v{v}.json", lambda d, v=v: d.update(format_version=v))
        _assert_fallback(bad, "stale", f"format_version {v!r}", f"reads {tables.FORMAT_VERSION}")


def test_stale_triton_version_falls_back(tmp_path, table_file):
    if installed_triton() is None:
        pytest.skip("triton is not installed: nothing to compare a table's Triton version with")
    bad = _rewrite(table_file, tmp_path / "triton.json", lambda d: d.update(triton_version="2.1.0"))
    _assert_fallback(bad, "stale", "Triton 2.1.0", f"Triton {installed_triton()}")
    ok = _rewrite(table_file, tmp_path / "none.json", lambda d: d.update(triton_version=None))
    assert len(tables.load_table(ok, strict=True)) == 200  # made without Triton: nothing to compare


def test_duplicate_key_falls_back(tmp_path, table_file):
    lines = table_file.read_text().splitlines()
    i = next(i for i, x in enumerate(lines) if x.startswith('  "'))
    key = lines[i].split('"')[1]
    bad = tmp_path / "dup.json"
    bad.write_text("\n".join(lines[:i + 1] + lines[i:]) + "\n")  # the same entry twice
    _assert_fallback(bad, "duplicate key", key)
    top = tmp_path / "dup_top.json"
    twice = '"format_version": 1,\n "format_version": 1,'
    top.write_text(table_file.read_text().replace('"format_version": 1,', twice))
    _assert_fallback(top, "duplicate key 'format_version'")


def test_edited_entry_fails_the_checksum(tmp_path, table_file):
    text = table_file.read_text()
    bad = tmp_path / "edited.json"
    bad.write_text(text.replace('"num_warps":8', '"num_warps":4', 1))
    _assert_fallback(bad, "checksum mismatch")


def test_bad_entries_are_dropped_with_one_warning(tmp_path, table_file):
    keys = {"96": "4096,4096,4096,1,bf16,bf16,bf16,N,N,16", "smem": "4096,4096,8192,1,bf16,bf16,bf16,N,N,16",
            "warps": "4096,4096,2048,1,bf16,bf16,bf16,N,N,16", "key": "4096,4096,4096,1,bf16,bf16,bf16,N,N,3"}
    base = {"kind": "dp", "block_m": 128, "block_n": 128, "block_k": 64, "num_warps": 8, "num_stages": 3,
            "group_m": 8, "num_chiplets": 1, "chunk": 1, "grid": 0, "split_k": 1, "waves_per_eu": None,
            "matrix_instr_nonkdim": None, "kpack": None}

    def edit(d):
        d["entries"][keys["96"]] = {**base, "block_m": 96}
        d["entries"][keys["smem"]] = {**base, "block_m": 256, "block_n": 256, "block_k": 128, "num_stages": 8}
        d["entries"][keys["warps"]] = {**base, "num_warps": 3}
        d["entries"][keys["key"]] = dict(base)

    bad = _rewrite(table_file, tmp_path / "entries.json", edit)
    t, w = _load_recording(bad)
    assert len(w) == 1, [str(x.message) for x in w]
    msg = str(w[0].message)
    assert str(bad) in msg and "dropped 4 of 204" in msg
    for k in keys.values():
        assert k in msg
    assert "block_m: must be a power of two" in msg and "shared memory" in msg and "num_warps" in msg
    assert len(t) == 200 and {k for k, _ in t.rejected} == set(keys.values())
    assert origami.GemmProblem(4096, 4096, 4096) not in t
    with pytest.raises(TableError, match=r"entry '.*': .*\(and 3 more bad entries\)") as e:
        tables.load_table(bad, strict=True)
    assert str(e.value).startswith(f"{bad}: entry ")


def test_entry_values_of_the_wrong_json_type_are_dropped_not_a_crash(tmp_path, table_file):
    """A list or mapping where a TileConfig field belongs (in a re-signed file) is one bad entry, named;
    it used to raise TypeError (unhashable) out of load_table, and so out of every matmul reading the
    table through $TRITONBLAS_TABLE. A float or bool equal to a valid int is no int, even when an
    identical valid config was seen first."""
    doc = json.loads(table_file.read_text())
    k1, k2, k3, k4 = list(doc["entries"])[:4]

    def edit(d):
        d["entries"][k4] = {**d["entries"][k1], "block_m": float(d["entries"][k1]["block_m"])}
        d["entries"][k1] = {**d["entries"][k1], "block_m": [128]}
        d["entries"][k2] = {**d["entries"][k2], "kind": ["dp"]}
        d["entries"][k3] = {**d["entries"][k3], "num_stages": {"a": 1}}

    bad = _rewrite(table_file, tmp_path / "types.json", edit)
    t, w = _load_recording(bad)
    assert len(w) == 1 and "dropped 4 of 200" in str(w[0].message), [str(x.message) for x in w]
    assert {k for k, _ in t.rejected} == {k1, k2, k3, k4} and len(t) == 196
    reasons = dict(t.rejected)
    assert "TileConfig.block_m" in reasons[k1] and "list" in reasons[k1]
    assert "TileConfig.kind" in reasons[k2] and "TileConfig.num_stages" in reasons[k3]
    assert "TileConfig.block_m: expected an int" in reasons[k4]
    with pytest.raises(TableError, match="entry .*TileConfig"):
        tables.load_table(bad, strict=True)


@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_deeply_nested_json_falls_back(tmp_path, table_file, fmt):
    """JSON nested deeper than Python's recursion limit raised RecursionError out of load_table."""
    deep = "[" * 100_000 + "]" * 100_000
    bad = tmp_path / f"deep.{fmt}"
    if fmt == "json":
        bad.write_text('{"format": "tritonblas-tile-table", "x": ' + deep + "}")
    else:
        bad.write_text(f"# tritonblas-tile-table\n# profile: {deep}\n")
    _assert_fallback(bad, "nested too deeply")


# --- the dispatcher hook: TRITONBLAS_TABLE, set_table, lookup --------------------------------
def test_env_table_read_at_call_time_and_reloaded(tmp_path, monkeypatch, table_file, hw):
    t = tables.load_table(table_file, strict=True)
    p = next(iter(t.entries))
    assert tables.lookup(p, hw) is None  # no table
    monkeypatch.setenv(tables.ENV_TABLE, str(table_file))
    assert tables.lookup(p, hw) == t.get(p)
    assert tables.active_table() is tables.active_table()  # cached while the file is unchanged
    other = tmp_path / "other.json"
    q = origami.GemmProblem(333, 444, 555)
    tables.write_table(tables.make_table([q], hw), other)
    monkeypatch.setenv(tables.ENV_TABLE, str(other))
    assert tables.lookup(p, hw) is None and tables.lookup(q, hw) == origami.select(q, hw).config
    tables.write_table(tables.make_table([p], hw), other)  # replaced in place: reloaded
    assert tables.lookup(q, hw) is None and tables.lookup(p, hw) == t.get(p)
    monkeypatch.delenv(tables.ENV_TABLE)
    assert tables.lookup(p, hw) is None


def test_env_table_made_for_a_profile_file_is_used_with_that_profile(tmp_path, monkeypatch, hw):
    """A profile loaded from a file keeps its base's name (``calibrate`` writes ``name: h200``), so a
    table made for it (``table --profile my.yaml``) records name h200 with the file's content hash.
    Through $TRITONBLAS_TABLE it was checked against the *shipped* h200, called stale and never
    used ("regenerate the table": regenerating could not help). The lookup's own profile decides."""
    src = (ROOT / "hwprofiles" / "h200.yaml").read_text()
    line = next(x for x in src.splitlines() if x.startswith("launch_overhead_ns:"))
    mine = tmp_path / "my_h200.yaml"
    mine.write_text(src.replace(line, "launch_overhead_ns: 4321.0"))
    custom = origami.load_profile(mine)
    assert custom.name == hw.name and custom.content_hash != hw.content_hash
    p = origami.GemmProblem(128, 256, 512)
    path = tables.write_table(tables.make_table([p], custom), tmp_path / "mine.json")
    monkeypatch.setenv(tables.ENV_TABLE, str(path))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert tables.lookup(p, custom) == origami.select(p, custom).config
        assert tables.lookup(p, str(mine)) == origami.select(p, custom).config
    assert not [x for x in w if issubclass(x.category, TableWarning)], [str(x.message) for x in w]
    with warnings.catch_warnings(record=True) as w:  # the shipped h200 is another profile: one warning, misses
        warnings.simplefilter("always")
        assert tables.lookup(p, hw) is None and tables.lookup(p, hw) is None
    msgs = [str(x.message) for x in w if issubclass(x.category, TableWarning)]
    assert len(msgs) == 1 and custom.content_hash in msgs[0] and hw.content_hash in msgs[0], msgs


def test_env_table_corrupt_warns_once_and_misses(tmp_path, monkeypatch, hw):
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "tritonblas-tile-table", "format_ver')
    monkeypatch.setenv(tables.ENV_TABLE, str(bad))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for _ in range(5):
            assert tables.lookup(origami.GemmProblem(64, 64, 64), hw) is None
    assert len([x for x in w if issubclass(x.category, TableWarning)]) == 1


def test_set_table_overrides_env_and_other_profiles_miss(table_file, monkeypatch, hw):
    t = tables.load_table(table_file, strict=True)
    p = next(iter(t.entries))
    monkeypatch.setenv(tables.ENV_TABLE, "/nonexistent/table.json")
    assert tables.set_table(t) is t and tables.lookup(p, hw) == t.get(p)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert tables.lookup(p, "mi300x") is None and tables.lookup(p, "mi300x") is None
    assert len(w) == 1 and issubclass(w[0].category, TableWarning) and "mi300x" in str(w[0].message)
    assert tables.set_table(table_file).get(p) == t.get(p)  # a path works too
    with pytest.warns(TableWarning, match="cannot read"):
        tables.set_table(None)  # back to the (missing) env file: one warning, then misses
    assert tables.lookup(p, hw) is None


def test_lazy_exports_and_no_torch_import(tmp_path):
    import tritonblas

    assert tritonblas.TableWarning is TableWarning and issubclass(TableWarning, UserWarning)
    assert tritonblas.load_table is tables.load_table
    code = ("import sys, tritonblas\n"
            "from tritonblas import tables\n"
            "t = tables.make_table([__import__('origami').GemmProblem(256, 256, 256)], 'h200')\n"
            "tables.load_table(tables.write_table(t, sys.argv[1]), strict=True)\n"
            "assert tritonblas.TableWarning is tables.TableWarning\n"
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'triton', 'rich'))\n"
            "assert not bad, bad\n")
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path / "t.json")], capture_output=True, text=True,
                       cwd=ROOT, env=cli_env(), timeout=120)
    assert r.returncode == 0, r.stderr


# --- atomic export ------------------------------------------------------------------------------
def _fork_writer(dest: Path, texts: list[bytes], times: int) -> int:
    """A child process that publishes ``texts`` in turn ``times`` times with AtomicFile, then exits."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # 3.12: fork() of a multi-threaded process
        pid = os.fork()
    if pid == 0:
        try:
            for i in range(times):
                with tables.AtomicFile(dest) as f:
                    f.write(texts[i % len(texts)])
        finally:
            os._exit(0)
    return pid


def _valid_or_absent(path: Path, allowed: set[bytes], loaded: set[bytes]) -> None:
    """``path`` is absent (if b"" is allowed) or byte-identical to an allowed table, which loads strictly
    and without a warning (checked once per distinct content: ``loaded``)."""
    if not path.exists():
        assert b"" in allowed, "the destination vanished"
        return
    data = path.read_bytes()
    assert data in allowed, f"partial or foreign file of {len(data)} bytes"
    if data not in loaded:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert len(tables.load_table(path, strict=True)) > 0
        loaded.add(data)


def test_writer_killed_at_random_points(tmp_path, hw):
    """100 forked writers, each publishing tables A and B in a loop, SIGKILLed after a random delay:
    the destination is always the previous valid table, A or B (or still absent), never partial."""
    a = tables.render(tables.make_table(_problems(2000, 5), hw)).encode()
    b = tables.render(tables.make_table(_problems(2000, 6), hw)).encode()
    old = tables.render(tables.make_table(_problems(50, 7), hw)).encode()
    rng = random.Random(0)
    dest = tmp_path / "t.json"
    loaded: set[bytes] = set()
    for trial in range(100):
        if trial % 4 == 0:
            dest.unlink(missing_ok=True)
            allowed = {b"", a, b}
        else:
            dest.write_bytes(old)
            allowed = {old, a, b}
        pid = _fork_writer(dest, [a, b], 1000)
        time.sleep(rng.uniform(0, 0.03))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        _valid_or_absent(dest, allowed, loaded)
        for tmp in tmp_path.glob(".t.json.*.tmp"):  # what a SIGKILLed writer cannot clean up
            tmp.unlink()


def test_cli_killed_mid_run_leaves_old_table(tmp_path, hw):
    shapes = tmp_path / "big.json"  # JSON is YAML: read by the fast path
    probs = _problems(20000, 8)
    shapes.write_text(json.dumps([{"m": p.m, "n": p.n, "k": p.k, "a_dtype": p.a_dtype.value, "b_dtype": p.b_dtype.value,
                                   "c_dtype": p.c_dtype.value, "batch": p.batch} for p in probs]))
    dest = tmp_path / "t.json"
    old = tables.render(tables.make_table(probs[:10], hw)).encode()
    rng = random.Random(1)
    for delay in (rng.uniform(0.2, 0.8), rng.uniform(0.8, 1.5), rng.uniform(1.5, 2.5)):
        dest.write_bytes(old)
        p = subprocess.Popen([sys.executable, "-m", "tritonblas", "table", "--profile", "h200", "--shapes",
                              str(shapes), "-o", str(dest)], cwd=ROOT, env=cli_env(),
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        p.send_signal(signal.SIGKILL)
        p.wait()
        if dest.read_bytes() != old:  # published before the kill (which may still have hit before exit)
            assert len(tables.load_table(dest, strict=True)) == len(set(probs))
        leftovers = list(tmp_path.glob(".t.json.*.tmp"))  # a SIGKILLed writer cannot remove its temp file
        assert p.returncode == 0 or len(leftovers) <= 1
        for tmp in leftovers:
            tmp.unlink()


def test_two_concurrent_cli_writers(tmp_path):
    dest = tmp_path / "t.json"
    runs = []
    for i, seed in enumerate((9, 10)):
        s = tmp_path / f"s{i}.yaml"
        s.write_text(_shapes_yaml(_problems(400, seed)))
        runs.append(subprocess.Popen([sys.executable, "-m", "tritonblas", "table", "--profile", "h200",
                                      "--shapes", str(s), "-o", str(dest)], cwd=ROOT, env=cli_env(),
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    for p in runs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    t = tables.load_table(dest, strict=True)
    assert len(t) == 400 and (set(t.entries) == set(_problems(400, 9)) or set(t.entries) == set(_problems(400, 10)))
    assert sorted(x.name for x in tmp_path.iterdir()) == ["s0.yaml", "s1.yaml", "t.json"]


def test_concurrent_writers_never_show_a_reader_a_partial_file(tmp_path, hw):
    a = tables.render(tables.make_table(_problems(1000, 11), hw)).encode()
    b = tables.render(tables.make_table(_problems(1000, 12), hw)).encode()
    dest = tmp_path / "t.json"
    dest.write_bytes(a)
    alive = {_fork_writer(dest, [a], 40), _fork_writer(dest, [b], 40)}
    reads = 0
    while alive:
        assert dest.read_bytes() in (a, b)
        reads += 1
        for pid in list(alive):
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                assert os.waitstatus_to_exitcode(status) == 0
                alive.discard(pid)
    assert dest.read_bytes() in (a, b) and reads > 0
    assert sorted(x.name for x in tmp_path.iterdir()) == ["t.json"]


# --- Inductor format -------------------------------------------------------------------------
def _inductor():
    """Inductor's lookup-table API (torch 2.13: torch._inductor.lookup_table.LookupTableChoices)."""
    pytest.importorskip("torch", reason="the Inductor format test needs torch")
    try:
        from torch._inductor import config as inductor_config
        from torch._inductor import ir
        from torch._inductor.kernel_inputs import MMKernelInputs
        from torch._inductor.lookup_table import LookupTableChoices
        from torch._inductor.sizevars import SizeVarAllocator
        from torch._inductor.virtualized import V
    except ImportError as e:
        pytest.skip(f"this torch has no Inductor template lookup table (torch._inductor.lookup_table): {e}")
    if not hasattr(inductor_config, "lookup_table"):
        pytest.skip("this torch has no torch._inductor.config.lookup_table")
    return inductor_config, ir, MMKernelInputs, LookupTableChoices, SizeVarAllocator, V


def _inductor_nodes(ir, torch, p: origami.GemmProblem):
    dt = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[p.a_dtype.value]
    m, n, k, b = p.m, p.n, p.k, p.batch
    a = torch.empty_strided((m, k), (k, 1) if p.a_layout.value == "N" else (1, m), dtype=dt, device="meta")
    w = torch.empty_strided((k, n), (n, 1) if p.b_layout.value == "N" else (1, k), dtype=dt, device="meta")
    if b > 1:
        a = a.unsqueeze(0).expand(b, m, k).contiguous() if p.a_layout.value == "N" else \
            torch.empty_strided((b, m, k), (m * k, 1, m), dtype=dt, device="meta")
        w = w.unsqueeze(0).expand(b, k, n).contiguous() if p.b_layout.value == "N" else \
            torch.empty_strided((b, k, n), (k * n, 1, k), dtype=dt, device="meta")
    return [ir.InputBuffer(name=name, layout=ir.FixedLayout(torch.device("cpu"), t.dtype, list(t.shape),
                                                            list(t.stride())))
            for name, t in (("mat1", a), ("mat2", w))]


def test_inductor_format_read_by_inductors_lookup(tmp_path, hw):
    inductor_config, ir, MMKernelInputs, LookupTableChoices, SizeVarAllocator, V = _inductor()
    import torch

    class OnThisMachine(LookupTableChoices):
        """Inductor's own lookup, minus its two gates that need a CUDA device (documented override points)."""

        def _get_lookup_table(self):
            return inductor_config.lookup_table.table or {}

        @staticmethod
        def _get_device_key(device):
            return "NVIDIA H200"

    probs = [origami.GemmProblem(4096, 4096, 4096), origami.GemmProblem(4096, 1000, 7000, "fp16", "fp16", "fp16"),
             origami.GemmProblem(16, 4096, 4096, a_layout="T"), origami.GemmProblem(727, 577, 859, b_layout="T"),
             origami.GemmProblem(512, 512, 512, "fp32", "fp32", "fp32", batch=8),
             origami.GemmProblem(64, 64, 65536)]
    extra = [origami.GemmProblem(8192, 8192, 8192, "fp8_e4m3", "fp8_e4m3", "bf16"),
             origami.GemmProblem(2048, 2048, 2048, "tf32", "tf32", "fp32")]  # no Inductor mm key
    shapes = tmp_path / "s.yaml"
    shapes.write_text(_shapes_yaml(probs + extra))
    for device_key in (None, "NVIDIA H200"):
        out = tmp_path / f"inductor-{device_key}.json"
        args = ["table", "--profile", "h200", "--shapes", str(shapes), "-o", str(out), "--format", "inductor"]
        r = run_cli(*args, *(["--device-key", device_key] if device_key else []))
        assert r.returncode == 0 and "2 not expressible" in r.stdout, (r.stdout, r.stderr)
        table = json.loads(out.read_text())
        assert table[tables.INDUCTOR_PROVENANCE_KEY][0]["profile"]["content_hash"] == hw.content_hash
        choices = OnThisMachine()
        with V.set_graph_handler(SimpleNamespaceGraph(SizeVarAllocator())), \
                inductor_config.patch({"lookup_table.table": table}):
            for p in probs:
                cfg = origami.select_among(p, hw, [origami.Kind.DP], chiplet_remap=False).config
                op = "bmm" if p.batch > 1 else "mm"
                ki = MMKernelInputs(_inductor_nodes(ir, torch, p))
                key = choices.make_lookup_key(ki, op, include_device=device_key is not None)
                assert key in table, (key, p.describe())
                got = choices.lookup_template_configs(ki, op, [f"triton::{op}", f"aten::{op}"],
                                                      {f"triton::{op}": "some-src-hash"})
                assert got == {f"triton::{op}": [{
                    "BLOCK_M": cfg.block_m, "BLOCK_N": cfg.block_n, "BLOCK_K": cfg.block_k, "GROUP_M": cfg.group_m,
                    "num_warps": cfg.num_warps, "num_stages": cfg.num_stages, "EVEN_K": p.k % cfg.block_k == 0,
                    "USE_FAST_ACCUM": False, "ACC_TYPE": "tl.float32", "hint_override": None}]}
            miss = MMKernelInputs(_inductor_nodes(ir, torch, origami.GemmProblem(4096, 4096, 4095)))
            assert choices.lookup_template_configs(miss, "mm", ["triton::mm"]) == {}


@pytest.mark.parametrize("name", ["h200", "mi300x"])
def test_inductor_export_picks_the_best_config_inductor_can_express(name):
    """A split-K / Stream-K / persistent / chiplet-remapped pick becomes the model's best data-parallel
    config without remap, never the same tile run data-parallel (h200: 128x1024x65536 299 -> 155 us,
    16x4096x4096 15.4 -> 10.9 us by the model's own predictions)."""
    import dataclasses

    hw = origami.load_profile(name)
    probs = [origami.GemmProblem(128, 1024, 65536), origami.GemmProblem(16, 4096, 4096),
             origami.GemmProblem(4096, 4096, 4096), origami.GemmProblem(3000, 2000, 1500),
             origami.GemmProblem(64, 64, 65536, "fp16", "fp16", "fp16")]
    table = tables.make_table(probs, hw)
    doc, _ = tables.render_inductor(table)
    rendered = {tuple(v[0][f] for f in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "num_warps", "num_stages"))
                for k, v in doc.items() if k != tables.INDUCTOR_PROVENANCE_KEY}
    moved = 0
    for p in probs:
        pick = table.entries[p]
        best_dp = origami.select_among(p, hw, [origami.Kind.DP], chiplet_remap=False)
        c = best_dp.config
        assert (c.block_m, c.block_n, c.block_k, c.group_m, c.num_warps, c.num_stages) in rendered
        if pick.kind is origami.Kind.DP and pick.num_chiplets == 1:
            assert c == pick
            continue
        moved += 1
        same_tile = dataclasses.replace(pick, kind=origami.Kind.DP, split_k=1, grid=0, num_chiplets=1, chunk=1)
        assert best_dp.latency_ns <= origami.predict(p, hw, same_tile).latency_ns
        assert best_dp.latency_ns >= origami.select(p, hw).latency_ns
    assert doc[tables.INDUCTOR_PROVENANCE_KEY][0]["dp_substituted_entries"] == moved > 0
    if name == "h200":
        p = origami.GemmProblem(128, 1024, 65536)
        same_tile = dataclasses.replace(table.entries[p], kind=origami.Kind.DP, split_k=1)
        assert origami.predict(p, hw, same_tile).latency_ns == pytest.approx(299.5e3, rel=0.01)
        assert origami.select_among(p, hw, [origami.Kind.DP], chiplet_remap=False).latency_ns == \
            pytest.approx(154.9e3, rel=0.01)


def test_inductor_export_refuses_a_foreign_profile():
    table = tables.make_table([origami.GemmProblem(16, 4096, 4096)], "h200")
    with pytest.raises(ValueError, match="profile: h100 has content hash"):
        tables.render_inductor(table, profile="h100")


class SimpleNamespaceGraph:
    """The one attribute of V.graph that KernelInputs' hinted shapes/strides read."""

    def __init__(self, sizevars):
        self.sizevars = sizevars


def test_inductor_kwargs_are_inductors_own(hw):
    """Our configs carry exactly the kwargs Inductor's own mm heuristic produces for its triton::mm
    template (CUDA), with the same values for the derived ones (ACC_TYPE, USE_FAST_ACCUM, hint_override),
    and EVEN_K means what Inductor computes; AMD knobs are the ROCm heuristic's kwarg names."""
    inductor_config, ir, MMKernelInputs, _, SizeVarAllocator, V = _inductor()
    import torch
    try:
        from torch._inductor.kernel.mm import mm_template
        from torch._inductor.template_heuristics import triton as th
        from torch._inductor.template_heuristics.registry import get_template_heuristic
    except ImportError as e:
        pytest.skip(f"this torch's Inductor has no template_heuristics registry: {e}")
    p = origami.GemmProblem(3000, 2048, 1000)
    ours = tables.render_inductor(tables.make_table([p], hw))[0]
    (cfg,) = next(v for k, v in ours.items() if k != tables.INDUCTOR_PROVENANCE_KEY)
    with V.set_graph_handler(SimpleNamespaceGraph(SizeVarAllocator())), \
            inductor_config.patch({"max_autotune": True, "max_autotune_gemm": True}):
        ki = MMKernelInputs(_inductor_nodes(ir, torch, p))
        heuristic = get_template_heuristic(mm_template.uid, "cuda", "mm")
        theirs = [c.to_kwargs() for c in heuristic.get_template_configs(ki, "mm")]
    assert theirs, "Inductor produced no mm configs"
    assert set(cfg) - {"template_id"} == set(theirs[0]), set(cfg) ^ set(theirs[0])
    for name in ("ACC_TYPE", "USE_FAST_ACCUM", "hint_override"):
        assert cfg[name] == theirs[0][name], name
    assert all(c["EVEN_K"] == (p.k % c["BLOCK_K"] == 0) for c in theirs)
    try:
        h = object.__new__(th.ROCmConfigHeuristic)  # its __init__ needs a ROCm driver
        (rocm,) = h._finalize_mm_configs([th.ROCmGemmConfig(64, 64, 32, 2, 4, group_m=8, matrix_instr_nonkdim=16,
                                                            waves_per_eu=0, kpack=1)])
    except Exception as e:  # noqa: BLE001 - any change in that private API
        pytest.skip(f"Inductor's ROCm mm heuristic cannot run here: {type(e).__name__}: {e}")
    mi = origami.load_profile("mi300x")
    (amd,) = next(v for k, v in tables.render_inductor(tables.make_table([p], mi))[0].items()
                  if k != tables.INDUCTOR_PROVENANCE_KEY)
    # hint_override: the ROCm heuristic emits it from torch 2.15 on; ours always carries it (None, the
    # default of TritonTemplate.generate's parameter of that name in every supported torch)
    assert set(amd) - {"template_id", "EVEN_K", "USE_FAST_ACCUM", "ACC_TYPE"} == \
        set(rocm.kwargs) | {"num_warps", "num_stages", "hint_override"}
    assert amd["hint_override"] is None and rocm.kwargs.get("hint_override") is None

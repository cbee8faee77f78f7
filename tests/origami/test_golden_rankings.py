"""Golden top-5 rankings per profile (the regression test for an analytical model, as upstream origami's
test_ranking_regression.py): any change to the model, the candidate space or a profile that reorders
the best configs of a landmark shape shows up here as a readable diff.

Latencies are stored rounded to 3 significant digits (readable, and stable under float noise); the
test rounds the current latencies the same way and compares them within 1e-6 relative.

Regenerate after an intended change, and review the diff of tests/origami/golden/ in the commit:

    UPDATE_GOLDEN=1 python -m pytest tests/origami/test_golden_rankings.py
    python -m pytest tests/origami/test_golden_rankings.py --update-golden

An update run rewrites the files, prints the diff and fails (it never passes), then a normal run
checks the result.
"""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pytest
import yaml

import origami
from origami.config import TileConfig
from origami.hardware import SHIPPED
from origami.problem import GemmProblem

GOLDEN = Path(__file__).resolve().parent / "golden"
TOP = 5
SHAPES: list[tuple[str, dict]] = [
    ("square_8192_bf16", dict(m=8192, n=8192, k=8192)),
    ("square_4096_fp16", dict(m=4096, n=4096, k=4096, a_dtype="fp16", b_dtype="fp16", c_dtype="fp16")),
    ("gemv_1x8192x8192", dict(m=1, n=8192, k=8192)),
    ("skinny_16x4096x4096", dict(m=16, n=4096, k=4096)),
    ("irregular_4096x1000x7000", dict(m=4096, n=1000, k=7000, align_bytes=16)),
    ("unaligned_2048x511x4099", dict(m=2048, n=511, k=4099, align_bytes=2)),
    ("dlrm_32768x1056x479", dict(m=32768, n=1056, k=479)),
    ("tall_65536x256x1024", dict(m=65536, n=256, k=1024)),
    ("fp8_128x8192x8192", dict(m=128, n=8192, k=8192, a_dtype="fp8_e4m3", b_dtype="fp8_e4m3", c_dtype="bf16")),
    ("tf32_4096", dict(m=4096, n=4096, k=4096, a_dtype="tf32", b_dtype="tf32", c_dtype="fp32")),
]


def sig3(x: float) -> float:
    return float(f"{x:.3g}")


def current(name: str) -> dict:
    hw = origami.load_profile(name)
    shapes = []
    for sid, kw in SHAPES:
        p = GemmProblem(**kw)
        entry: dict = {"id": sid, "problem": p.describe(), "args": dict(kw)}
        if hw.matrix_peak_flops[p.a_dtype.rate_key] <= 0:
            entry["unsupported"] = f"no {p.a_dtype.rate_key} matrix rate on {name}"
        else:
            entry["top"] = [{"latency_ns": sig3(e.latency_ns), "bound": e.bound, "config": e.config.to_dict()}
                            for e in origami.rank(p, hw, TOP)]
        shapes.append(entry)
    return {"profile": name, "profile_hash": hw.content_hash, "top_k": TOP, "shapes": shapes}


def write(name: str, data: dict, golden: Path = GOLDEN) -> Path:
    golden.mkdir(exist_ok=True)
    path = golden / f"{name}.yaml"
    header = (f"# Golden top-{TOP} rankings of origami on {name} (tests/origami/test_golden_rankings.py).\n"
              "# Generated: UPDATE_GOLDEN=1 python -m pytest tests/origami/test_golden_rankings.py\n"
              "# latency_ns is rounded to 3 significant digits; config is TileConfig.to_dict().\n")
    tmp = path.with_suffix(".yaml.tmp")
    tmp.write_text(header + yaml.safe_dump(data, sort_keys=False, default_flow_style=None, width=400,
                                             allow_unicode=True))
    tmp.replace(path)
    return path


def _line(e: dict) -> str:
    return f"{TileConfig.from_dict(e['config']).short():58s} {e['latency_ns']:>12.4g} ns  {e['bound']}"


def diff(golden: dict, now: dict) -> list[str]:
    """Readable differences, one block per shape: golden vs current top-k, '!' marks differing ranks."""
    out: list[str] = []
    old = {s["id"]: s for s in golden.get("shapes", [])}
    for s in now["shapes"]:
        g = old.pop(s["id"], None)
        if g is None:
            out.append(f"{s['id']}: not in the golden file")
            continue
        if g.get("args") != s["args"]:
            out.append(f"{s['id']}: problem changed: golden {g.get('args')} now {s['args']}")
            continue
        if "unsupported" in s or "unsupported" in g:
            if ("unsupported" in s) != ("unsupported" in g):
                out.append(f"{s['id']}: golden {'unsupported' if 'unsupported' in g else 'ranked'}, "
                           f"now {s.get('unsupported', 'ranked')}")
            continue
        gt, nt = g["top"], s["top"]
        rows = []
        for r in range(max(len(gt), len(nt))):
            a = gt[r] if r < len(gt) else None
            b = nt[r] if r < len(nt) else None
            same = (a is not None and b is not None and a["config"] == b["config"]
                    and math.isclose(a["latency_ns"], b["latency_ns"], rel_tol=1e-6))
            rows.append((same, r, a, b))
        if all(same for same, *_ in rows):
            continue
        out.append(f"{s['id']} ({s['problem']}):")
        for same, r, a, b in rows:
            mark = " " if same else "!"
            out.append(f" {mark}#{r + 1} golden {_line(a) if a else '-'}")
            if not same:
                out.append(f"     now    {_line(b) if b else '-'}")
    out += [f"{sid}: in the golden file, no longer tested" for sid in old]
    if out and golden.get("profile_hash") != now["profile_hash"]:
        out.insert(0, f"(the profile changed since the golden file was written: "
                      f"{golden.get('profile_hash')} -> {now['profile_hash']})")
    return out


def check(name: str, update: bool, golden: Path = GOLDEN) -> None:
    """Compare the current rankings on ``name`` with the golden file, or (``update``) rewrite it, print
    the diff and fail: an update run never passes, so a stray ``UPDATE_GOLDEN=1`` in CI cannot turn
    a changed model green."""
    now = current(name)
    path = golden / f"{name}.yaml"
    if update:
        before = yaml.safe_load(path.read_text()) if path.is_file() else {}
        changes = diff(before, now)
        write(name, now, golden)
        report = "\n".join(changes) if changes else "(no ranking changed)"
        print(f"rewrote {path}:\n{report}")
        pytest.fail(f"update mode: rewrote {path}; review the diff and rerun without "
                    f"UPDATE_GOLDEN/--update-golden:\n{report}", pytrace=False)
    assert path.is_file(), f"{path} is missing: run UPDATE_GOLDEN=1 python -m pytest {Path(__file__).name}"
    golden_data = yaml.safe_load(path.read_text())
    problems = diff(golden_data, now)
    assert not problems, (
        f"origami rankings on {name} differ from {path}:\n"
        + "\n".join(problems)
        + "\nIf the change is intended: UPDATE_GOLDEN=1 python -m pytest tests/origami/test_golden_rankings.py")


@pytest.mark.parametrize("name", SHIPPED)
def test_golden_top5_rankings(name, update_golden, fitted_toolchain):
    check(name, update_golden)


def test_update_mode_rewrites_prints_the_diff_and_fails(tmp_path, capsys):
    shutil.copy(GOLDEN / "h200.yaml", tmp_path / "h200.yaml")
    data = yaml.safe_load((tmp_path / "h200.yaml").read_text())
    top = data["shapes"][0]["top"]
    top[0], top[1] = top[1], top[0]  # an edited golden file: ranks 1 and 2 swapped
    (tmp_path / "h200.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(AssertionError, match="differ from"):
        check("h200", False, tmp_path)
    with pytest.raises(pytest.fail.Exception, match="update mode: rewrote") as ei:
        check("h200", True, tmp_path)
    assert "square_8192_bf16" in str(ei.value) and "!#1 golden" in str(ei.value), str(ei.value)
    assert "!#1 golden" in capsys.readouterr().out
    check("h200", False, tmp_path)  # the rewritten file now matches
    with pytest.raises(pytest.fail.Exception, match="no ranking changed"):
        check("h200", True, tmp_path)  # an unchanged rewrite fails too


def test_golden_files_cover_every_shipped_profile_and_nothing_else():
    assert sorted(p.stem for p in GOLDEN.glob("*.yaml")) == sorted(SHIPPED)

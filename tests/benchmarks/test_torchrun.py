"""benchmarks/sweep.py under torchrun (issue 22 item 8): two gloo ranks on CPU, kernels interpreted.

The merged CSV must hold exactly the single-process run's rows, in its order (no row lost, none
twice), keep the rows rank 0's file already had without re-timing them, and leave no shard file.
"""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks import _dist  # noqa: E402

SHAPES = """\
- {m: 16, n: 32, k: 64}
- {m: 40, n: 24, k: 48}
- {m: 8, n: 64, k: 32}
- {m: 24, n: 16, k: 16}
- {m: 32, n: 8, k: 40}
"""
TIMED = ("median_ms", "error")
TORCHRUN = (sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2")


def _env() -> dict:
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", TRITON_INTERPRET="1", PYTHONPATH=str(ROOT),
               OMP_NUM_THREADS="1", GIT_SHA="test")
    for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(k, None)
    return env


def _rows(path: Path) -> list[dict]:
    with path.open() as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def _sweep(tmp: Path, out: Path, *launcher: str) -> str:
    cmd = [*launcher, str(ROOT / "benchmarks" / "sweep.py"), "--shapes", str(tmp / "shapes.yaml"),
           "--max-configs", "2", "--out", str(out)]
    r = subprocess.run(cmd, cwd=tmp, env=_env(), capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    return r.stdout


@pytest.mark.timeout(180)
def test_sweep_under_torchrun_merges_the_single_process_rows(tmp_path):
    (tmp_path / "shapes.yaml").write_text(SHAPES)
    single, merged = tmp_path / "single.csv", tmp_path / "merged.csv"
    _sweep(tmp_path, single, sys.executable)
    ref = _rows(single)
    assert len(ref) == 10 and all(r["median_ms"] and not r["error"] for r in ref), ref
    # rank 0's file already holds the first shape: those rows must be kept as they are, not re-timed
    lines = single.read_text().splitlines(keepends=True)
    first = [i for i, line in enumerate(lines) if not line.startswith("#")][0]
    merged.write_text("".join(lines[: first + 3]))
    log = _sweep(tmp_path, merged, *TORCHRUN)
    assert "16x32x64" not in log and "40x24x48" in log, log

    got = _rows(merged)
    strip = [{k: v for k, v in r.items() if k not in TIMED} for r in got]
    assert strip == [{k: v for k, v in r.items() if k not in TIMED} for r in ref], "rows lost, doubled or reordered"
    assert got[:2] == ref[:2], "rows already in the output were timed again"
    assert all(r["median_ms"] and not r["error"] for r in got)
    header = [line for line in merged.read_text().splitlines() if line.startswith("#")]
    assert any(line.startswith("# rank=0/2 ") for line in header) and any(line.startswith("# rank=1/2 ")
                                                                          for line in header), header
    assert not list(tmp_path.glob("merged.rank*.csv")) and not list(tmp_path.glob("*.tmp")), "shard files left"


def test_world_reads_torchrun_environment():
    assert _dist.world({}) is None
    assert _dist.world({"WORLD_SIZE": "1", "RANK": "0"}) is None  # one rank: the single-process path
    w = _dist.world({"WORLD_SIZE": "4", "RANK": "3", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2"})
    assert (w.rank, w.size, w.local_rank, w.local_size, w.is_root) == (3, 4, 1, 2, False)
    assert w.shard(list(range(10))) == [3, 7]
    parts = [_dist.World(r, 3, r, 3).shard(list(range(8))) for r in range(3)]
    assert sorted(sum(parts, [])) == list(range(8))
    with pytest.raises(ValueError):
        _dist.world({"WORLD_SIZE": "2", "RANK": "2"})


@pytest.mark.timeout(180)
def test_compare_under_torchrun_merges_the_single_process_rows(tmp_path):
    (tmp_path / "shapes.yaml").write_text("".join(SHAPES.splitlines(keepends=True)[:3]))
    single, merged = tmp_path / "single.csv", tmp_path / "merged.csv"
    args = [str(ROOT / "benchmarks" / "compare.py"), "--shapes", str(tmp_path / "shapes.yaml"), "--sweep", "none",
            "--no-nvmmh", "--cpu-reps", "1", "--select-reps", "2", "--rounds", "1"]
    for launcher, out in (((sys.executable,), single), (TORCHRUN, merged)):
        r = subprocess.run([*launcher, *args, "--out", str(out)], cwd=tmp_path, env=_env(), capture_output=True,
                           text=True, timeout=120)
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    assert r.stdout.count("summary over 3 shapes") == 1, r.stdout  # rank 0 alone, over every rank's rows
    same = ("m", "n", "k", "a_layout", "our_config", "predicted_ms")
    ref, got = _rows(single), _rows(merged)
    assert len(ref) == 3 and [[r[c] for c in same] for r in got] == [[r[c] for c in same] for r in ref]
    assert all(r["ours_ms"] and r["torch_ms"] for r in got), got
    assert not list(tmp_path.glob("merged.rank*.csv")), "shard files left"


@pytest.mark.parametrize("under_torchrun", [False, True])
def test_exit_process_flushes_and_keeps_the_status(under_torchrun):
    """Under torchrun ``exit_process`` ends with ``os._exit`` (no exit-time destructors): buffered
    output must still arrive and the status must be the script's."""
    env = _env()
    if under_torchrun:
        env.update(WORLD_SIZE="2", RANK="1")
    code = ("import sys, atexit; from benchmarks._dist import exit_process\n"
            "atexit.register(lambda: print('atexit ran'))\n"
            "sys.stdout.write('buffered, no newline'); sys.stderr.write('err too'); exit_process(3)")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 3 and r.stderr.endswith("err too"), (r.returncode, r.stderr)
    assert r.stdout.startswith("buffered, no newline")
    assert ("atexit ran" in r.stdout) is (not under_torchrun), r.stdout  # os._exit skips exit handlers

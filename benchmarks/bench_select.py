"""How fast origami selects: a CPU benchmark of the model itself (no GPU needed).

    python benchmarks/bench_select.py [--profiles h200,mi300x,...] [--n 300] [--many 100000]
                                      [--skip-first-use] [--out benchmarks/results/bench_select.csv]

(a) ``select`` without its cache (``origami.select._select_uncached``: candidate scoring by branch and
    bound, then the winner's terms and TileConfig) and the bare numba ``_core.best_row``, per profile and
    shape class, over ``--n`` distinct problems each: p20 / p50 / p80 in µs per problem;
(b) ``select_many`` throughput (problems/s) on ``--many`` random problems, after a warm-up, both the
    list-of-TileConfig API and the array-level ``select_many_arrays``, and tile-table generation end to
    end (``tritonblas.tables.make_table``: duplicates merged, one TileConfig per entry; file writing
    excluded), as ``python -m tritonblas table`` times it;
(c) first use in a new process, ``import origami`` + one ``select``: with a fresh NUMBA_CACHE_DIR
    (cold: numba compiles), again with that cache (warm: loads it), and from a read-only copy of the
    package (as in a system install) with NUMBA_CACHE_DIR pointing elsewhere, cold then warm.

Every row of the CSV carries its provenance (git sha, CPU model, Python/numba/numpy versions, date).
"""

from __future__ import annotations

import argparse
import csv
import datetime
import math
import os
import platform
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numba  # noqa: E402

import origami  # noqa: E402
from origami import _core  # noqa: E402
from origami.hardware import SHIPPED  # noqa: E402
from origami.problem import GemmProblem  # noqa: E402

_select = sys.modules["origami.select"]  # the module (origami.select is the function)

LLM_NK = [(4096, 4096), (6144, 4096), (14336, 4096), (4096, 14336), (8192, 8192), (10240, 8192),
          (28672, 8192), (8192, 28672), (128256, 4096), (128256, 8192)]


@dataclass
class Row:
    benchmark: str
    profile: str
    shape_class: str
    count: int
    p20_us: float | None = None
    p50_us: float | None = None
    p80_us: float | None = None
    per_s: float | None = None
    wall_s: float | None = None
    note: str = ""
    git_sha: str = ""
    cpu: str = ""
    python: str = ""
    numba: str = ""
    numpy: str = ""
    numba_threads: int = 0
    load_1m: float = 0.0
    date: str = ""


def provenance() -> dict:
    def git(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)

    sha = git("rev-parse", "HEAD").stdout.strip() or "unknown"
    if sha != "unknown" and git("diff-index", "--quiet", "HEAD", "--").returncode != 0:
        sha += "-dirty"
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        cpu = platform.processor() or "unknown"
    return dict(git_sha=sha, cpu=f"{cpu} x{os.cpu_count()}", python=platform.python_version(),
                numba=numba.__version__, numpy=np.__version__, numba_threads=numba.config.NUMBA_NUM_THREADS,
                load_1m=round(os.getloadavg()[0], 2),  # other work on the machine skews every number
                date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"))


# --- problems -----------------------------------------------------------------------------------
def _logu(rng, lo: int, hi: int) -> int:
    return int(min(hi, max(lo, round(math.exp(rng.uniform(math.log(lo), math.log(hi)))))))


def shape_classes(n: int, seed: int = 0) -> dict[str, list[GemmProblem]]:
    """``n`` distinct bf16 problems per class."""
    rng = np.random.default_rng(seed)
    makers = {
        "square": lambda: (lambda s: GemmProblem(s, s, s))(_logu(rng, 128, 16384)) if rng.random() < 0.5 else
        GemmProblem(*(_logu(rng, 128, 16384) for _ in range(3))),
        "llm": lambda: (lambda nk: GemmProblem(_logu(rng, 1, 8192), nk[0], nk[1]))(LLM_NK[rng.integers(len(LLM_NK))]),
        "skinny": lambda: GemmProblem(_logu(rng, 1, 64), _logu(rng, 1024, 32768), _logu(rng, 1024, 32768)),
        "random": lambda: GemmProblem(_logu(rng, 1, 20000), _logu(rng, 1, 20000), _logu(rng, 1, 20000),
                                      a_layout=str(rng.choice(["N", "T"])), b_layout=str(rng.choice(["N", "T"])),
                                      batch=int(rng.integers(1, 9)), align_bytes=int(rng.choice([2, 4, 8, 16]))),
    }
    out = {}
    for name, make in makers.items():
        seen: dict[GemmProblem, None] = {}
        while len(seen) < n:
            seen[make()] = None
        out[name] = list(seen)
    return out


def random_problems(n: int, seed: int = 1) -> list[GemmProblem]:
    rng = np.random.default_rng(seed)
    dims = np.exp(rng.uniform(0, math.log(20000), (n, 3))).round().clip(1, 20000).astype(int)
    lay = rng.integers(0, 2, (n, 2))
    return [GemmProblem(int(m), int(n_), int(k), a_layout="NT"[a], b_layout="NT"[b])
            for (m, n_, k), (a, b) in zip(dims.tolist(), lay.tolist())]


# --- (a) per-problem latency --------------------------------------------------------------------
def _pcts(ns: list[int]) -> tuple[float, float, float]:
    p20, p50, p80 = np.percentile(np.array(ns) / 1e3, [20, 50, 80])
    return float(p20), float(p50), float(p80)


def bench_select(hw, classes: dict[str, list[GemmProblem]]) -> list[Row]:
    rows = []
    for cname, problems in classes.items():
        for p in problems[:3]:  # warm the per-class candidate arrays and the numba entry points
            _select._select_uncached(p, hw)
        t_sel, t_core = [], []
        for p in problems:
            t0 = time.perf_counter_ns()
            _select._select_uncached(p, hw)
            t_sel.append(time.perf_counter_ns() - t0)
        for p in problems:
            sp = _select._space(p, hw)
            args = (sp.base, sp.effs, sp.fams, sp.fam_rows, sp.gconst, p.m, p.n, p.k, p.batch, p.a_dtype.bytes,
                    p.b_dtype.bytes, p.c_dtype.bytes, p.align_bytes, sp.hv)
            t0 = time.perf_counter_ns()
            _core.best_row(*args)
            t_core.append(time.perf_counter_ns() - t0)
        sp = _select._space(problems[0], hw)
        note = f"{sp.base.shape[0]} candidate rows, {sp.fams.shape[0]} families"
        rows.append(Row("select_uncached", hw.name, cname, len(problems), *_pcts(t_sel), note=note))
        rows.append(Row("core_best_row", hw.name, cname, len(problems), *_pcts(t_core), note=note))
    return rows


# --- (b) select_many throughput -----------------------------------------------------------------
def bench_many(hw, problems: list[GemmProblem]) -> list[Row]:
    from tritonblas import tables  # imports neither torch nor triton

    origami.select_many(problems[:2000], hw)  # warm-up: compile/load, build every class's arrays
    tables.make_table(problems[:2000], hw)
    t0 = time.perf_counter()
    _select.select_many_arrays(problems, hw)
    t_arr = time.perf_counter() - t0
    t0 = time.perf_counter()
    origami.select_many(problems, hw)
    t_api = time.perf_counter() - t0
    t0 = time.perf_counter()
    table = tables.make_table(problems, hw)
    t_table = time.perf_counter() - t0
    n = len(problems)
    return [Row("select_many_arrays", hw.name, "random", n, per_s=n / t_arr, wall_s=t_arr),
            Row("select_many", hw.name, "random", n, per_s=n / t_api, wall_s=t_api,
                note="incl. TileConfig per problem"),
            Row("make_table", hw.name, "random", n, per_s=n / t_table, wall_s=t_table,
                note=f"tritonblas.tables.make_table, {len(table)} entries; no file written")]


# --- (c) first use in a new process -------------------------------------------------------------
FIRST_USE = ("import time; t0 = time.perf_counter(); import origami; t1 = time.perf_counter(); "
             "origami.select(origami.GemmProblem(4096, 4096, 4096), 'h200'); t2 = time.perf_counter(); "
             "print(t2 - t1, t1 - t0)")


def _first_use(pkg_root: Path, env: dict) -> tuple[float, float, float, str]:
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", FIRST_USE], cwd=pkg_root, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        last = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit code {proc.returncode}"
        return wall, math.nan, math.nan, f"failed: {last}"
    sel, imp = (float(v) for v in proc.stdout.split())
    return wall, sel, imp, ""


def _readonly_copy(dst: Path) -> Path:
    for pkg in ("origami", "hwprofiles"):
        shutil.copytree(ROOT / pkg, dst / pkg, ignore=shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc"))
    for p in sorted(dst.rglob("*"), reverse=True) + [dst]:
        mode = p.stat().st_mode
        p.chmod(mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    return dst


def bench_first_use() -> list[Row]:
    rows = []
    base_env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    with tempfile.TemporaryDirectory(prefix="bench_select_") as tmp:
        tmp = Path(tmp)
        cases = []
        env = dict(base_env, NUMBA_CACHE_DIR=str(tmp / "cache_a"), PYTHONPATH=str(ROOT))
        cases += [("cold: fresh NUMBA_CACHE_DIR", ROOT, env), ("warm: same NUMBA_CACHE_DIR", ROOT, env)]
        ro = _readonly_copy(tmp / "ro")
        env_ro = dict(base_env, NUMBA_CACHE_DIR=str(tmp / "cache_b"), PYTHONPATH=str(ro))
        cases += [("read-only package, cold", ro, env_ro), ("read-only package, warm", ro, env_ro)]
        home = tmp / "home"
        home.mkdir()
        env_none = dict(base_env, PYTHONPATH=str(ro), HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"))
        cases += [("read-only package, no NUMBA_CACHE_DIR", ro, env_none)]
        try:
            for label, cwd, e in cases:
                wall, sel, imp, err = _first_use(cwd, e)
                print(f"  first use, {label}: process {wall:.2f} s, import {imp:.2f} s, first select {sel:.2f} s {err}",
                      flush=True)
                rows.append(Row("first_use", "h200", label, 1, wall_s=wall, p50_us=sel * 1e6,
                                note=err or f"import {imp:.3f} s; p50_us = first select"))
        finally:
            for p in [ro, *ro.rglob("*")]:
                p.chmod(p.stat().st_mode | stat.S_IWUSR)
    return rows


# --- output -------------------------------------------------------------------------------------
def _fmt(v, spec: str) -> str:
    return "" if v is None or (isinstance(v, float) and math.isnan(v)) else format(v, spec)


def print_table(rows: list[Row]) -> None:
    head = f"{'benchmark':20s} {'profile':8s} {'class':40s} {'n':>7s} {'p20 us':>9s} {'p50 us':>9s} {'p80 us':>9s} " \
           f"{'per s':>10s} {'wall s':>8s}  note"
    print(head)
    print("-" * len(head))
    for r in rows:
        print(f"{r.benchmark:20s} {r.profile:8s} {r.shape_class:40s} {r.count:7d} {_fmt(r.p20_us, '9.1f'):>9s} "
              f"{_fmt(r.p50_us, '9.1f'):>9s} {_fmt(r.p80_us, '9.1f'):>9s} {_fmt(r.per_s, '10.0f'):>10s} "
              f"{_fmt(r.wall_s, '8.2f'):>8s}  {r.note}")


def write_csv(rows: list[Row], path: Path) -> None:
    """Write the rows atomically (``tritonblas.tables.AtomicFile``)."""
    import io

    from tritonblas.tables import AtomicFile

    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=[fl.name for fl in fields(Row)])
    w.writeheader()
    for r in rows:
        w.writerow({k: ("" if v is None else round(v, 3) if isinstance(v, float) else v)
                    for k, v in asdict(r).items()})
    path.parent.mkdir(parents=True, exist_ok=True)
    with AtomicFile(path) as f:
        f.write(buf.getvalue())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profiles", default=",".join(SHIPPED))
    ap.add_argument("--n", type=int, default=300, help="distinct problems per (profile, shape class)")
    ap.add_argument("--many", type=int, default=100_000, help="problems for the select_many throughput")
    ap.add_argument("--many-profiles", default="h200,mi300x")
    ap.add_argument("--skip-first-use", action="store_true")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "bench_select.csv")
    args = ap.parse_args(argv)

    prov = provenance()
    print(f"provenance: {prov}", flush=True)
    origami.warmup()
    rows: list[Row] = []
    classes = shape_classes(args.n)
    for name in args.profiles.split(","):
        rows += bench_select(origami.load_profile(name), classes)
        print(f"  (a) {name} done", flush=True)
    many = random_problems(args.many)
    for name in args.many_profiles.split(","):
        rows += bench_many(origami.load_profile(name), many)
        print(f"  (b) {name} done", flush=True)
    if not args.skip_first_use:
        rows += bench_first_use()
    rows = [Row(**{**asdict(r), **prov}) for r in rows]
    print()
    print_table(rows)
    write_csv(rows, args.out)
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

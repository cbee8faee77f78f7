"""NVIDIA register-staging census: compile, on this CPU, every config of origami's space for a
register-staged problem (rows under 4 bytes aligned: no cp.async, ``origami.space.register_staged``)
for sm_90, and record what ptxas allocated: registers per thread and spill bytes.

Why: on such rows Triton's pipeliner keeps the in-flight operand stages in registers, and the configs
whose kernels then spill ran 1.5-2.9x their predicted time on the H200 where the non-spilling ones ran
at 0.5-1.1x (benchmarks/data/h200/ragged.csv, 61x6485x11719). ``origami.space.check_staged_registers``
is a formula for that limit; this census is the compiler's own answer it is checked against
(tests/origami/test_space.py reads the committed CSV). No timings: compiler output only.

    python benchmarks/staged_census.py [--workers 2] [--shape M N K ...] [--out benchmarks/data/nvidia_aot/h200_staged.csv]
    python benchmarks/staged_census.py --dtype fp8_e4m3 --space     # the fp8 census: h200_staged_fp8_e4m3.csv
    python benchmarks/staged_census.py --dtype tf32 --space         # the tf32 census (rows 4 bytes aligned, no TMA)
    python benchmarks/staged_census.py --table                      # origami/spill_census.py from the census files

The committed bf16 census holds 61x6485x11719 (ragged.yaml, the default), 4096x1057x3333 (dlrm.yaml) and
31x1163x5965, training shapes. The fp8 census holds 32768x3619x771 (unaligned.yaml: N and K odd, both operands' rows
1 byte aligned), each group of the fp8 space once (``--space``: large fp8 tiles that spill take up to a minute each to
compile): 10-19 bytes of spill per multiply-add in 12 groups, among them the eight that ran 40-59x their prediction on
the H100's unaligned fp8 training rows, at most 2.9 in the rest. The tf32 census holds 2959x13x8063 and
32768x3619x771 (unaligned.yaml: rows 4 bytes aligned, which take cp.async but no TMA), each group of the tf32 space once,
on the first of them where the config is valid there.

Per config one CSV row: the problem, the config, the kernel, registers, spill stores/loads (bytes),
the formula's registers (``space.staged_registers_per_thread``) and its verdict, or the error.
Each config goes through ``tritonblas.plan.make_plan`` / ``prepare_launch`` (the launch's own
constexprs and alignment hints) and ``JITFunction.warmup`` against a stub driver reporting
``GPUTarget("cuda", 90, 32)``; ptxas (the one Triton bundles) is run with ``-v`` on the PTX.
TRITON_INTERPRET must not be set in the worker processes (it is removed there). Written atomically
after every config, with ``#`` provenance lines; resumable (recorded configs are not compiled again).
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import os
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

OUT = ROOT / "benchmarks" / "data" / "nvidia_aot" / "h200_staged.csv"
# a training shape (benchmarks/shapes/ragged.yaml): every dim ragged, rows 2 bytes aligned
PROBLEMS = ((61, 6485, 11719),)
# per input dtype: (output dtype, default problems, default census file). fp8: a training shape of
# benchmarks/shapes/unaligned.yaml with N and K odd, so both operands' rows are 1 byte aligned (the H100's unaligned
# fp8 training rows ran 40-53x their prediction in configs whose B tile holds 128 bytes a thread)
# tf32: two training shapes of unaligned.yaml (N and K odd: 4-byte-aligned rows, cp.async without TMA), a skinny
# long-K one (every kind, split-K included, is in its space) and a large one
DTYPES = {"bf16": ("bf16", PROBLEMS, OUT),
          "fp8_e4m3": ("bf16", ((32768, 3619, 771),), OUT.with_name("h200_staged_fp8_e4m3.csv")),
          "tf32": ("fp32", ((2959, 13, 8063), (32768, 3619, 771)), OUT.with_name("h200_narrow_tf32.csv"))}
# the census tables origami/spill_census.py holds: (name, input dtype). The tf32 census is evidence
# only: a traffic limit read from it moved the H100's held-out tf32 picks no better (nvidia_aot/README.md)
TABLES = (("SPILL_BYTES", "bf16"), ("SPILL_BYTES_FP8", "fp8_e4m3"))


def census_align_limit(dtype: str) -> int:
    """Rows under this many bytes aligned are the census's for ``dtype``: 16 for tf32 (cp.async without TMA), 4 for
    the others (register-staged: origami.space.register_staged)."""
    return 16 if dtype == "tf32" else 4


FIELDS = ("m", "n", "k", "dtype", "align_bytes", "config", "kind", "block_m", "block_n", "block_k", "num_warps",
          "num_stages", "formula_regs", "formula_ok", "status", "error", "kernel", "registers", "spill_stores",
          "spill_loads", "compile_s")


def ptxas_info(ptx: str) -> dict:
    import triton

    ptxas = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "ptxas"
    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "k.ptx"
        src.write_text(ptx)
        r = subprocess.run([str(ptxas), "-v", "--gpu-name", "sm_90a", str(src), "-o", str(Path(d) / "k.cubin")],
                           capture_output=True, text=True, timeout=600)
    text = r.stderr + r.stdout
    regs = re.search(r"Used (\d+) registers", text)
    spill = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", text)
    if regs is None or spill is None:
        raise RuntimeError(f"ptxas -v said: {' '.join(text.split())[:300]}")
    return dict(registers=int(regs.group(1)), spill_stores=int(spill.group(1)), spill_loads=int(spill.group(2)))


_STUB = [False]  # the stub driver is active in this worker process
_TORCH_DTYPES = {"bf16": "bfloat16", "fp8_e4m3": "float8_e4m3fn", "tf32": "float32", "fp32": "float32"}


def compile_one(job: tuple) -> dict:
    """One row: compile ``cfg`` (TileConfig fields) for (m, n, k) NN on sm_90 and ask ptxas. ``job`` is
    ((m, n, k), fields) for bf16 or ((m, n, k), fields, dtype) with a key of DTYPES."""
    os.environ.pop("TRITON_INTERPRET", None)
    import torch
    from triton.backends.compiler import GPUTarget

    import origami
    from tritonblas import _aot
    from tritonblas import plan as P

    (m, n, k), fields, *rest = job
    dtype = rest[0] if rest else "bf16"
    tin, tout = (getattr(torch, _TORCH_DTYPES[d]) for d in (dtype, DTYPES[dtype][0]))
    if not _STUB[0]:
        _aot.use_target(GPUTarget("cuda", 90, 32))
        _STUB[0] = True
    hw = origami.load_profile("h200")
    cfg = origami.TileConfig(**fields)
    a = torch.empty(m, k, dtype=tin)
    b = torch.empty(k, n, dtype=tin)
    out = torch.empty(m, n, dtype=tout)
    t0 = time.time()
    row = dict(status="ok", error="", kernel="", registers="", spill_stores="", spill_loads="")
    try:
        prob = P.problem_from_tensors(a, b, out)
        if dtype == "tf32":  # fp32 tensors, read as tf32 (the problem's dtype says which MMA)
            prob = dataclasses.replace(prob, a_dtype="tf32", b_dtype="tf32")
        plan = P.make_plan(cfg, prob, hw)
        prepared = _aot.prepare_on_cpu(plan, a, b, out)
        compiled = prepared.kernel.warmup(*prepared.args, grid=prepared.grid, **prepared.kwargs)
        row.update(kernel=prepared.kernel.fn.__name__, **ptxas_info(compiled.asm["ptx"]))
    except Exception as e:  # noqa: BLE001 - recorded per config
        row.update(status="error", error=" ".join(f"{type(e).__name__}: {e}".split())[:300])
    row["compile_s"] = f"{time.time() - t0:.1f}"
    return row


def jobs(problems=PROBLEMS, dtype: str = "bf16") -> list[tuple]:
    """(problem dims, TileConfig fields, formula registers, formula verdict, name) of every (kind, tile,
    warps, stages) the enumerator's grid offers (``origami.enumerate``'s tiles, BLOCK_Ks, warps and
    stages, the shared-memory, instruction and accumulator-register predicates) for the problems (``dtype`` NN,
    rows of the census's alignment, :func:`census_align_limit`; a config invalid for a problem is not its job), on
    both sides of the staging formula's limit."""
    from dataclasses import replace

    import origami
    from origami import Kind, TileConfig, space
    from origami import enumerate as E

    hw = origami.load_profile("h200")
    kinds = {Kind.DP: {}, Kind.PERSISTENT: dict(grid=hw.compute["compute_units"]),
             Kind.STREAMK: dict(grid=hw.compute["compute_units"]), Kind.SPLITK: dict(split_k=4, group_m=1)}
    out = []
    for m, n, k in problems:
        p = problem(m, n, k, dtype)
        assert p.align_bytes < census_align_limit(dtype) and (dtype == "tf32" or space.register_staged(p, hw)), \
            p.describe()
        for bm, bn in E._TILES:
            for bk in E._block_ks(p.a_dtype):
                for w in E._warps(bm, bn):
                    for s in (3, 4):
                        tile = TileConfig(Kind.DP, bm, bn, bk, w, s, 8)
                        if any(f(tile, p, hw) for f in (space.check_smem, space.check_instr, space.check_vendor)):
                            continue
                        for kind, kw in kinds.items():
                            c = replace(tile, kind=kind, **kw)
                            if space.check_registers(c, p, hw) is not None or space.violations(c, p, hw):
                                continue  # (a config invalid for this problem, e.g. a tile over its split count)
                            fields = dict(kind=kind.value, block_m=bm, block_n=bn, block_k=bk, num_warps=w,
                                          num_stages=s, **{"group_m": c.group_m, **kw})
                            out.append(((m, n, k), fields, space.staged_registers_per_thread(c, p, hw),
                                        space.check_staged_registers(c, p, hw) is None, c.short()))
    return out


def _group(fields: dict) -> tuple:
    """(kind, BLOCK_M, BLOCK_N, BLOCK_K, warps) of a job's TileConfig fields or of a CSV row (strings)."""
    return (fields["kind"], *(int(fields[k]) for k in ("block_m", "block_n", "block_k", "num_warps")))


def one_per_group(jobs_: list, groups) -> list:
    """The first job of each (kind, tile, warps) group in ``groups``: its fewest stages (:func:`jobs` lists 3 before 4)."""
    seen: set = set()
    out = []
    for j in jobs_:
        g = _group(j[1])
        if g in groups and g not in seen:
            seen.add(g)
            out.append(j)
    return out


def space_groups(problems, dtype: str) -> dict:
    """{(kind, BLOCK_M, BLOCK_N, BLOCK_K, warps): None} of origami's candidates for ``problems`` (h100's and h200's
    space with model.staged_slowdown_limit off) and of every recorded training sweep row (benchmarks/data/*/*.csv,
    the held-out folders left out) of ``dtype`` whose rows are under 4 bytes aligned."""
    import origami
    from origami import space

    out: dict = {}
    for name in ("h100", "h200"):
        hw = origami.load_profile(name).replace_model(staged_slowdown_limit=0.0)
        for dims in problems:
            for c in origami.candidates(problem(*dims, dtype), hw):
                out[space.spill_group(c)] = None
    for f in sorted(f for f in (ROOT / "benchmarks" / "data").glob("*/*.csv") if not f.parent.name.endswith("_heldout")):
        with f.open() as fh:
            for r in csv.DictReader(line for line in fh if not line.startswith("#")):
                if r.get("a_dtype") == dtype and r.get("align_bytes") and int(r["align_bytes"]) < census_align_limit(dtype) \
                        and r.get("kind"):
                    out[_group(r)] = None
    return out


def problem(m: int, n: int, k: int, dtype: str = "bf16"):
    """The census's problem: ``dtype`` inputs (DTYPES' output dtype), row-major, contiguous rows' alignment."""
    from origami import GemmProblem

    out = DTYPES[dtype][0]
    return GemmProblem(m, n, k, a_dtype=dtype, b_dtype=dtype, c_dtype=out,
                       align_bytes=GemmProblem.contiguous_align_bytes(m, n, k, dtype, dtype, out))


TABLE = ROOT / "origami" / "spill_census.py"


def _table(census: Path) -> tuple[dict, int]:
    """({(kind, BLOCK_M, BLOCK_N, BLOCK_K, warps): spill bytes}, compiled rows) of one census file; a config that
    spills differently on two of its rows (another shape or stages) is an error."""
    with census.open() as f:
        rows = [r for r in csv.DictReader(line for line in f if not line.startswith("#")) if r["status"] == "ok"]
    table: dict = {}
    for r in rows:
        key = _group(r)
        b = int(r["spill_stores"]) + int(r["spill_loads"])
        if table.setdefault(key, b) != b:
            raise SystemExit(f"{census}: {key} spills {table[key]} and {b} bytes on different rows")
    return table, len(rows)


def table_source() -> str:
    """The source of origami/spill_census.py: each census's spill bytes (stores + loads, per thread) of every compiled
    (kind, BLOCK_M, BLOCK_N, BLOCK_K, warps), 0 where it compiled clean (the same on every shape and at any stages:
    checked here), one table per operand width (TABLES): SPILL_BYTES (2-byte, the bf16 census) and SPILL_BYTES_FP8
    (1-byte, the fp8_e4m3 census)."""
    parts = []
    for name, dtype in TABLES:
        path = DTYPES[dtype][2]
        table, n = _table(path)
        body = "\n".join(f"    ({k!r}, {bm}, {bn}, {bk}, {w}): {b}," for (k, bm, bn, bk, w), b in sorted(table.items()))
        parts.append((name, path, n, len(table), body))
    sources = "; ".join(f"{name} from {path.relative_to(ROOT).as_posix()} ({n} compiled rows, {d} distinct configs)"
                        for name, path, n, d, _ in parts)
    tables = "\n\n".join(f"{name} = {{\n{body}\n}}" for name, _, _, _, body in parts)
    return (f'''"""The sm_90 compile census's spill bytes per thread (ptxas -v: spill stores + spill loads) of the
register-staged kernels (rows under 4 bytes aligned, origami.space.register_staged): (kind, BLOCK_M, BLOCK_N,
BLOCK_K, warps) -> bytes, 0 where it compiled clean; a config it did not compile is absent. One table per operand
width: SPILL_BYTES for 2-byte operands (bf16), SPILL_BYTES_FP8 for 1-byte (fp8_e4m3). Compiler output, no timings.
Generated by `python benchmarks/staged_census.py --table`: {sources}; Triton 3.6. tests/origami/test_space.py checks
it against those files. Read through origami.space.census_spill_traffic."""

__all__ = [{", ".join(f'"{name}"' for name, _ in TABLES)}]

{tables}
''')


def write_table() -> None:
    from tritonblas.tables import AtomicFile

    src = table_source()
    with AtomicFile(TABLE) as f:
        f.write(src)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--dtype", default="bf16", choices=sorted(DTYPES),
                    help="the operands' dtype (default bf16; its census file and problem are DTYPES')")
    ap.add_argument("--out", type=Path, default=None, help="the census file (default: the dtype's, DTYPES)")
    ap.add_argument("--limit", type=int, default=0, help="at most this many new configs (0: all)")
    ap.add_argument("--shape", type=int, nargs=3, action="append", metavar=("M", "N", "K"),
                    help="a problem whose rows are the census's (under 4 bytes aligned; tf32 under 16) (repeatable; "
                         "default: the dtype's, DTYPES)")
    ap.add_argument("--kinds", nargs="+", default=None, choices=("dp", "persistent", "streamk", "splitk"),
                    help="only these kernels (default: all four)")
    ap.add_argument("--space", action="store_true",
                    help="only the (kind, tile, warps) groups that origami's space offers for the problems (h100 and "
                         "h200 profiles) or that a recorded sweep timed on a register-staged row of the dtype, each at "
                         "its fewest stages (fp8: large tiles take minutes each to compile)")
    ap.add_argument("--table", action="store_true",
                    help=f"write {TABLE.relative_to(ROOT)} (origami's spill-bytes tables) from the census files, and exit")
    args = ap.parse_args(argv)
    args.out = args.out or DTYPES[args.dtype][2]
    if args.table:
        write_table()
        print(f"wrote {TABLE.relative_to(ROOT)} from "
              f"{', '.join(DTYPES[d][2].relative_to(ROOT).as_posix() for _, d in TABLES)}")
        return 0
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from _harness import provenance, write_csv

    rows = []
    if args.out.exists():  # resume: configs already recorded are not compiled again
        with args.out.open() as f:
            rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
    done = {(int(r["m"]), int(r["n"]), int(r["k"]), r["config"]) for r in rows}
    problems = tuple(map(tuple, args.shape)) if args.shape else DTYPES[args.dtype][1]
    todo = jobs(problems, args.dtype)
    if args.space:
        todo = one_per_group(todo, space_groups(problems, args.dtype))
    todo = [j for j in todo if (*j[0], j[4]) not in done and (args.kinds is None or j[1]["kind"] in args.kinds)]
    if args.limit:
        todo = todo[:args.limit]
    print(f"{len(todo)} configs to compile ({len(rows)} recorded)", flush=True)
    prov = provenance()
    with ProcessPoolExecutor(args.workers) as ex:
        for (dims, fields, fregs, fok, short), r in zip(todo, ex.map(compile_one, [(d, f, args.dtype) for d, f, *_ in todo])):
            rows.append(dict(m=dims[0], n=dims[1], k=dims[2], dtype=args.dtype,
                             align_bytes=problem(*dims, args.dtype).align_bytes, config=short,
                             formula_regs=fregs, formula_ok=int(fok), **{k: fields[k] for k in (
                                 "kind", "block_m", "block_n", "block_k", "num_warps", "num_stages")}, **r))
            write_csv(args.out, rows, FIELDS, prov)  # atomic, after every config: an interrupted run resumes
            print(f"{short:40s} {r['status']} regs {r['registers']} spill {r['spill_stores']} "
                  f"(formula {fregs}, {'in' if fok else 'out'}) {r['error'][:80]}", flush=True)
    print(f"{len(rows)} rows in {args.out}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

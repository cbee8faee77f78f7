"""NVIDIA register-staging census: compile, on this CPU, every config of origami's space for a
register-staged problem (rows under 4 bytes aligned: no cp.async, ``origami.space.register_staged``)
for sm_90, and record what ptxas allocated: registers per thread and spill bytes.

Why: on such rows Triton's pipeliner keeps the in-flight operand stages in registers, and the configs
whose kernels then spill ran 1.5-2.9x their predicted time on the H200 where the non-spilling ones ran
at 0.5-1.1x (benchmarks/data/h200/ragged.csv, 61x6485x11719). ``origami.space.check_staged_registers``
is a formula for that limit; this census is the compiler's own answer it is checked against
(tests/origami/test_space.py reads the committed CSV). No timings: compiler output only.

    python benchmarks/staged_census.py [--workers 2] [--shape M N K ...] [--out benchmarks/data/nvidia_aot/h200_staged.csv]

The committed census holds 61x6485x11719 (ragged.yaml, the default) and 4096x1057x3333 (dlrm.yaml), both
training shapes.

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
FIELDS = ("m", "n", "k", "dtype", "align_bytes", "config", "kind", "block_m", "block_n", "block_k", "num_warps",
          "num_stages", "formula_regs", "formula_ok", "status", "error", "kernel", "registers", "spill_stores",
          "spill_loads", "compile_s")


def _ptxas_info(ptx: str) -> dict:
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


def compile_one(job: tuple) -> dict:
    """One row: compile ``cfg`` (TileConfig fields) for (m, n, k) bf16 NN on sm_90 and ask ptxas."""
    os.environ.pop("TRITON_INTERPRET", None)
    import torch
    from triton.backends.compiler import GPUTarget

    import origami
    from tritonblas import _aot
    from tritonblas import plan as P

    (m, n, k), fields = job
    if not _STUB[0]:
        _aot.use_target(GPUTarget("cuda", 90, 32))
        _STUB[0] = True
    hw = origami.load_profile("h200")
    cfg = origami.TileConfig(**fields)
    a = torch.empty(m, k, dtype=torch.bfloat16)
    b = torch.empty(k, n, dtype=torch.bfloat16)
    out = torch.empty(m, n, dtype=torch.bfloat16)
    t0 = time.time()
    row = dict(status="ok", error="", kernel="", registers="", spill_stores="", spill_loads="")
    try:
        plan = P.make_plan(cfg, P.problem_from_tensors(a, b, out), hw)
        prepared = _aot.prepare_on_cpu(plan, a, b, out)
        compiled = prepared.kernel.warmup(*prepared.args, grid=prepared.grid, **prepared.kwargs)
        row.update(kernel=prepared.kernel.fn.__name__, **_ptxas_info(compiled.asm["ptx"]))
    except Exception as e:  # noqa: BLE001 - recorded per config
        row.update(status="error", error=" ".join(f"{type(e).__name__}: {e}".split())[:300])
    row["compile_s"] = f"{time.time() - t0:.1f}"
    return row


def jobs(problems=PROBLEMS) -> list[tuple]:
    """(problem dims, TileConfig fields, formula registers, formula verdict, name) of every (kind, tile,
    warps, stages) the enumerator's grid offers (``origami.enumerate``'s tiles, BLOCK_Ks, warps and
    stages, the shared-memory, instruction and accumulator-register predicates) for the PROBLEMS (bf16
    NN, 2-byte aligned rows), on both sides of the staging formula's limit."""
    from dataclasses import replace

    import origami
    from origami import GemmProblem, Kind, TileConfig, space
    from origami import enumerate as E

    hw = origami.load_profile("h200")
    kinds = {Kind.DP: {}, Kind.PERSISTENT: dict(grid=hw.compute["compute_units"]),
             Kind.STREAMK: dict(grid=hw.compute["compute_units"]), Kind.SPLITK: dict(split_k=4, group_m=1)}
    out = []
    for m, n, k in problems:
        p = GemmProblem(m, n, k, a_dtype="bf16", b_dtype="bf16", c_dtype="bf16",
                        align_bytes=GemmProblem.contiguous_align_bytes(m, n, k, "bf16", "bf16", "bf16"))
        assert space.register_staged(p, hw), p.describe()
        for bm, bn in E._TILES:
            for bk in E._block_ks(p.a_dtype):
                for w in E._warps(bm, bn):
                    for s in (3, 4):
                        tile = TileConfig(Kind.DP, bm, bn, bk, w, s, 8)
                        if any(f(tile, p, hw) for f in (space.check_smem, space.check_instr, space.check_vendor)):
                            continue
                        for kind, kw in kinds.items():
                            c = replace(tile, kind=kind, **kw)
                            if space.check_registers(c, p, hw) is not None:
                                continue
                            fields = dict(kind=kind.value, block_m=bm, block_n=bn, block_k=bk, num_warps=w,
                                          num_stages=s, **{"group_m": c.group_m, **kw})
                            out.append(((m, n, k), fields, space.staged_registers_per_thread(c, p, hw),
                                        space.check_staged_registers(c, p, hw) is None, c.short()))
    return out


TABLE = ROOT / "origami" / "spill_census.py"


def table_source(census: Path) -> str:
    """The source of origami/spill_census.py: the census's spill bytes (stores + loads, per thread) of every compiled
    (kind, BLOCK_M, BLOCK_N, BLOCK_K, warps), 0 where it compiled clean (the same on every shape and at any stages:
    checked here)."""
    with census.open() as f:
        rows = [r for r in csv.DictReader(line for line in f if not line.startswith("#")) if r["status"] == "ok"]
    table: dict = {}
    for r in rows:
        key = (r["kind"], int(r["block_m"]), int(r["block_n"]), int(r["block_k"]), int(r["num_warps"]))
        b = int(r["spill_stores"]) + int(r["spill_loads"])
        if table.setdefault(key, b) != b:
            raise SystemExit(f"{census}: {key} spills {table[key]} and {b} bytes on different rows")
    body = "\n".join(f"    ({k!r}, {bm}, {bn}, {bk}, {w}): {b}," for (k, bm, bn, bk, w), b in sorted(table.items()))
    return (f'''"""The sm_90 compile census's spill bytes per thread (ptxas -v: spill stores + spill loads) of the
register-staged kernels (rows under 4 bytes aligned, origami.space.register_staged): (kind, BLOCK_M, BLOCK_N,
BLOCK_K, warps) -> bytes, 0 where it compiled clean; a config it did not compile is absent. Compiler output, no
timings.
Generated by `python benchmarks/staged_census.py --table` from {census.relative_to(ROOT).as_posix()}
({len(rows)} compiled rows, {len(table)} distinct configs, Triton 3.6); tests/origami/test_space.py checks it
against that file. Read through origami.space.census_spill_traffic."""

__all__ = ["SPILL_BYTES"]

SPILL_BYTES = {{
{body}
}}
''')


def write_table(census: Path) -> None:
    from tritonblas.tables import AtomicFile

    src = table_source(census)
    with AtomicFile(TABLE) as f:
        f.write(src)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--limit", type=int, default=0, help="at most this many new configs (0: all)")
    ap.add_argument("--shape", type=int, nargs=3, action="append", metavar=("M", "N", "K"),
                    help="a bf16 problem whose rows are under 4 bytes aligned (repeatable; default: PROBLEMS)")
    ap.add_argument("--kinds", nargs="+", default=None, choices=("dp", "persistent", "streamk", "splitk"),
                    help="only these kernels (default: all four)")
    ap.add_argument("--table", action="store_true",
                    help=f"write {TABLE.relative_to(ROOT)} (origami's spill-bytes table) from the census --out, and exit")
    args = ap.parse_args(argv)
    if args.table:
        write_table(args.out)
        print(f"wrote {TABLE.relative_to(ROOT)} from {args.out}")
        return 0
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from _harness import provenance, write_csv

    rows = []
    if args.out.exists():  # resume: configs already recorded are not compiled again
        with args.out.open() as f:
            rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
    done = {(int(r["m"]), int(r["n"]), int(r["k"]), r["config"]) for r in rows}
    todo = [j for j in jobs(tuple(map(tuple, args.shape)) if args.shape else PROBLEMS) if (*j[0], j[4]) not in done
            and (args.kinds is None or j[1]["kind"] in args.kinds)]
    if args.limit:
        todo = todo[:args.limit]
    print(f"{len(todo)} configs to compile ({len(rows)} recorded)", flush=True)
    prov = provenance()
    with ProcessPoolExecutor(args.workers) as ex:
        for (dims, fields, fregs, fok, short), r in zip(todo, ex.map(compile_one, [(d, f) for d, f, *_ in todo])):
            rows.append(dict(m=dims[0], n=dims[1], k=dims[2], dtype="bf16", align_bytes=2, config=short,
                             formula_regs=fregs, formula_ok=int(fok), **{k: fields[k] for k in (
                                 "kind", "block_m", "block_n", "block_k", "num_warps", "num_stages")}, **r))
            write_csv(args.out, rows, FIELDS, prov)  # atomic, after every config: an interrupted run resumes
            print(f"{short:40s} {r['status']} regs {r['registers']} spill {r['spill_stores']} "
                  f"(formula {fregs}, {'in' if fok else 'out'}) {r['error'][:80]}", flush=True)
    print(f"{len(rows)} rows in {args.out}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

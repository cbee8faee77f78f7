"""What the fp8 accumulator's promotion costs in registers: compile, on this CPU, origami's top-ranked fp8 configs
for a shape for sm_90 with the promotion interval each mode gives, and record what ptxas allocated (registers per
thread, spill bytes). No GPU and no timings: compiler output only.

    python benchmarks/fp8_promote_census.py [--shape 8192 8192 8192] [--top 8] [--modes 32 128 fast]
        [--profile h200] [--recipe none|row] [--out benchmarks/results/fp8_promote_census.csv]
    python benchmarks/fp8_promote_census.py --space    # every spill group of the space, the shipped interval
    python benchmarks/fp8_promote_census.py --table    # origami/promoted_spill.py from that file

``--space`` compiles one config per spill group (``origami.space.spill_group``: kind, tile, warps; the stages, GROUP_M
and grid do not change what ptxas spills: the top-40 census above shows s3 and s4 alike) of the fp8 candidate
space of SPACE_PROBES (scaled_mm's layout, 16-byte aligned: a large square for the data-parallel, persistent and
Stream-K groups, a short-M long-K shape for split-K's), at the shipped interval with row-wise scales, into
SPACE_OUT; ``--table`` turns it into origami/promoted_spill.py, which ``model.fp8_promoted_spill_limit`` reads.

Why (issue 18): without fast accumulation the kernels promote the wgmma's reduced-precision sum into the fp32
accumulator every ``tritonblas.plan.fp8_promote_k`` of K, which keeps a second accumulator tile in registers. On an
H100 (session 43) promoting every 128 K instead of 32 took origami's fp8 picks from 0.715x to 0.887x
``torch._scaled_mm``, and fast accumulation reached 0.939x: this census says how much of what is left is spilling.
The problem is ``scaled_mm``'s: e4m3 A (M, K) row-major, B (K, N) K-major (its transpose contiguous), bf16 out,
16-byte-aligned rows. ``fast`` compiles with ``fp8_fast_accum`` (no promotion); a number N compiles with
``plan._FP8_PROMOTE_K = N`` (capped at each tile's BLOCK_K, as the launch caps it). TRITON_INTERPRET must not be
set (it is removed here). Written atomically with ``#`` provenance lines."""

from __future__ import annotations

import argparse
import csv
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

FIELDS = ("m", "n", "k", "mode", "recipe", "rank", "config", "max_imprecise", "registers", "spill_stores",
          "spill_loads", "predicted_us", "error")
DEFAULT_OUT = ROOT / "benchmarks" / "results" / "fp8_promote_census.csv"
SPACE_OUT = ROOT / "benchmarks" / "data" / "nvidia_aot" / "h200_promoted_fp8_e4m3.csv"
SPACE_FIELDS = ("m", "n", "k", "kind", "block_m", "block_n", "block_k", "num_warps", "config", "max_imprecise",
                "registers", "spill_stores", "spill_loads", "error")  # m, n, k: the probe that offered the group
SPACE_PROBES = ((8192, 8192, 8192), (128, 10240, 8192))
TABLE = ROOT / "origami" / "promoted_spill.py"


def mode_value(text: str) -> "int | None":
    """``fast`` -> None (no promotion); else the promotion interval, a power of two >= 32 (Triton leaves wgmma below
    32: tritonblas.plan's note)."""
    if text == "fast":
        return None
    try:
        v = int(text)
    except ValueError:
        raise ValueError(f"--modes: {text!r} is neither 'fast' nor an interval") from None
    if v < 32 or v & (v - 1):
        raise ValueError(f"--modes: {v} is not a power of two of at least 32")
    return v


def _sm90_operands(m: int, n: int, k: int, recipe: str) -> tuple:
    """(a, b, out, scale kwargs, problem) of the (m, n, k) scaled_mm problem on the CPU, with the compiler set to
    sm_90 and TRITON_INTERPRET removed; ``recipe`` ``row``: row-wise scales (scale_a over M, scale_b over N)."""
    os.environ.pop("TRITON_INTERPRET", None)
    import torch
    from triton.backends.compiler import GPUTarget

    from tritonblas import _aot
    from tritonblas import plan as P

    _aot.use_target(GPUTarget("cuda", 90, 32))
    a = torch.empty(m, k, dtype=torch.float8_e4m3fn)
    b = torch.empty(n, k, dtype=torch.float8_e4m3fn).t()
    out = torch.empty(m, n, dtype=torch.bfloat16)
    scales = {} if recipe == "none" else dict(scale_a=torch.empty(m), scale_b=torch.empty(n))
    return a, b, out, scales, P.problem_from_tensors(a, b, out)


def _compiled(row: dict, cfg, prob, hw, a, b, out, **launch) -> dict:
    """``row`` with what ptxas allocated for ``cfg``'s kernel (registers, spills, the promotion interval bound), or
    the compile's error."""
    from benchmarks.staged_census import ptxas_info
    from tritonblas import _aot
    from tritonblas import plan as P

    try:
        prep = _aot.prepare_on_cpu(P.make_plan(cfg, prob, hw), a, b, out, **launch)
        compiled = prep.kernel.warmup(*prep.args, grid=prep.grid, **prep.kwargs)
        row["max_imprecise"] = prep.kwargs.get("MAX_IMPRECISE")
        row.update(ptxas_info(compiled.asm["ptx"]))
    except Exception as e:  # noqa: BLE001 - recorded per config
        row["error"] = " ".join(f"{type(e).__name__}: {e}".split())[:300]
    return row


def census(m: int, n: int, k: int, top: int, modes: list, profile: str = "h200", recipe: str = "none") -> list[dict]:
    """One row per (mode, config) for origami's ``top`` ranked fp8 configs of the (m, n, k) scaled_mm problem;
    ``recipe`` ``row``: with scaled_mm's row-wise scales in the epilogue (scale_a over M, scale_b over N), ``none``:
    the plain kernel the sweeps time."""
    import origami
    from tritonblas import plan as P

    a, b, out, scales, prob = _sm90_operands(m, n, k, recipe)
    hw = origami.load_profile(profile)
    ranked = origami.rank(prob, hw, k=top)
    saved, rows = P._FP8_PROMOTE_K, []
    try:
        for mode in modes:
            if mode is not None:
                P._FP8_PROMOTE_K = mode
            for i, est in enumerate(ranked):
                row = dict(m=m, n=n, k=k, mode="fast" if mode is None else mode, recipe=recipe, rank=i + 1,
                           config=est.config.short(), predicted_us=est.latency_ns / 1e3, error="")
                rows.append(_compiled(row, est.config, prob, hw, a, b, out, fp8_fast_accum=mode is None, **scales))
    finally:
        P._FP8_PROMOTE_K = saved
    return rows


def space_census(profile: str = "h200") -> list[dict]:
    """One row per spill group of the fp8 space of SPACE_PROBES (module docstring), compiled at the shipped
    interval with row-wise scales."""
    import origami
    from origami.space import spill_group

    hw = origami.load_profile(profile).replace_model(fp8_promoted_spill_limit=0.0)  # the space the rule cuts from
    rows, seen = [], set()
    for m, n, k in SPACE_PROBES:
        a, b, out, scales, prob = _sm90_operands(m, n, k, "row")
        for cfg in sorted(origami.candidates(prob, hw), key=lambda c: (spill_group(c), c.num_stages, c.group_m)):
            group = spill_group(cfg)
            if group in seen:
                continue
            seen.add(group)
            row = dict(m=m, n=n, k=k, **dict(zip(SPACE_FIELDS[3:8], group)), config=cfg.short(), error="")
            rows.append(_compiled(row, cfg, prob, hw, a, b, out, **scales))
    return rows


def table_source(path: Path = SPACE_OUT) -> str:
    """origami/promoted_spill.py's text from the space census file: spill stores + loads per thread per group."""
    with open(path) as f:
        rows = [r for r in csv.DictReader(line for line in f if not line.startswith("#")) if not r["error"]]
    if not rows:
        raise ValueError(f"{path}: no compiled row")
    table = {(r["kind"], int(r["block_m"]), int(r["block_n"]), int(r["block_k"]), int(r["num_warps"])):
             int(r["spill_stores"]) + int(r["spill_loads"]) for r in rows}
    body = "".join(f"    {k!r}: {v},\n" for k, v in sorted(table.items()))
    full = Path(path).resolve()
    rel = full.relative_to(ROOT).as_posix() if full.is_relative_to(ROOT) else str(path)
    return (f'''"""The sm_90 compile census's spill bytes per thread (ptxas -v: spill stores + spill loads) of the fp8
kernels that promote the wgmma sum into fp32 (tritonblas.plan.fp8_promote_k, fast accumulation off) with
scaled_mm's row-wise scales: (kind, BLOCK_M, BLOCK_N, BLOCK_K, warps) -> bytes, 0 where it compiled clean; a
config it did not compile is absent. Compiler output, no timings. Generated by `python
benchmarks/fp8_promote_census.py --table` from {rel} ({len(rows)} compiled groups; Triton 3.6).
tests/benchmarks/test_fp8_promote_census.py checks it against that file. Read through
origami.space.promoted_spill_bytes."""

__all__ = ["PROMOTED_SPILL_BYTES_FP8"]

PROMOTED_SPILL_BYTES_FP8 = {{
{body}}}
''')


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", nargs=3, type=int, default=[8192, 8192, 8192], metavar=("M", "N", "K"))
    ap.add_argument("--top", type=int, default=8, help="origami's top-ranked configs to compile (default 8)")
    ap.add_argument("--modes", nargs="+", default=["32", "128", "fast"],
                    help="promotion intervals (powers of two >= 32) and/or 'fast' (default: 32 128 fast)")
    ap.add_argument("--profile", default="h200")
    ap.add_argument("--recipe", choices=("none", "row"), default="none",
                    help="none: the plain kernel (what the sweeps time); row: scaled_mm's row-wise scales "
                         "in the epilogue")
    ap.add_argument("--out", type=Path, default=None,
                    help=f"default {DEFAULT_OUT.relative_to(ROOT)} ({SPACE_OUT.relative_to(ROOT)} with --space)")
    ap.add_argument("--space", action="store_true", help="every spill group of the space (module docstring)")
    ap.add_argument("--table", action="store_true",
                    help="write origami/promoted_spill.py from the --space file (--out, default the committed one)")
    args = ap.parse_args(argv)
    if args.table:  # from --out (default: the committed space census)
        from tritonblas.tables import AtomicFile

        src = args.out or SPACE_OUT
        try:
            text = table_source(src)
        except (OSError, ValueError, KeyError) as e:
            ap.error(f"--table: {src}: {type(e).__name__}: {e} (run --space first)")
        with AtomicFile(TABLE) as f:
            f.write(text)
        print(f"wrote {TABLE} from {src}")
        return 0
    if min(args.shape) < 1:
        ap.error(f"--shape: expected positive M N K, got {args.shape}")
    if args.top < 1:
        ap.error(f"--top: expected a count >= 1, got {args.top}")
    try:
        modes = [mode_value(t) for t in args.modes]
    except ValueError as e:
        ap.error(str(e))
    import origami

    try:
        origami.load_profile(args.profile)
    except origami.ProfileError as e:
        ap.error(f"--profile: {e}")
    from benchmarks._harness import provenance, write_csv

    t0 = time.time()
    if args.space:
        out = args.out or SPACE_OUT
        rows = space_census(args.profile)
        write_csv(out, rows, SPACE_FIELDS, provenance(
            profile=args.profile, target="sm_90 (compile only, no GPU)", probes=str(SPACE_PROBES),
            problem="scaled_mm's layout: e4m3 A row-major, B K-major, bf16 out, row-wise scales, "
                    "the shipped promotion interval"))
        print(f"wrote {out} ({len(rows)} groups, {sum(bool(r['error']) for r in rows)} failed, "
              f"{time.time() - t0:.0f} s)")
        return 0
    args.out = args.out or DEFAULT_OUT
    rows = census(*args.shape, args.top, modes, args.profile, args.recipe)
    epilogue = "no scales" if args.recipe == "none" else "row-wise scales"
    write_csv(args.out, rows, FIELDS, provenance(profile=args.profile, target="sm_90 (compile only, no GPU)",
                                                 problem=f"scaled_mm's layout: e4m3 A row-major, B K-major, bf16 out, "
                                                         f"{epilogue}"))
    for r in rows:
        spill = "" if r["error"] else f"{r['registers']} regs, spill {r['spill_stores']}/{r['spill_loads']} B"
        print(f"{r['mode']:>5} #{r['rank']} {r['config']:<40} {spill or r['error']}")
    print(f"wrote {args.out} ({len(rows)} rows, {time.time() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

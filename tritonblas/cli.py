"""``python -m tritonblas``: profiles, select/explain, table, calibrate, bench, demo.

Bad input → exit code 2 and one line naming what is wrong on stderr; nothing written. calibrate and
bench live in ``tritonblas.calibrate`` and ``tritonblas.bench``; without a CUDA GPU they exit 2 the
same way (except ``calibrate --no-measure --base P --fit SWEEP.csv``, which is pure CPU).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from typing import Any, Sequence

from tritonblas.console import table as _table

__all__ = ["main", "DEMO_SHAPES"]

# (label, m, n, k): a large square, LLM projections, DLRM-style irregular, skinny, long-K
DEMO_SHAPES = (
    ("square 8192^3", 8192, 8192, 8192),
    ("llama3-8b mlp up (2048 tok)", 2048, 14336, 4096),
    ("llama3-70b attn qkv (512 tok)", 512, 10240, 8192),
    ("dlrm irregular", 4096, 1000, 7000),
    ("dlrm odd K", 32768, 1056, 479),
    ("skinny decode M=16", 16, 4096, 4096),
    ("gemv-like M=1", 1, 8192, 8192),
)


DESCRIPTION = """\
tritonblas: Triton GEMMs whose launch configuration the origami model picks (no autotuning).

Bad input exits with code 2 and one line on stderr; nothing is written.
--json (profiles, select, explain, table) prints one JSON document on stdout instead of a table.
-v logs what tritonblas decides (logger "tritonblas") on stderr.
Environment: TRITONBLAS_PROFILE, TRITONBLAS_TABLE, ORIGAMI_PROFILE_DIR, TRITON_INTERPRET,
NUMBA_CACHE_DIR (README.md, "Environment variables").
"""
_log = logging.getLogger("tritonblas.cli")


class UsageError(Exception):
    """Bad command-line input: reported as one line, exit code 2."""


def _profile(name: str):
    import origami

    from tritonblas._measure import one_line

    try:
        return origami.load_profile(name)
    except origami.ProfileError as e:
        raise UsageError(one_line(e)) from None  # every bad field, not just "N error(s) in profile F:"


def _dims(values: Sequence[str]) -> tuple[int, int, int]:
    out = []
    for label, v in zip("MNK", values):
        try:
            x = int(v)
        except ValueError:
            raise UsageError(f"{label}: expected a non-negative integer, got {v!r}") from None
        if x < 0:
            raise UsageError(f"{label}: expected a non-negative integer, got {v!r}")
        out.append(x)
    return tuple(out)  # type: ignore[return-value]


def _problem(args, m: int, n: int, k: int):
    import origami

    try:
        c = args.out_dtype or origami.DType.parse(args.dtype, "--dtype").default_output
        align = origami.GemmProblem.contiguous_align_bytes(m, n, k, args.dtype, args.dtype, c, args.a_layout,
                                                           args.b_layout, args.batch)  # as matmul sees them
        return origami.GemmProblem(m, n, k, args.dtype, args.dtype, c, args.a_layout, args.b_layout,
                                   batch=args.batch, align_bytes=align)
    except (TypeError, ValueError) as e:
        raise UsageError(str(e)) from None


# --- commands --------------------------------------------------------------------------------
def cmd_profiles(args) -> int:
    import origami

    if args.action == "show":
        if not args.name:
            raise UsageError("profiles show: name a profile (see `python -m tritonblas profiles list`)")
        import yaml

        hw = _profile(args.name)
        if args.json:
            _emit_json({"name": hw.name, "path": str(hw.path), "content_hash": hw.content_hash,
                        "profile": hw.to_yaml_dict()})
            return 0
        print(f"# {hw.name} ({hw.path}, content hash {hw.content_hash})")
        print(yaml.safe_dump(hw.to_yaml_dict(), sort_keys=False, width=120))
        return 0
    if args.name:
        raise UsageError(f"profiles list: takes no name, got {args.name!r} (`profiles show {args.name}` shows one)")
    rows, docs = [], []
    for name in origami.list_profiles():
        hw = _profile(name)
        docs.append({"name": hw.name, "vendor": hw.vendor, "arch": hw.arch, "compute_units": hw.compute_units,
                     "chiplets": hw.chiplets, "bf16_peak_flops": hw.matrix_peak_flops["bf16"],
                     "bf16_sustained_flops": hw.sustained_peak_flops("bf16"),
                     "hbm_bytes_per_s": hw.memory["hbm_bytes_per_s"], "content_hash": hw.content_hash,
                     "path": str(hw.path)})
        rows.append((hw.name, hw.vendor, hw.arch, hw.compute_units, hw.chiplets,
                     f"{hw.matrix_peak_flops['bf16'] / 1e12:.0f}", f"{hw.sustained_peak_flops('bf16') / 1e12:.0f}",
                     f"{hw.memory['hbm_bytes_per_s'] / 1e12:.2f}", hw.content_hash))
    if args.json:
        _emit_json(docs)
        return 0
    _table("hardware profiles", ("name", "vendor", "arch", "CUs", "chiplets", "bf16 peak TF/s",
                                 "sustained TF/s", "HBM TB/s", "hash"), rows)
    return 0


def cmd_select(args) -> int:
    import origami

    hw = _profile(args.profile)
    p = _problem(args, *_dims((args.m, args.n, args.k)))
    if p.m == 0 or p.n == 0:
        raise UsageError(f"{p.describe()}: M and N must be > 0 (an empty output needs no kernel)")
    warm = _warm()
    try:
        if args.command == "explain" and not args.json:
            print(origami.explain(p, hw, k=args.top))
            return 0
        t = time.perf_counter()
        ests = origami.rank(p, hw, args.top)
        dt = time.perf_counter() - t
    except ValueError as e:
        raise UsageError(str(e)) from None
    _log.info("%s on %s: ranked in %.0f us, best %s", p.describe(), hw.name, dt * 1e6, ests[0].config.short())
    if args.json:
        floor = None
        if args.command == "explain":
            peak = hw.matrix_rate(p.a_dtype)
            floor = max(p.flops / peak * 1e9, p.min_bytes / hw.memory["hbm_bytes_per_s"] * 1e9)
        doc = {"problem": _problem_json(p), "profile": {"name": hw.name, "arch": hw.arch,
                                                        "content_hash": hw.content_hash},
               "query_s": dt, "warmup_s": warm,
               "ranked": [_estimate_json(e, p, floor) for e in ests]}
        if floor is not None:
            doc["roofline_floor_ns"] = floor
        _emit_json(doc)
        return 0
    rows = [(i + 1, e.config.short(), f"{e.latency_ns / 1e3:.1f}", f"{e.tflops(p):.1f}", e.bound)
            for i, e in enumerate(ests)]
    _table(f"{p.describe()} on {hw.name} (ranked in {dt * 1e6:.0f} us; numba warm-up {warm:.2f} s not counted)",
           ("#", "config", "predicted us", "TFLOP/s", "bound"), rows)
    return 0


def _emit_json(doc: Any) -> None:
    print(json.dumps(doc, indent=1, sort_keys=False))


def _problem_json(p) -> dict:
    return {f: getattr(v, "value", v) for f, v in ((f, getattr(p, f)) for f in
            ("m", "n", "k", "batch", "a_dtype", "b_dtype", "c_dtype", "a_layout", "b_layout", "align_bytes"))}


def _estimate_json(e, p, floor_ns: float | None = None) -> dict:
    d = {"config": e.config.to_dict(), "short": e.config.short(), "latency_ns": e.latency_ns,
         "tflops": e.tflops(p), "bound": e.bound, "terms_ns": dict(e.terms)}
    if floor_ns is not None:
        d["roofline_fraction"] = floor_ns / e.latency_ns
    return d


def _warm() -> float:
    """Compile (or load) the jitted scorer now, so that no query time includes it; seconds taken."""
    import origami

    t = time.perf_counter()
    origami.warmup()
    dt = time.perf_counter() - t
    _log.info("numba warm-up %.2f s (not counted in query times)", dt)
    return dt


def _same_file(a, b) -> bool:
    import os

    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):  # either one missing (or not a path): not the same existing file
        return False


def _one_line(e: Exception) -> str:
    return " ".join(str(e).split())


def cmd_table(args) -> int:
    from pathlib import Path

    from origami.shapes import ShapesError, load_shapes
    from tritonblas import tables

    hw = _profile(args.profile)
    if args.device_key is not None and args.format != "inductor":
        raise UsageError("--device-key: only meaningful with --format inductor")
    out = Path(args.output)
    if out.is_dir():
        raise UsageError(f"{out}: is a directory; -o names the table file")
    for opt, src in (("--shapes", args.shapes), ("--profile", args.profile)):  # inputs are never replaced
        if src is not None and _same_file(out, src):
            raise UsageError(f"{out}: is the {opt} file; -o names the table file to write")
    try:
        problems = load_shapes(args.shapes)
    except ShapesError as e:
        raise UsageError(_one_line(e)) from None
    quiet = args.quiet
    try:
        with tables.AtomicFile(out) as f:  # the temp file exists from here on: an unwritable -o fails now
            _warm()  # load the jitted scorer before timing
            t = time.perf_counter()
            with _progress(quiet) as bar:
                task = bar.add_task(f"selecting ({hw.name})", total=len(problems))
                table = tables.make_table(problems, hw, progress=lambda n: bar.advance(task, n))
            dt = time.perf_counter() - t
            skipped_ind = None
            if args.format == "inductor":
                doc, skipped_ind = tables.render_inductor(table, device_key=args.device_key, profile=hw)
                f.write(tables.dump_inductor(doc))
            else:
                f.write(tables.render(table, args.format))
    except OSError as e:
        raise UsageError(f"{out}: cannot write: {e.strerror or e}") from None
    except ValueError as e:
        raise UsageError(f"{args.shapes}: {_one_line(e)}") from None
    unique = len(set(problems))
    _log.info("table %s: %d entries for %s in %.2f s", out, len(table), hw.name, dt)
    if args.json:
        _emit_json({"output": str(out), "format": args.format, "entries": len(table), "shapes": len(problems),
                    "unique_shapes": unique, "skipped": unique - len(table),
                    "not_inductor_expressible": skipped_ind or 0,
                    "profile": {"name": hw.name, "content_hash": hw.content_hash}, "select_s": dt})
        return 0
    if not quiet:
        notes = [f"{len(problems) - unique} duplicate shapes merged"] if unique < len(problems) else []
        if unique > len(table):
            notes.append(f"{unique - len(table)} skipped (empty output or no valid config)")
        if skipped_ind:
            notes.append(f"{skipped_ind} not expressible as Inductor mm/bmm keys")
        rate = len(problems) / dt if dt > 0 else float("inf")
        print(f"wrote {out} ({args.format}): {len(table)} entries for {hw.name} ({hw.content_hash})"
              f"{' [' + '; '.join(notes) + ']' if notes else ''}; selected {len(problems)} shapes in "
              f"{dt:.2f} s ({rate:,.0f} shapes/s)")
    return 0


class _NoProgress:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def add_task(self, *a, **k):
        return 0

    def advance(self, *a, **k):
        pass


def _progress(quiet: bool):
    """A rich progress bar on stderr; a no-op with --quiet or when stderr is not a terminal."""
    if quiet or not sys.stderr.isatty():
        return _NoProgress()
    try:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    except ImportError:  # pragma: no cover - rich is a declared dependency
        return _NoProgress()
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=Console(stderr=True), transient=True)


def cmd_demo(args) -> int:
    import origami

    names = [args.profile] if args.profile else origami.list_profiles()
    warm = _warm()
    for name in names:
        hw = _profile(name)
        rows = []
        for label, m, n, k in DEMO_SHAPES:
            p = origami.GemmProblem(m, n, k, align_bytes=origami.GemmProblem.contiguous_align_bytes(m, n, k))
            t = time.perf_counter()
            e = origami.select(p, hw)
            dt = time.perf_counter() - t
            rows.append((label, f"{m}x{n}x{k}", e.config.short(), f"{e.latency_ns / 1e3:.1f}",
                         f"{e.tflops(p):.0f}", e.bound, f"{dt * 1e6:.0f}"))
        _table(f"{hw.name} ({hw.arch}, {hw.compute_units} CUs, bf16 peak "
               f"{hw.matrix_peak_flops['bf16'] / 1e12:.0f} TFLOP/s): model selections",
               ("shape", "MxNxK", "selected config", "pred. us", "pred. TFLOP/s", "bound", "select us"), rows)
    print(f"(numba warm-up {warm:.2f} s, once per process; selections are cached per problem and profile)")
    return _demo_gpu(args)


def _demo_gpu(args) -> int:
    try:
        import torch
    except ImportError:
        print("torch is not installed: skipping the GPU part of the demo")
        return 0
    if not torch.cuda.is_available():
        print("no CUDA GPU here: the demo ran the model only (on a GPU it also runs and checks the matmuls)")
        return 0
    from tritonblas import _demo_gpu as g

    return g.run(DEMO_SHAPES, profile=args.profile)


def cmd_calibrate(args) -> int:
    from tritonblas import calibrate

    try:
        return calibrate.calibrate_command(args)
    except calibrate.CalibrationError as e:
        raise UsageError(_one_line(e)) from None


def cmd_bench(args) -> int:
    from origami.shapes import ShapesError, load_shapes
    from tritonblas import bench

    dims = (args.m, args.n, args.k)
    if args.shapes:
        if any(d is not None for d in dims):
            raise UsageError("bench: give M N K or --shapes FILE, not both")
        try:
            problems = load_shapes(args.shapes)
        except ShapesError as e:
            raise UsageError(_one_line(e)) from None
        if not problems:
            raise UsageError(f"bench: {args.shapes}: no shapes")
    else:
        if any(d is None for d in dims):
            raise UsageError("bench: give M N K (or --shapes FILE)")
        p = _problem(args, *_dims(dims))
        if args.out_dtype and p.a_dtype.rate_key != "fp8" and p.c_dtype is not p.a_dtype.default_output:
            raise UsageError(f"--out-dtype {args.out_dtype}: tritonblas.matmul returns the input dtype "
                             f"({p.a_dtype.default_output.value}); --out-dtype applies to fp8 only")
        problems = [p]
    try:
        return bench.bench_command(args, problems)
    except bench.CalibrationError as e:
        raise UsageError(_one_line(e)) from None


# --- entry point -----------------------------------------------------------------------------
class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit code 2
        raise UsageError(f"{self.prog}: {message}")


def _positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}")
    return v


OUT_DTYPES = ("fp32", "fp16", "bf16")  # what our kernels write (DESIGN.md §3 dtypes that are outputs)


def _add_json(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print one JSON document on stdout instead of a table")


def _add_problem_args(p: argparse.ArgumentParser, *, bench: bool = False) -> None:
    # three positionals, not nargs=3 with a tuple metavar: argparse crashes formatting that (bpo-14074)
    for dim in ("M", "N", "K"):
        if bench:
            p.add_argument(dim.lower(), metavar=dim, nargs="?", help=f"problem size {dim} (or --shapes)")
        else:
            p.add_argument(dim.lower(), metavar=dim, help=f"problem size {dim}")
    p.add_argument("--dtype", default="bf16", help="input dtype: fp32 tf32 fp16 bf16 fp8_e4m3 fp8_e5m2 (fp8_e4m3fnuz fp8_e5m2fnuz: AMD gfx942)"
                   + (" (bench: fp32 tf32 fp16 bf16 fp8_e4m3 fp8_e4m3fnuz)" if bench else ""))
    p.add_argument("--out-dtype", default=None, choices=OUT_DTYPES,
                   help="output dtype (default: the input's; fp32 for fp32/tf32, bf16 for fp8)")
    p.add_argument("--a-layout", default="N", choices=("N", "T"))
    p.add_argument("--b-layout", default="N", choices=("N", "T"))
    p.add_argument("--batch", type=_positive_int, default=1, help="batch count (default 1)")
    if bench:
        p.add_argument("--profile", default=None,
                       help="profile name or YAML path (default: $TRITONBLAS_PROFILE, else the one this GPU maps to)")
        p.add_argument("--shapes", default=None, help="time every shape of a shapes file instead of M N K")
        p.add_argument("--rep", type=_positive_int, default=100, help="do_bench repetition time per timing, ms (default 100)")
    else:
        p.add_argument("--profile", default="h200", help="profile name or YAML path (default h200)")
        p.add_argument("--top", type=_positive_int, default=5, help="how many ranked configs to show (>= 1, default 5)")
        _add_json(p)


def build_parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="python -m tritonblas", description=DESCRIPTION,
                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--version", action="version", version=_version())
    ap.add_argument("-v", "--verbose", action="count", default=0,
                    help="log what tritonblas decides on stderr (-v INFO, -vv DEBUG)")
    sub = ap.add_subparsers(dest="command", required=True, parser_class=_Parser)
    p = sub.add_parser("profiles", help="list the hardware profiles or show one")
    p.add_argument("action", nargs="?", default="list", choices=("list", "show"))
    p.add_argument("name", nargs="?")
    _add_json(p)
    p.set_defaults(func=cmd_profiles)
    for name, what in (("select", "rank configurations for M N K"), ("explain", "explain the selection for M N K")):
        p = sub.add_parser(name, help=what)
        _add_problem_args(p)
        p.set_defaults(func=cmd_select)
    p = sub.add_parser("table", help="write a tile table (shape -> selected config) for a shapes file",
                       description="Select a config for every shape of a shapes file (DESIGN.md section 7: a "
                                   "YAML list of {m, n, k} mappings) and write the table atomically.")
    p.add_argument("--profile", required=True, help="profile name or YAML path the table is made for")
    p.add_argument("--shapes", required=True, help="shapes file (YAML or JSON list of {m, n, k, ...})")
    p.add_argument("-o", "--output", required=True, help="table file to write (replaced atomically)")
    p.add_argument("--format", default="json", choices=("json", "csv", "inductor"),
                   help="json (default; load_table / TRITONBLAS_TABLE read it), csv (same content), or "
                        "inductor (torch._inductor.config.lookup_table.table)")
    p.add_argument("--device-key", default=None,
                   help="with --format inductor: prefix keys with this device key (Inductor compares it with "
                        "torch.cuda.get_device_properties().gcnArchName, e.g. 'NVIDIA H200'); default: "
                        "device-agnostic keys")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no summary line")
    _add_json(p)
    p.set_defaults(func=cmd_table)
    p = sub.add_parser(
        "calibrate", help="measure this GPU and write its hardware profile; fit the model to a sweep",
        description="Measure the live GPU (SM count and clock, HBM and L2 bandwidth, L2 knee, matrix rates per "
                    "dtype, launch overhead) and write a profile: measured fields replace the --base profile's, "
                    "with 'measured <date> by tritonblas calibrate (<method>)' sources; the rest is kept. "
                    "--fit fits the model parameters to a recorded sweep and keeps them only if held-out "
                    "selection efficiency (geomean and p10) does not drop; a rejected fit still exits 0 and "
                    "prints 'fit: rejected'. Needs a CUDA GPU unless --no-measure (then pure CPU).")
    p.add_argument("-o", "--output", default=None,
                   help="profile YAML to write (replaced atomically); default: print it")
    p.add_argument("--base", default=None,
                   help="profile (name or YAML path) for what is not measured (default: the one this GPU maps to)")
    p.add_argument("--fit", default=None, nargs="+", metavar="SWEEP.csv",
                   help="fit the model parameters to these training sweep CSVs (held-out shapes are refused)")
    p.add_argument("--quick", action="store_true", help="smaller buffers, fewer repeats (about a minute on an H200)")
    p.add_argument("--no-measure", action="store_true", help="no microbenchmarks (no GPU needed): only --fit on --base")
    p.add_argument("--name", default=None, help="name of the written profile (default: the base's)")
    p.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)  # refused with a message (removed split)
    p.add_argument("--holdout", type=float, default=0.3, help=argparse.SUPPRESS)
    p.add_argument("--heldout-sweeps", nargs="+", default=None, metavar="SWEEP.csv",
                   help="held-out sweeps to validate the fit on (default: benchmarks/data/<base>_heldout/*.csv)")
    p.add_argument("--rounds", type=int, default=3, help="coordinate-descent rounds of the fit (default 3)")
    p.add_argument("--params", nargs="+", default=None, metavar="NAME",
                   help="fit only these model parameters (default: all; see hwprofiles/README.md)")
    p.add_argument("--force", action="store_true", help="let -o replace the --base profile file itself")
    p.set_defaults(func=cmd_calibrate)
    p = sub.add_parser("bench", help="time tritonblas.matmul (the model's pick) against torch on this GPU",
                       description="Time tritonblas.matmul (the config the model picks) and torch.matmul "
                                   "(torch._scaled_mm for fp8) with triton.testing.do_bench medians on random "
                                   "inputs; print TFLOP/s, their ratio, and predicted vs measured time. Needs a "
                                   "CUDA GPU.")
    _add_problem_args(p, bench=True)
    p.set_defaults(func=cmd_bench)
    p = sub.add_parser("demo", help="select configs for a standard shape set on every profile (and run them on a GPU)")
    p.add_argument("--profile", default=None, help="only this profile (default: all shipped)")
    p.set_defaults(func=cmd_demo)
    return ap


def _version() -> str:
    """``tritonblas X (numba Y, torch Z, triton W)`` from the installed metadata (nothing imported)."""
    from importlib import metadata

    from tritonblas import __version__

    deps = []
    for name in ("numba", "torch", "triton"):
        try:
            deps.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            deps.append(f"{name} not installed")
    return f"tritonblas {__version__} ({', '.join(deps)})"


def _logging(verbose: int) -> None:
    if verbose:
        h = logging.StreamHandler(sys.stderr)
        h.setFormatter(logging.Formatter("%(name)s: %(message)s"))
        for name in ("tritonblas", "origami"):
            lg = logging.getLogger(name)
            lg.addHandler(h)
            lg.setLevel(logging.DEBUG if verbose > 1 else logging.INFO)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        _logging(args.verbose)
        return args.func(args)
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader left (`... --json | head`): no traceback, and none at exit
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

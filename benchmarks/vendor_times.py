"""The vendor library's time on every recorded shape: what the drop-in's "ours or torch's" rule is fitted on.

    python benchmarks/vendor_times.py [--profile h200] [--data benchmarks/data] [--rep-ms 3] [--budget-s 300]

For every shape of the training sweeps (``benchmarks/data/<profile>/*.csv``, warm L2) and of the
committed held-out split (``benchmarks/shapes/heldout/*.yaml``), and the training shape files'
shapes not swept yet (``benchmarks/shapes/*.yaml``), one row: the problem columns, the
``split`` it belongs to (``training`` / ``heldout``), the file it came from, and ``torch_ms``, the
median time of torch's own GEMM on the same inputs the sweep timed (``tritonblas.plan._example_tensors``:
the problem's dtypes, layouts and alignment) with the sweep's timer (``do_bench_cudagraph``, warm
L2, ``--rep-ms`` as the sweeps used, 3): ``torch.matmul`` for 16-bit and fp32 inputs (tf32 with
``allow_tf32``), ``torch._scaled_mm`` with unit scales for fp8 (a layout ``_scaled_mm`` refuses is
recorded as an error: a user of torch would have to copy). Every result is checked against the
float32 product (``sweep.check_result``). Our side of each ratio is the sweep's recorded time of
``origami.select()``'s pick (the guards require it to be recorded), so the two come from runs of the
same kernels on the same GPU, not the same process; the sweeps' anchors re-timed a day later read
1.027x their recorded times (median, session 12), the noise this ratio carries.

Training rows go to ``<data>/<profile>_vendor/torch.csv``, held-out rows to
``<data>/<profile>_vendor_heldout/torch.csv``: a held-out shape never sits in a file beside the
training data (tests/benchmarks/test_heldout_split.py reads every ``benchmarks/data`` CSV outside a
``*_heldout`` folder as fittable). Resumable (shapes already recorded are skipped) and written
atomically after every shape.
Without a GPU it times torch on the CPU with perf_counter: a check that the script works.
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from origami.problem import GemmProblem  # noqa: E402
from origami.shapes import load_shapes  # noqa: E402

PROBLEM_COLS = ["m", "n", "k", "batch", "a_dtype", "b_dtype", "c_dtype", "a_layout", "b_layout", "align_bytes"]
COLS = PROBLEM_COLS + ["split", "source", "torch_ms", "error"]


def vendor_paths(profile: str, data: Path = ROOT / "benchmarks" / "data") -> dict[str, Path]:
    """{split: the CSV of torch's times for that split's shapes}."""
    return {"training": data / f"{profile}_vendor" / "torch.csv",
            "heldout": data / f"{profile}_vendor_heldout" / "torch.csv"}


def read_vendor_rows(path: Path) -> list[dict]:
    """The data rows of one vendor-times CSV ([] when it does not exist yet)."""
    if not path.exists():
        return []
    with path.open() as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def _cell(v) -> str:
    return str(getattr(v, "value", v))


def problem_key(row_or_problem) -> tuple:
    get = (lambda c: row_or_problem[c]) if isinstance(row_or_problem, dict) else \
        (lambda c: _cell(getattr(row_or_problem, c)))
    return tuple(str(get(c)) for c in PROBLEM_COLS)


def recorded_problems(profile: str) -> list[tuple[GemmProblem, str, str]]:
    """(problem, split, source) of every shape of the profile's training sweeps and of the held-out
    split, each problem once (training first: a shape in both would be a split defect the held-out
    test catches)."""
    from origami.fit import read_sweep

    out, seen = [], set()
    for path in sorted((ROOT / "benchmarks" / "data" / profile).glob("*.csv")):
        for meas in read_sweep(path):
            if meas.problem not in seen:
                seen.add(meas.problem)
                out.append((meas.problem, "training", f"{profile}/{path.name}"))
    shape_files = [("training", p) for p in sorted((ROOT / "benchmarks" / "shapes").glob("*.yaml"))]
    shape_files += [("heldout", p) for p in sorted((ROOT / "benchmarks" / "shapes" / "heldout").glob("*.yaml"))]
    for split, path in shape_files:  # shapes not swept yet (e.g. the rest of ragged), in the file's dtype
        for p in load_shapes(path):
            if p not in seen:
                seen.add(p)
                out.append((p, split, f"{'heldout/' if split == 'heldout' else 'shapes/'}{path.name}"))
    return out


def torch_call(p: GemmProblem, a, b, out):
    """The zero-argument call of torch's GEMM for ``p`` on these tensors (raises what torch raises)."""
    import torch

    dt = p.a_dtype.value
    if dt.startswith("fp8"):
        one = torch.ones((), device=a.device)
        torch._scaled_mm(a, b, one, one, out_dtype=out.dtype)  # raises here on a layout it refuses
        return lambda: torch._scaled_mm(a, b, one, one, out_dtype=out.dtype)
    if out.dtype != a.dtype:
        raise ValueError(f"c_dtype {p.c_dtype.value} differs from the inputs' {dt}: torch.matmul has no such out=")
    return lambda: torch.matmul(a, b, out=out)


def time_one(p: GemmProblem, device: str, rep_ms: float) -> tuple[str, str]:
    import torch

    import sweep
    from tritonblas.plan import _example_tensors

    torch.backends.cuda.matmul.allow_tf32 = p.a_dtype.value == "tf32"
    try:
        a, b, out = _example_tensors(p, device)
        ref = a.float() @ b.float()
        fn = torch_call(p, a, b, out)
        out.fill_(float("nan"))
        if device == "cpu":
            t = sweep.cpu_ms(fn)
        else:
            import triton

            fn()
            torch.cuda.synchronize()
            t = triton.testing.do_bench_cudagraph(fn, rep=rep_ms, return_mode="median")
        res = fn() if p.a_dtype.value.startswith("fp8") else out
        sweep.check_result(res, ref, p)
        return f"{t:.6f}", ""
    except Exception as e:  # noqa: BLE001 - recorded per shape
        return "", f"{type(e).__name__}: {e}".splitlines()[0][:300]
    finally:
        torch.backends.cuda.matmul.allow_tf32 = False


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="h200")
    ap.add_argument("--data", type=Path, default=ROOT / "benchmarks" / "data",
                    help="the folder holding <profile>_vendor/ and <profile>_vendor_heldout/")
    ap.add_argument("--rep-ms", type=float, default=3)
    ap.add_argument("--budget-s", type=float, default=1e9)
    ap.add_argument("--limit", type=int, default=0, help="at most this many new shapes (0: all)")
    ap.add_argument("--any-gpu", action="store_true",
                    help="time a GPU the profile does not name (by default refused: its rows would land in "
                         "the profile's vendor files)")
    args = ap.parse_args(argv)
    paths = vendor_paths(args.profile, args.data)

    import torch

    from _harness import provenance, write_csv

    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not args.any_gpu:
        from _harness import refuse_foreign_gpu

        refuse_foreign_gpu(ap, args.profile, 0)
    rows = {split: read_vendor_rows(path) for split, path in paths.items()}
    done = {problem_key(r) for rs in rows.values() for r in rs}
    todo = [x for x in recorded_problems(args.profile) if problem_key(x[0]) not in done]
    if args.limit:
        todo = todo[:args.limit]
    prov = provenance()
    t0 = time.time()
    for i, (p, split, source) in enumerate(todo):
        if time.time() - t0 > args.budget_s:
            print(f"budget reached after {i} of {len(todo)} shapes (resume later)", flush=True)
            break
        ms, err = time_one(p, device, args.rep_ms)
        rows[split].append({**{c: _cell(getattr(p, c)) for c in PROBLEM_COLS}, "split": split, "source": source,
                            "torch_ms": ms, "error": err})
        write_csv(paths[split], rows[split], COLS, prov)
        print(f"{p.describe()} [{split}] torch {ms or err}", flush=True)
    for split, path in paths.items():
        print(f"{len(rows[split])} {split} shapes in {path}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

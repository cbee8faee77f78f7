"""AMD compile census: compile, on this CPU, every config the model picks on the AMD profiles, and
a uniform sample of each candidate space, for the profile's own arch, and record what the compiler
allocated.

For mi300x / mi325x (gfx942) and mi350x / mi355x (gfx950), over the shapes of
``benchmarks/shapes/*.yaml`` and the dtypes bf16, fp16 and fp8 (the arch's own flavour: e4m3fnuz on
gfx942, OCP e4m3 on gfx950), each config goes through ``tritonblas.plan.make_plan`` and
``prepare_launch`` (so the launch options the kernel gets — ``waves_per_eu``,
``matrix_instr_nonkdim``, ``kpack``, the chiplet remap constexprs — are the plan's own) and is compiled
with ``JITFunction.warmup`` against a stub driver reporting ``GPUTarget("hip", arch, 64)``. Per
config one CSV row: compiled or the error, LDS bytes (``metadata.shared``) against
``origami.space.smem_bytes``, VGPRs / AGPRs / SGPRs and spills, the occupancy LLVM reports (waves
per SIMD, register-bound: Triton's LDS is dynamic, so LLVM does not see it) and the programs per CU
these imply beside the model's ``space.resident_programs``, and the MFMA instruction shapes used.

    python benchmarks/amd_census.py                     # all four profiles, 2 nice'd workers
    python benchmarks/amd_census.py --profiles mi300x --sample 0
    python benchmarks/amd_census.py --ci --out /tmp/ci  # the fixed CI sample (tests/benchmarks/test_amd_census.py)

Output: ``benchmarks/data/amd_aot/<profile>.csv`` (``#`` provenance lines, then a header). Resumable:
rows already in a profile's CSV (or its ``.partial`` file, appended as compiles finish) are not
compiled again; the CSV is rewritten atomically at the end. Compile results are keyed by what
Triton specialises on (arch, kernel, constexprs and options, argument dtypes, integer
divisibility), so mi300x / mi325x (and mi350x / mi355x) share compiles of the same key.
TRITON_INTERPRET must not be set in the worker processes (it is removed there).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import random
import re
import sys
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

PROFILES = ("mi300x", "mi325x", "mi350x", "mi355x")
DTYPES = ("bf16", "fp16", "fp8")
OUT_DIR = ROOT / "benchmarks" / "data" / "amd_aot"
SHAPES_DIR = ROOT / "benchmarks" / "shapes"
FIELDS = (
    "id", "profile", "arch", "source", "shape", "n_picks", "dtype", "torch_dtype", "layout", "align_bytes",
    "config", "kind", "block_m", "block_n", "block_k", "num_warps", "num_stages", "group_m", "num_chiplets",
    "chunk", "grid", "split_k", "waves_per_eu", "matrix_instr_nonkdim", "kpack",
    "pred_violations", "pred_smem_ok", "pred_regs_ok", "lds_pred", "model_programs_per_cu",
    "status", "error", "kernel", "lds_bytes", "vgprs", "agprs", "total_vgprs", "sgprs", "vgpr_spills",
    "sgpr_spills", "scratch_bytes", "occupancy", "programs_per_cu", "mfma_16x16", "mfma_32x32",
    "compile_s", "remap_ops", "model_vgprs", "vgpr_budget",
)
RESULT_FIELDS = ("status", "error", "kernel", "lds_bytes", "vgprs", "agprs", "total_vgprs", "sgprs", "vgpr_spills",
                 "sgpr_spills", "scratch_bytes", "occupancy", "mfma_16x16", "mfma_32x32", "compile_s", "remap_ops")

# CI sample: (profile, dtype, layout, config fields) — across the four profiles and both arches, both
# MFMA sizes, kpack 2, the chiplet remap, every kind, the LDS limit of each arch from both sides,
# and waves_per_eu 1/2/4 (the register budget).
_CI = [
    ("mi300x", "bf16", "NN", dict(kind="dp", block_m=256, block_n=128, block_k=64, num_warps=8, num_stages=2)),
    ("mi300x", "bf16", "NN", dict(kind="dp", block_m=256, block_n=128, block_k=64, num_warps=8, num_stages=2,
                                  matrix_instr_nonkdim=32)),
    ("mi300x", "fp16", "NT", dict(kind="dp", block_m=128, block_n=128, block_k=64, num_warps=4, num_stages=2,
                                  kpack=2)),
    ("mi300x", "bf16", "NN", dict(kind="dp", block_m=256, block_n=256, block_k=64, num_warps=8, num_stages=2)),
    ("mi300x", "bf16", "NN", dict(kind="dp", block_m=128, block_n=128, block_k=128, num_warps=8, num_stages=2)),
    ("mi300x", "bf16", "TN", dict(kind="persistent", block_m=128, block_n=128, block_k=64, num_warps=8,
                                  num_stages=2, num_chiplets=8, chunk=8, grid=304)),
    ("mi300x", "bf16", "TN", dict(kind="persistent", block_m=128, block_n=128, block_k=64, num_warps=8,
                                  num_stages=2, grid=304)),
    ("mi300x", "bf16", "NN", dict(kind="dp", block_m=256, block_n=256, block_k=32, num_warps=8, num_stages=1,
                                  waves_per_eu=1)),
    ("mi300x", "bf16", "NN", dict(kind="dp", block_m=256, block_n=256, block_k=32, num_warps=8, num_stages=1,
                                  waves_per_eu=2)),
    ("mi300x", "bf16", "NN", dict(kind="dp", block_m=256, block_n=256, block_k=32, num_warps=8, num_stages=1,
                                  waves_per_eu=4)),
    ("mi325x", "fp16", "NN", dict(kind="streamk", block_m=256, block_n=128, block_k=64, num_warps=8, num_stages=2,
                                  num_chiplets=8, chunk=32, grid=304)),
    ("mi325x", "bf16", "NN", dict(kind="splitk", block_m=16, block_n=128, block_k=128, num_warps=4, num_stages=2,
                                  split_k=4, group_m=1)),
    ("mi325x", "bf16", "TT", dict(kind="dp", block_m=64, block_n=64, block_k=64, num_warps=4, num_stages=1)),
    ("mi350x", "bf16", "NN", dict(kind="dp", block_m=256, block_n=128, block_k=128, num_warps=8, num_stages=2)),
    ("mi350x", "bf16", "NN", dict(kind="dp", block_m=256, block_n=256, block_k=128, num_warps=8, num_stages=2)),
    ("mi350x", "fp8", "NT", dict(kind="dp", block_m=128, block_n=128, block_k=128, num_warps=4, num_stages=2)),
    ("mi350x", "fp8", "NT", dict(kind="dp", block_m=256, block_n=128, block_k=256, num_warps=8, num_stages=2,
                                 matrix_instr_nonkdim=32)),
    ("mi350x", "bf16", "NN", dict(kind="persistent", block_m=256, block_n=128, block_k=64, num_warps=8,
                                  num_stages=2, num_chiplets=8, chunk=8, grid=256)),
    ("mi355x", "fp16", "NN", dict(kind="streamk", block_m=128, block_n=128, block_k=64, num_warps=4, num_stages=2,
                                  num_chiplets=8, chunk=32, grid=512)),
    ("mi355x", "bf16", "NN", dict(kind="splitk", block_m=32, block_n=64, block_k=128, num_warps=4, num_stages=2,
                                  split_k=8, group_m=1)),
    ("mi355x", "bf16", "NN", dict(kind="dp", block_m=256, block_n=256, block_k=64, num_warps=4, num_stages=2)),
]
_CI_PROBLEM = dict(m=4096, n=4096, k=4096)
_SAMPLE_CHUNK = 320
_CI_SPLITK_PROBLEM = dict(m=64, n=2048, k=8192)


# --- what runs in the worker processes -------------------------------------------------------
_ACTIVE_ARCH = [None]


def _use_arch(arch: str) -> None:
    if _ACTIVE_ARCH[0] == arch:
        return
    from triton.backends.compiler import GPUTarget

    from tritonblas import _aot

    _aot.use_target(GPUTarget("hip", arch, 64))
    _ACTIVE_ARCH[0] = arch


def torch_dtype(dtype: str, arch: str):
    """The torch dtype of a census dtype on ``arch``: fp8 is e4m3fnuz on gfx942, OCP e4m3 on gfx950."""
    import torch

    if dtype == "fp8":
        return torch.float8_e4m3fnuz if arch == "gfx942" else torch.float8_e4m3fn
    return {"bf16": torch.bfloat16, "fp16": torch.float16}[dtype]


def _problem(dtype: str, layout: str, shape: dict):
    from origami.problem import DType, GemmProblem

    dt = DType.FP8_E4M3 if dtype == "fp8" else DType(dtype)
    out = DType.BF16 if dtype == "fp8" else dt
    kw = dict(a_dtype=dt, b_dtype=dt, c_dtype=out, a_layout=layout[0], b_layout=layout[1], **shape)
    return GemmProblem(align_bytes=GemmProblem.contiguous_align_bytes(**kw), **kw)  # what _tensors allocates


def _tensors(problem, dtype: str, arch: str):
    import torch

    t = torch_dtype(dtype, arch)
    lead = (problem.batch,) if problem.batch > 1 else ()

    def operand(rows, cols, transposed):
        if transposed:
            return torch.empty(*lead, cols, rows, dtype=t).transpose(-1, -2)
        return torch.empty(*lead, rows, cols, dtype=t)

    out_t = torch.bfloat16 if dtype == "fp8" else t
    return (operand(problem.m, problem.k, problem.a_layout.value == "T"),
            operand(problem.k, problem.n, problem.b_layout.value == "T"),
            torch.empty(*lead, problem.m, problem.n, dtype=out_t))


def prepare(spec: dict):
    """The plan's launch for one spec (tritonblas.plan's own TileConfig → arguments mapping)."""
    import origami
    from origami.config import TileConfig
    from tritonblas import _aot
    from tritonblas import plan as P

    hw = origami.load_profile(spec["profile"])
    problem = _problem(spec["dtype"], spec["layout"], spec["shape"])
    cfg = TileConfig.from_dict(spec["config"])
    plan = P.make_plan(cfg, problem, hw, checked=True)
    a, b, out = _tensors(problem, spec["dtype"], hw.arch)
    return plan, _aot.prepare_on_cpu(plan, a, b, out)


def compile_key(spec: dict, arch: str) -> str:
    """What Triton specialises a compile on: kernel, constexprs + options, argument dtypes, and for
    integers divisibility by 16 and equality to 1. Unsupported specs key on their error."""
    try:
        _, prepared = prepare(spec)
    except (ValueError, TypeError) as e:
        return "err:" + hashlib.sha1(f"{arch}|{spec['dtype']}|{e}".encode()).hexdigest()[:16]
    args = []
    for a in prepared.args:
        if hasattr(a, "dtype"):
            args.append(str(a.dtype))
        elif isinstance(a, bool) or not isinstance(a, int):
            args.append(type(a).__name__)
        else:
            args.append((a % 16 == 0, a == 1))
    text = json.dumps([arch, prepared.kernel.fn.__name__, sorted(prepared.kwargs.items()), args], default=str)
    return hashlib.sha1(text.encode()).hexdigest()[:16]


def _remap_lines() -> range:
    """The source lines of ``kernels.pid.chiplet_remap`` (in pid.py)."""
    import inspect

    from tritonblas.kernels import pid

    src, start = inspect.getsourcelines(pid.chiplet_remap.fn)
    return range(start, start + len(src))


def remap_ops(gcn: str, chiplets: int) -> int:
    """Scalar ``s_and_b32 .., -chiplets`` masks (the signed ``pid % NUM_CHIPLETS`` of
    ``kernels.pid.chiplet_remap``) that the assembly's line table attributes to chiplet_remap's own
    lines in pid.py: the same mask also rounds unrolled loop counts (Triton 3.9's split-K kernel,
    gfx942), which is no remap."""
    lines, count, here = _remap_lines(), 0, None
    mask = re.compile(rf"\bs_and_b32 s\d+, s\d+, -{chiplets}\b")
    for line in gcn.splitlines():
        if line.lstrip().startswith(".loc"):
            m = re.search(r";\s*pid\.py:(\d+):", line)
            here = int(m.group(1)) if m else None
        elif here is not None and here in lines and mask.search(line):
            count += 1
    return count


def parse_amdgcn(gcn: str, chiplets: int = 8) -> dict:
    """Register, spill, scratch and occupancy figures from AMDGCN assembly (LLVM's metadata block
    and its trailing comments), the MFMA instruction shapes used, and ``remap_ops`` (:func:`remap_ops`;
    none in the kernels compiled with NUM_CHIPLETS = 1: tests/benchmarks/test_amd_census.py)."""
    def num(pattern: str) -> int:
        m = re.search(pattern, gcn, re.M)
        return int(m.group(1)) if m else -1
    return dict(
        vgprs=num(r"^\s*(?:- )?\.vgpr_count:\s+(\d+)"), agprs=num(r"^\s*(?:- )?\.agpr_count:\s+(\d+)"),
        total_vgprs=num(r"^; TotalNumVgprs:\s+(\d+)"), sgprs=num(r"^\s*\.sgpr_count:\s+(\d+)"),
        vgpr_spills=num(r"^\s*\.vgpr_spill_count:\s+(\d+)"), sgpr_spills=num(r"^\s*\.sgpr_spill_count:\s+(\d+)"),
        scratch_bytes=num(r"^; ScratchSize:\s+(\d+)"), occupancy=num(r"^; Occupancy:\s+(\d+)"),
        mfma_16x16=len(re.findall(r"v_mfma_\w*?16x16x", gcn)), mfma_32x32=len(re.findall(r"v_mfma_\w*?32x32x", gcn)),
        remap_ops=remap_ops(gcn, chiplets),
    )


def compile_spec(spec: dict) -> dict:
    """Compile one spec for its arch (worker entry point); never raises."""
    import time

    os.environ.pop("TRITON_INTERPRET", None)
    arch = spec["arch"]
    row = {k: "" for k in RESULT_FIELDS}
    t0 = time.perf_counter()
    try:
        _use_arch(arch)
        _, prepared = prepare(spec)
    except (ValueError, TypeError) as e:
        row.update(status="unsupported", error=f"{type(e).__name__}: {e}".splitlines()[0][:300])
        return row
    try:
        compiled = prepared.kernel.warmup(*prepared.args, grid=prepared.grid, **prepared.kwargs)
        import origami

        row.update(parse_amdgcn(compiled.asm["amdgcn"], origami.load_profile(spec["profile"]).chiplets))
        if spec.get("keep_asm"):
            row["asm"] = compiled.asm["amdgcn"]
        row.update(status="ok", kernel=prepared.kernel.fn.__name__, lds_bytes=compiled.metadata.shared)
    except Exception as e:  # noqa: BLE001 - recorded per config
        row.update(status="error", kernel=prepared.kernel.fn.__name__,
                   error=f"{type(e).__name__}: {e}".replace("\n", " ")[:300])
    row["compile_s"] = f"{time.perf_counter() - t0:.2f}"
    return row


def _init_worker() -> None:
    os.environ.pop("TRITON_INTERPRET", None)
    try:
        os.nice(10)
    except OSError:
        pass


# --- verdicts ----------------------------------------------------------------------------------
def programs_per_cu(occupancy: int, num_warps: int, lds_bytes: int, hw) -> int:
    """Programs of one kernel resident on a CU by the compiler's numbers: a program of W waves puts
    ceil(W / 4) on each of the CU's 4 SIMDs, LLVM's occupancy is waves per SIMD by registers, and
    the CU's LDS and workgroup slots bound the rest."""
    c = hw.compute
    by_regs = occupancy // -(-num_warps // 4)
    by_lds = c["smem_bytes_per_cu"] // max(1, lds_bytes)
    return max(0, min(by_regs, by_lds, c["max_blocks_per_cu"], c["max_warps_per_cu"] // num_warps))


def compiles_cleanly(row: dict, hw) -> bool:
    """The compiler's verdict: compiled, the LDS fits the arch's per-workgroup limit, no VGPR
    spill and no scratch (SGPR spills go to VGPR lanes and are not counted)."""
    return (row["status"] == "ok" and int(row["lds_bytes"]) <= hw.compute["smem_bytes_per_block"]
            and int(row["vgpr_spills"]) == 0 and int(row["scratch_bytes"]) == 0)


# --- specs -------------------------------------------------------------------------------------
def _spec(profile, arch, source, shape_name, dtype, layout, shape, cfg) -> dict:
    return dict(profile=profile, arch=arch, source=source, shape_name=shape_name, dtype=dtype, layout=layout,
                shape=shape, config=cfg.to_dict())


def pick_specs(profile: str, shape_files: list[Path]) -> list[dict]:
    import origami
    from origami.shapes import load_shapes

    hw = origami.load_profile(profile)
    specs = []
    for path in shape_files:
        for p in load_shapes(path):
            layout = p.a_layout.value + p.b_layout.value
            shape = dict(m=p.m, n=p.n, k=p.k, batch=p.batch)
            for dtype in DTYPES:
                prob = _problem(dtype, layout, shape)
                cfg = origami.select(prob, hw).config
                specs.append(_spec(profile, hw.arch, "pick", f"{path.stem}:{prob.describe()}", dtype, layout,
                                   shape, cfg))
    return specs


def sample_specs(profile: str, n: int, seed: int = 0) -> list[dict]:
    """A uniform sample of the candidate space (``origami.enumerate.base_array``) for each dtype and
    layout, plus a uniform sample of the tiles the problem-independent predicates reject (the axes
    widened to 256x256 tiles, 4 and 8 warps, 1-3 stages), ~1/4 of ``n``."""
    import itertools

    import origami
    from origami import space
    from origami.config import Kind, TileConfig
    from origami.enumerate import base_array, config_for_tiles, _block_ks, _TILES

    hw = origami.load_profile(profile)
    rng = random.Random(f"{seed}:{hw.arch}")  # same sample for the profiles of one arch: shared compiles
    shape = dict(m=4096, n=4096, k=4096)
    admitted = []
    for dtype, layout in itertools.product(DTYPES, ("NN", "NT", "TN", "TT")):
        prob = _problem(dtype, layout, shape)
        base = base_array(hw, prob.a_dtype, prob.b_dtype, prob.a_layout, prob.b_layout)
        for row in base.tolist():
            admitted.append((dtype, layout, row))
    n_rej = n // 4
    specs = []
    for dtype, layout, row in rng.sample(admitted, min(len(admitted), n - n_rej)):
        cfg = config_for_tiles(row, 256, hw)
        sh = dict(shape)
        if cfg.kind is Kind.SPLITK:
            sh = dict(m=64, n=2048, k=8192)
        specs.append(_spec(profile, hw.arch, "sample", "", dtype, layout, dict(sh, batch=1), cfg))
    rejected = []
    for dtype in DTYPES:
        prob = _problem(dtype, "NN", shape)
        for (bm, bn), bk, w, s, mi in itertools.product((*_TILES, (256, 256)), _block_ks(prob.a_dtype), (4, 8),
                                                         (1, 2, 3), (16, 32)):
            if mi == 32 and (bm % 32 or bn % 32):
                continue
            cfg = TileConfig(Kind.DP, bm, bn, bk, w, s, 8, waves_per_eu=0, matrix_instr_nonkdim=mi, kpack=1)
            if space.check_smem(cfg, prob, hw) or space.check_registers(cfg, prob, hw):
                if not space.check_instr(cfg, prob, hw):
                    rejected.append((dtype, cfg))
    for dtype, cfg in rng.sample(rejected, min(len(rejected), n_rej)):
        specs.append(_spec(profile, hw.arch, "sample-rejected", "", dtype, "NN", dict(shape, batch=1), cfg))
    return specs


def ci_specs() -> list[dict]:
    import origami
    from origami.config import TileConfig

    specs = []
    for profile, dtype, layout, fields in _CI:
        hw = origami.load_profile(profile)
        cfg = TileConfig(**{"group_m": 8, "waves_per_eu": 0, "matrix_instr_nonkdim": 16, "kpack": 1, **fields})
        shape = _CI_SPLITK_PROBLEM if cfg.kind.value == "splitk" else _CI_PROBLEM
        specs.append(_spec(profile, hw.arch, "ci", "", dtype, layout, dict(shape, batch=1), cfg))
    return specs


def annotate(spec: dict) -> dict:
    """The CSV row of a spec without its compile result: config fields and the predicates' view."""
    import origami
    from origami import space
    from origami.config import TileConfig

    hw = origami.load_profile(spec["profile"])
    prob = _problem(spec["dtype"], spec["layout"], spec["shape"])
    cfg = TileConfig.from_dict(spec["config"])
    row = dict(profile=spec["profile"], arch=hw.arch, source=spec["source"], shape=spec["shape_name"],
               dtype=spec["dtype"], torch_dtype=str(torch_dtype(spec["dtype"], hw.arch)).replace("torch.", ""),
               layout=spec["layout"], align_bytes=prob.align_bytes, config=cfg.short(), **cfg.to_dict())
    row.update(pred_violations="; ".join(space.violations(cfg, prob, hw)),
               pred_smem_ok=int(space.check_smem(cfg, prob, hw) is None),
               pred_regs_ok=int(space.check_registers(cfg, prob, hw) is None),
               lds_pred=space.smem_bytes(cfg, prob, hw),
               model_programs_per_cu=space.resident_programs(cfg, prob, hw))
    return row


# --- the run -----------------------------------------------------------------------------------
def provenance() -> list[str]:
    from _harness import provenance as run_provenance

    p = run_provenance()
    return [f"# git_sha: {p['git_sha']}", f"# triton: {p['triton']}", f"# torch: {p['torch']}",
            f"# date: {p['date']}", "# benchmarks/amd_census.py: one row per distinct compile (see the module docstring)"]


def read_rows(path: Path) -> list[dict]:
    if not path.exists():
        return []
    lines = [ln for ln in path.read_text().splitlines() if ln and not ln.startswith("#")]
    return list(csv.DictReader(lines)) if lines and lines[0].startswith("id,") else \
        [dict(zip(FIELDS, r)) for r in csv.reader(lines)]


def write_csv(path: Path, rows: list[dict]) -> None:
    """Atomically write ``rows`` under the provenance lines."""
    import io

    buf = io.StringIO()
    buf.write("\n".join(provenance()) + "\n")
    w = csv.DictWriter(buf, fieldnames=FIELDS, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    order = {"ci": 0, "pick": 1, "sample": 2, "sample-rejected": 3}
    for r in sorted(rows, key=lambda r: (order.get(r["source"], 9), r["id"])):
        w.writerow(r)
    path.parent.mkdir(parents=True, exist_ok=True)
    from tritonblas.tables import AtomicFile

    with AtomicFile(path) as f:
        f.write(buf.getvalue())


def run(specs: list[dict], out_dir: Path, workers: int, log=print, refresh: bool = False) -> dict[str, list[dict]]:
    """Compile the specs (deduplicated by profile + compile key), resuming from ``out_dir`` unless
    ``refresh`` (then every row is compiled again: Triton's own cache makes that fast)."""
    import origami
    from origami import space
    from origami.config import TileConfig

    os.environ.pop("TRITON_INTERPRET", None)
    by_profile: dict[str, dict[str, dict]] = {}
    for spec in specs:
        hw = origami.load_profile(spec["profile"])
        rid = compile_key(spec, hw.arch)
        rows = by_profile.setdefault(spec["profile"], {})
        if rid in rows:
            rows[rid]["n_picks"] += spec["source"] == "pick"
            continue
        rows[rid] = dict(annotate(spec), id=rid, n_picks=int(spec["source"] == "pick"), _spec=spec)
    done: dict[tuple[str, str], dict] = {}  # (arch, id) → result fields, from any profile's files
    for profile in by_profile if not refresh else ():
        arch = origami.load_profile(profile).arch
        for p in PROFILES:
            if origami.load_profile(p).arch != arch:
                continue
            for path in (out_dir / f"{p}.csv", out_dir / f"{p}.csv.partial"):
                for r in read_rows(path):
                    if r.get("status") and r.get("id"):
                        done[(arch, r["id"])] = {k: r.get(k) or "" for k in RESULT_FIELDS}
    todo: dict[tuple[str, str], dict] = {}
    for profile, rows in by_profile.items():
        for rid, r in rows.items():
            if (r["arch"], rid) not in done:
                todo.setdefault((r["arch"], rid), r)
    log(f"{sum(map(len, by_profile.values()))} distinct rows, {len(todo)} to compile, {workers} workers")
    out_dir.mkdir(parents=True, exist_ok=True)
    partial = {p: open(out_dir / f"{p}.csv.partial", "a", newline="") for p in by_profile}
    try:
        with ProcessPoolExecutor(max_workers=max(1, workers), initializer=_init_worker) as pool:
            futures = {pool.submit(compile_spec, r["_spec"]): key for key, r in todo.items()}
            for i, f in enumerate(as_completed(futures), 1):
                key = futures[f]
                try:
                    res = f.result()
                except Exception as e:  # noqa: BLE001 - a crashed worker is recorded, not fatal
                    res = {k: "" for k in RESULT_FIELDS}
                    res.update(status="error", error=f"{type(e).__name__}: {e}"[:300])
                done[key] = res
                for profile, rows in by_profile.items():  # every profile of this arch with this row
                    if key[1] in rows and rows[key[1]]["arch"] == key[0]:
                        w = csv.DictWriter(partial[profile], fieldnames=FIELDS, extrasaction="ignore",
                                           lineterminator="\n")
                        w.writerow({**rows[key[1]], **res})
                        partial[profile].flush()
                if i % 25 == 0 or i == len(futures):
                    log(f"  {i}/{len(futures)} compiled")
    finally:
        for fh in partial.values():
            fh.close()
    result: dict[str, list[dict]] = {}
    for profile, rows in by_profile.items():
        hw = origami.load_profile(profile)
        out = []
        for rid, r in rows.items():
            res = done.get((hw.arch, rid))
            if res is None:
                continue
            row = {k: v for k, v in r.items() if k != "_spec"}
            row.update(res)
            row["programs_per_cu"] = (programs_per_cu(int(res["occupancy"]), int(row["num_warps"]),
                                                      int(res["lds_bytes"]), hw) if res["status"] == "ok" else "")
            cfg, prob = TileConfig.from_dict(r["_spec"]["config"]), _problem(r["dtype"], r["layout"], r["_spec"]["shape"])
            row["model_vgprs"] = space.amd_vgprs_per_thread(cfg, prob, hw)
            row["vgpr_budget"] = space.amd_register_budget(cfg, hw)
            out.append(row)
        result[profile] = out
    return result


def agreement(rows: list[dict], hw) -> dict:
    """Predicates (LDS + registers) against the compiler's verdict, on picks and on the whole census."""
    def table(sel):
        ok = [r for r in sel if r["status"] in ("ok",)]
        admit = [r for r in ok if int(r["pred_smem_ok"]) and int(r["pred_regs_ok"])]
        clean = [r for r in ok if compiles_cleanly(r, hw)]
        agree = sum((int(r["pred_smem_ok"]) and int(r["pred_regs_ok"])) == compiles_cleanly(r, hw) for r in ok)
        return dict(rows=len(sel), compiled=len(ok), admitted=len(admit), clean=len(clean), agree=agree,
                    admitted_not_clean=sum(not compiles_cleanly(r, hw) for r in admit),
                    rejected_but_clean=sum(compiles_cleanly(r, hw) for r in clean if r not in admit),
                    unsupported=sum(r["status"] == "unsupported" for r in sel),
                    errors=sum(r["status"] == "error" for r in sel))
    return dict(picks=table([r for r in rows if r["source"] == "pick"]), all=table(rows))


def main(argv: list[str] | None = None) -> int:
    import origami

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profiles", nargs="*", default=list(PROFILES))
    ap.add_argument("--shapes", nargs="*", default=None, help="shapes files (default: benchmarks/shapes/*.yaml)")
    ap.add_argument("--sample", type=int, default=640,
                    help="uniform-sample specs per profile, drawn 320 at a time (default 640: ~400 distinct compiles)")
    ap.add_argument("--no-picks", action="store_true")
    ap.add_argument("--ci", action="store_true", help="the fixed CI sample only")
    ap.add_argument("--workers", type=int, default=2, help="compile processes (at most 2)")
    ap.add_argument("--out", type=Path, default=OUT_DIR)
    ap.add_argument("--refresh", action="store_true", help="compile every row again (ignore the CSV's results)")
    args = ap.parse_args(argv)
    for p in args.profiles:
        if p not in PROFILES:
            ap.error(f"--profiles: {p!r} is not an AMD profile of the census ({', '.join(PROFILES)})")
    if not 1 <= args.workers <= 2:
        ap.error(f"--workers: must be 1 or 2, got {args.workers}")
    if args.ci:
        specs = ci_specs()
    else:
        files = [Path(f) for f in args.shapes] if args.shapes else sorted(SHAPES_DIR.glob("*.yaml"))
        specs = []
        if not args.no_picks:
            for p in args.profiles:
                specs += pick_specs(p, files)
        for p in args.profiles:
            for seed, start in enumerate(range(0, args.sample, _SAMPLE_CHUNK)):  # a larger --sample extends a smaller
                specs += sample_specs(p, min(_SAMPLE_CHUNK, args.sample - start), seed)
    result = run(specs, args.out, args.workers, log=lambda s: print(s, file=sys.stderr, flush=True),
                 refresh=args.refresh)
    for profile, rows in result.items():
        path = args.out / f"{profile}.csv"
        ids, sources = {r["id"] for r in rows}, {r["source"] for r in rows}
        # keep an earlier run's rows of the sources this run did not regenerate (e.g. --sample 0)
        rows += [r for r in read_rows(path) if r.get("id") not in ids and r.get("source") not in sources]
        write_csv(path, rows)
        (args.out / f"{profile}.csv.partial").unlink(missing_ok=True)
        print(json.dumps({"profile": profile, **agreement(rows, origami.load_profile(profile))}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

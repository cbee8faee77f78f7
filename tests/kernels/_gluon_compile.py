"""Compile the Gluon warp-specialised Hopper GEMM (tritonblas/kernels/gluon_hopper.py) for sm_90 on
a machine without a GPU, and report what the GPU would run. One JSON line per variant: compiled or
the error, ``metadata.shared`` next to the kernel's own accounting (``smem_bytes``), registers and
spills from the bundled ``ptxas -v``, and counts of the PTX / SASS features the design relies on
(TMA loads and store, wgmma, mbarrier try_wait, setmaxnreg for the partitions, named barriers).

    python tests/kernels/_gluon_compile.py [--dump DIR] [variant-name ...]   # TRITON_INTERPRET unset

Variant names: ``{BM}x{BN}x{BK}-s{STAGES}-{bf16|fp16}-{NN|NT|TN|TT}`` (A then B: N row-major, T
column-major), with ``-bias`` for the bias epilogue.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.pop("TRITON_INTERPRET", None)

import torch  # noqa: E402
import triton  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.runtime import driver  # noqa: E402

from tritonblas._aot import StubDriver  # noqa: E402

BIN = Path(triton.__file__).parent / "backends" / "nvidia" / "bin"
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}


def variant_names() -> list[str]:
    from tritonblas.kernels.gluon_hopper import VARIANTS

    return [f"{bm}x{bn}x{bk}-s{st}-{dt}-{lay}" for bm, bn, bk, st in VARIANTS for dt in DTYPES for lay in ("NN", "NT")]


def parse(name: str):
    tile, stages, dt, lay, *rest = name.split("-")
    bm, bn, bk = (int(x) for x in tile.split("x"))
    return bm, bn, bk, int(stages[1:]), DTYPES[dt], lay, "bias" in rest, "fast" in rest


PTX_FEATURES = {
    # the destination state space: shared::cluster (Triton 3.6), shared::cta (3.9)
    "tma_load": r"cp\.async\.bulk\.tensor\.\dd\.shared::(?:cluster|cta)\.global",
    "tma_store": r"cp\.async\.bulk\.tensor\.\dd\.global\.shared::cta",
    "wgmma": r"wgmma\.mma_async",
    "wgmma_wait_1": r"wgmma\.wait_group\.sync\.aligned\s+1;",
    "mbarrier_try_wait": r"mbarrier\.try_wait\.parity",
    "mbarrier_expect_tx": r"mbarrier\.arrive\.expect_tx",
    "mbarrier_arrive": r"mbarrier\.arrive\.shared::cta",
    "setmaxnreg_inc": r"setmaxnreg\.inc",
    "setmaxnreg_dec": r"setmaxnreg\.dec",
    "named_bar_256": r"bar\.sync\s+\d+,\s*256;",
    "bulk_wait_read": r"cp\.async\.bulk\.wait_group\.read",
    "fence_proxy_async": r"fence\.proxy\.async",
    "local_memory": r"\b(?:ld|st)\.local",
    "ld_global": r"\bld\.global",  # the bias epilogue's only direct global load
}
SASS_FEATURES = {"UTMALDG": r"UTMALDG", "UTMASTG": r"UTMASTG", "HGMMA": r"HGMMA", "QGMMA": r"QGMMA",
                 "USETMAXREG": r"USETMAXREG",
                 "SYNCS": r"SYNCS", "STL/LDL": r"\b(?:STL|LDL)\b"}


def _ptxas_path() -> str:
    """The ptxas this Triton assembles sm_90 with: its own choice where it says (Triton 3.9:
    ``get_ptxas(90)``, the newer of the two bundled, as its PTX version needs it), else the bundled
    ``ptxas``."""
    try:
        from triton.backends.nvidia.compiler import get_ptxas

        return get_ptxas(90).path
    except (ImportError, AttributeError, TypeError):
        return str(BIN / "ptxas")


def _ptxas(ptx: str) -> dict:
    """Registers / spills / barriers of the PTX as the bundled ptxas reports them (sm_90a)."""
    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "k.ptx"
        src.write_text(ptx)
        r = subprocess.run([_ptxas_path(), "-arch=sm_90a", "-v", str(src), "-o", str(Path(d) / "k.cubin")],
                           capture_output=True, text=True, timeout=300)
    text = r.stdout + r.stderr
    out = {}
    if m := re.search(r"Used (\d+) registers", text):
        out["regs"] = int(m.group(1))
    if m := re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", text):
        out["spill_stores"], out["spill_loads"] = int(m.group(1)), int(m.group(2))
    if m := re.search(r"used (\d+) barriers", text):
        out["hw_barriers"] = int(m.group(1))
    return out


def _sass(cubin: bytes) -> dict:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "k.cubin"
        path.write_bytes(cubin)
        sass = subprocess.run([str(BIN / "cuobjdump"), "-sass", str(path)], capture_output=True, text=True,
                              timeout=300).stdout
        res = subprocess.run([str(BIN / "cuobjdump"), "--dump-resource-usage", str(path)], capture_output=True,
                             text=True, timeout=300).stdout
    out = {k: len(re.findall(p, sass)) for k, p in SASS_FEATURES.items()}
    if m := re.search(r"SHARED:(\d+)", res):
        out["static_shared"] = int(m.group(1))
    return out


def compile_variant(name: str, dump: Path | None = None, m: int = 4096, n: int = 4096, k: int = 4096) -> dict:
    from tritonblas.kernels import gluon_hopper as G

    bm, bn, bk, stages, dtype, lay, has_bias, fast = parse(name)
    fp8 = dtype in (torch.float8_e4m3fn, torch.float8_e5m2)
    out_dtype = torch.bfloat16 if fp8 else dtype
    a = torch.empty(k, m, dtype=dtype).t() if lay[0] == "T" else torch.empty(m, k, dtype=dtype)
    b = torch.empty(n, k, dtype=dtype).t() if lay[1] == "T" else torch.empty(k, n, dtype=dtype)
    c = torch.empty(m, n, dtype=out_dtype)
    assert G.supports(m, n, k, dtype, a.stride(), b.stride(), c.stride(), out_dtype) is None
    a_desc, b_desc, c_desc, mmajor, kmajor = G.make_descriptors(a, b, c, bm, bn, bk)
    assert (mmajor, kmajor) == (lay[0] == "T", lay[1] == "T")
    bias = torch.empty(n, dtype=out_dtype) if has_bias else c
    # fp8: row-wise scales (torch._scaled_mm's recipe), promoted every K-step unless "-fast"
    sa, sb = (torch.empty(m), torch.empty(n)) if fp8 else (c, c)
    compiled = G.gluon_gemm_ws_kernel.warmup(
        a_desc, b_desc, c_desc, bias, sa, sb, m, n, k, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, STAGES=stages, GROUP_M=8,
        A_MMAJOR=mmajor, B_KMAJOR=kmajor, HAS_BIAS=has_bias, SCALE=2 if fp8 else 0,
        MAX_IMPRECISE=bk if fp8 and not fast else 0, PRODUCER_REGS=G.PRODUCER_REGS, grid=(132,), **G.launch_options())
    ptx = compiled.asm["ptx"]
    if dump is not None:
        dump.mkdir(parents=True, exist_ok=True)
        for key, v in compiled.asm.items():
            p = dump / f"{name}.{key}"
            p.write_bytes(v) if isinstance(v, bytes) else p.write_text(v)
    row = dict(name=name, shared=compiled.metadata.shared,
               smem=G.smem_bytes(bm, bn, bk, stages, 1 if fp8 else 2, 2),
               max_smem=G.MAX_SMEM, num_warps=compiled.metadata.num_warps,
               reqntid=int(m.group(1)) if (m := re.search(r"\.reqntid (\d+)", ptx)) else None,
               setmaxnreg=sorted({int(x) for x in re.findall(r"setmaxnreg\.\w+\.sync\.aligned\.u32\s+(\d+)", ptx)}))
    row.update({k: len(re.findall(p, ptx)) for k, p in PTX_FEATURES.items()})
    # the wgmma's last two immediates: transpose A / transpose B (1 = the operand is MN-major in shared
    # memory); an fp8 wgmma has no transpose immediates (both operands K-major), so its last two are the
    # scale-a / scale-b immediates
    row["wgmma_trans"] = sorted({(int(x), int(y)) for x, y in re.findall(r"wgmma\.mma_async[^;]*,\s*(\d),\s*(\d);", ptx)})
    row.update(_ptxas(ptx))
    row.update(_sass(compiled.asm["cubin"]))
    row["fp8"] = fp8
    row["add_f32"] = len(re.findall(r"\badd\.(?:rn\.)?f32", ptx))  # the fp8 promotion's adds into the accumulator
    return row


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dump", type=Path, default=None, help="write ttgir/llir/ptx/cubin of each variant here")
    ap.add_argument("names", nargs="*")
    args = ap.parse_args(argv)
    driver.set_active(StubDriver(GPUTarget("cuda", 90, 32)))
    from tritonblas.kernels import gluon_hopper as G

    if not G.HAS_GLUON:
        print(json.dumps(dict(name="*", ok=False, error="no gluon in this triton", skip=True)), flush=True)
        return 0
    for name in args.names or variant_names():
        try:
            row = compile_variant(name, args.dump)
            row["ok"] = True
        except Exception as e:  # noqa: BLE001 - reported per variant
            row = dict(name=name, ok=False, error=f"{type(e).__name__}: {e}"[:3000])
        print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

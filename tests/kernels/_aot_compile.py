"""Compile tritonblas kernels for sm_90 (H200) and gfx942 (MI300X) on a machine without a GPU.

Triton's frontend, MLIR passes and the assemblers it bundles (ptxas, ld.lld) need no GPU; only the
launcher does. A stub driver reports the target, and ``JITFunction.warmup`` compiles without
launching. Prints one JSON line per case: compiled or the error, ``metadata.shared`` against
``origami.space.smem_bytes``, and a census of the global loads (16-byte cp.async, TMA, scalar
2-byte loads on NVIDIA; dwordx4 vs short loads on AMD).

    python tests/kernels/_aot_compile.py [case-name ...]      # TRITON_INTERPRET must not be set
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.pop("TRITON_INTERPRET", None)

import torch  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402

from tritonblas._aot import prepare_on_cpu, use_target  # noqa: E402


def _case(kind, bm, bn, bk, warps, stages, m, n, k, dtype=torch.bfloat16, layout="NN", tma=False, batch=None,
          ld=None, hints=True, grid=132, split=2, flat=False, out_t=False, stage=(False, False),
          **launch_kwargs):
    return dict(kind=kind, bm=bm, bn=bn, bk=bk, warps=warps, stages=stages, m=m, n=n, k=k, dtype=dtype,
                layout=layout, tma=tma, batch=batch, ld=ld, hints=hints, grid=grid, split=split, flat=flat, out_t=out_t,
                stage=stage, kw=launch_kwargs)


BF16, FP16, FP32, E4M3 = torch.bfloat16, torch.float16, torch.float32, torch.float8_e4m3fn
E4M3FNUZ = torch.float8_e4m3fnuz
CASES = {
    "dp-n1000": _case("dp", 128, 128, 64, 4, 3, 4096, 1000, 7000),
    "dp-n1024": _case("dp", 128, 128, 64, 4, 3, 4096, 1024, 7168),
    "dp-n1000-hints-off": _case("dp", 128, 128, 64, 4, 3, 4096, 1000, 7000, hints=False),
    "dp-n511": _case("dp", 128, 128, 64, 4, 3, 4096, 511, 4099),
    "dp-padded-ld-odd-n": _case("dp", 128, 128, 64, 4, 3, 4096, 1001, 7000, ld=1008),
    # F.linear with ragged out_features: a and the K-major weight 16-byte aligned, out's rows (1001 bf16) not
    "dp-unaligned-out-only-NT": _case("dp", 128, 128, 64, 4, 3, 4096, 1001, 7168, BF16, "NT"),
    "dp-256x128-w8-s3-TT": _case("dp", 256, 128, 64, 8, 3, 4096, 4096, 4096, FP16, "TT"),
    "persistent-128x256-w8-s3-TN": _case("persistent", 128, 256, 64, 8, 3, 4096, 4096, 4096, BF16, "TN"),
    "streamk-128x128-NT-epilogue": _case("streamk", 128, 128, 64, 4, 4, 1536, 1536, 4096, BF16, "NT",
                                         bias=True, activation="gelu", c=True),
    "splitk-16x64x128-s5": _case("splitk", 16, 64, 128, 4, 5, 16, 4096, 4096, BF16, split=4),
    "tma-dp-128x256-w8-s3": _case("dp", 128, 256, 64, 8, 3, 4096, 4096, 4096, BF16, tma=True),
    "tma-streamk-128x256-w8-s3": _case("streamk", 128, 256, 64, 8, 3, 1536, 3584, 8192, BF16, tma=True),
    "streamk-128x256-w8-s3": _case("streamk", 128, 256, 64, 8, 3, 1536, 3584, 8192, BF16),
    "tma-streamk-batched-TT-epilogue": _case("streamk", 128, 128, 64, 4, 4, 512, 512, 1024, FP16, "TT", tma=True,
                                             batch=3, grid=20, bias=True, activation="relu"),
    "tma-splitk-16x64x128-s4": _case("splitk", 16, 64, 128, 4, 4, 1, 8192, 8192, BF16, tma=True, split=4),
    "tma-flat-persistent-128x256-w8-s3": _case("persistent", 128, 256, 64, 8, 3, 4096, 4096, 4096, BF16, tma=True,
                                               flat=True),
    "tma-flat-dp-128x256-w8-s3": _case("dp", 128, 256, 64, 8, 3, 4096, 4096, 4096, BF16, tma=True, flat=True),
    "tma-flat-persistent-fp32-out-epilogue": _case("persistent", 128, 128, 32, 8, 3, 1000, 1000, 1024, FP32, "TN",
                                                   tma=True, flat=True, allow_tf32=True, bias=True,
                                                   activation="gelu", c=True),
    "tma-flat-persistent-batched-ptr-out": _case("persistent", 128, 128, 64, 4, 3, 512, 520, 1024, FP16, tma=True,
                                                 flat=True, batch=3, out_t=True),
    "tma-persistent-batched-NT": _case("persistent", 128, 128, 64, 4, 4, 512, 512, 1024, BF16, "NT", tma=True,
                                       batch=3),
    "fp32-tf32": _case("dp", 128, 128, 32, 4, 3, 2048, 2048, 2048, FP32, allow_tf32=True),
    # Hopper's wgmma reads 32-bit (tf32) and 8-bit operands only K-major from shared memory: an
    # N-major B (layout N) is staged through registers into a transposed copy every K-step
    "tma-tf32-NN": _case("dp", 128, 128, 32, 8, 3, 2048, 2048, 2048, FP32, "NN", tma=True, allow_tf32=True),
    "tma-tf32-NT": _case("dp", 128, 128, 32, 8, 3, 2048, 2048, 2048, FP32, "NT", tma=True, allow_tf32=True),
    "fp32-ieee": _case("dp", 64, 64, 32, 4, 2, 2048, 2048, 2048, FP32),
    "fp8-NT-rowcol": _case("dp", 128, 128, 128, 8, 3, 4096, 4096, 4096, E4M3, "NT", scales="rowcol"),
    "fp8-NN-fastacc": _case("dp", 128, 128, 128, 8, 3, 4096, 4096, 4096, E4M3, "NN", scales="tensor",
                            fp8_fast_accum=True),
    # fp8 tiles with BLOCK_K under the promotion interval (plan.fp8_promote_k): h100's picks for 16x28672x8192 and
    # 128x10240x8192, which failed to compile on an H100 while the interval was passed uncapped ("at 28:14")
    "fp8-NT-rowcol-bk64": _case("dp", 16, 128, 64, 4, 4, 16, 28672, 8192, E4M3, "NT", scales="rowcol"),
    "fp8-splitk-NT-rowcol-bk64": _case("splitk", 128, 128, 64, 8, 4, 128, 10240, 8192, E4M3, "NT", scales="rowcol",
                                       split=4),
}
AMD_CASES = {  # gfx942, chiplet remap over 8 XCDs, AMD launch options (configs origami.space admits:
    # 256x256x64 w8 s2 and a 256x128x64 w8 s2 Stream-K spill on gfx942, benchmarks/data/amd_aot/)
    "amd-dp-n1000": _case("dp", 256, 128, 64, 8, 2, 4096, 1000, 7000, chunk=4),
    "amd-dp-n1000-hints-off": _case("dp", 256, 128, 64, 8, 2, 4096, 1000, 7000, chunk=4, hints=False),
    "amd-dp-unaligned-out-only-NT": _case("dp", 128, 128, 64, 8, 2, 4096, 1001, 7168, BF16, "NT", chunk=4),
    # b's and out's rows 1001 bf16 apart (2-byte aligned; extents 1000), a aligned: unstaged, and b alignment-staged
    # (waves_per_eu 0: the VGPR budget under which origami's register rule admits this tile unaligned)
    "amd-dp-unaligned-b": _case("dp", 64, 128, 32, 4, 2, 4096, 1000, 1000, BF16, ld=1001, chunk=4, wpe=0),
    "amd-dp-unaligned-b-staged": _case("dp", 64, 128, 32, 4, 2, 4096, 1000, 1000, BF16, ld=1001, chunk=4, wpe=0,
                                       stage=(False, True)),
    "amd-streamk-NT": _case("streamk", 128, 128, 64, 8, 2, 4096, 4096, 4096, BF16, "NT", grid=304, chunk=4),
    "amd-splitk-fp16": _case("splitk", 64, 256, 64, 8, 2, 64, 4096, 4096, FP16, split=2),
    # fp8 on gfx942: its own fnuz encoding on fp8 MFMA; OCP e4m3fn upcast to fp16 MFMA (origami.hardware rate_key)
    "amd-fp8-fnuz-NT-rowcol": _case("dp", 128, 128, 128, 8, 2, 4096, 4096, 4096, E4M3FNUZ, "NT", scales="rowcol",
                                    chunk=4, wpe=0),
    "amd-fp8-ocp-NT-rowcol": _case("dp", 128, 128, 128, 8, 2, 4096, 4096, 4096, E4M3, "NT", scales="rowcol",
                                   chunk=4, wpe=0),
}


def _operand(rows, cols, dtype, transposed, batch, ld):
    lead = (batch,) if batch else ()
    if transposed:
        return torch.empty(*lead, cols, rows, dtype=dtype).transpose(-1, -2)
    if ld is not None:
        return torch.empty(*lead, rows, ld, dtype=dtype)[..., :cols]
    return torch.empty(*lead, rows, cols, dtype=dtype)


def compile_case(name: str, hw) -> dict:
    """Compile one case of CASES (NVIDIA profile) or AMD_CASES (AMD profile) with the stub driver."""
    import origami
    from tritonblas import plan as P
    from origami.space import smem_bytes

    c = {**CASES, **AMD_CASES}[name]
    a = _operand(c["m"], c["k"], c["dtype"], c["layout"][0] == "T", c["batch"], None)
    b = _operand(c["k"], c["n"], c["dtype"], c["layout"][1] == "T", None, c["ld"])
    out_dtype = BF16 if c["dtype"] in (E4M3, E4M3FNUZ) else c["dtype"]
    out = _operand(c["m"], c["n"], out_dtype, c["out_t"], c["batch"], c["ld"])
    extra = dict(grid=c["grid"]) if c["kind"] in ("persistent", "streamk") else \
        dict(split_k=c["split"]) if c["kind"] == "splitk" else {}
    kw = dict(c["kw"])
    if hw.is_amd:
        chunk = kw.pop("chunk", 1)
        extra.update(num_chiplets=hw.chiplets, chunk=chunk, waves_per_eu=kw.pop("wpe", 2), matrix_instr_nonkdim=16,
                     kpack=1)
    cfg = origami.TileConfig(kind=c["kind"], block_m=c["bm"], block_n=c["bn"], block_k=c["bk"], num_warps=c["warps"],
                             num_stages=c["stages"], **extra)
    if kw.pop("bias", False):
        kw["bias"] = torch.empty(c["n"], dtype=torch.float32)
    if kw.pop("c", False):
        kw.update(c=torch.empty(c["m"], c["n"], dtype=torch.float32), beta=0.5)
    scales = kw.pop("scales", None)
    if scales == "rowcol":
        kw.update(scale_a=torch.empty(c["m"]), scale_b=torch.empty(c["n"]))
    elif scales == "tensor":
        kw.update(scale_a=torch.empty(()), scale_b=torch.empty(()))
    problem = P.problem_from_tensors(a, b, out)
    ab_align = (P.alignment_bytes(a), P.alignment_bytes(b))
    if problem.align_bytes < 16 and (any(c["stage"]) or P.reads_as_is(problem, ab_align,
                                                                      (P.operand_order(a), P.operand_order(b)))):
        # out alone unaligned, or operands staged: the aligned problem, as the dispatcher plans it
        problem = dataclasses.replace(problem, align_bytes=16)
    plan = P.make_plan(cfg, problem, hw, tma=c["tma"], flat=c["flat"], stage=c["stage"])
    prepared = prepare_on_cpu(plan, a, b, out, **kw)
    if not c["hints"]:
        for key in ("A_ALIGN", "B_ALIGN", "OUT_ALIGN", "A_EDGE", "B_EDGE", "OUT_EDGE"):
            prepared.kwargs[key] = 1
    compiled = prepared.kernel.warmup(*prepared.args, grid=prepared.grid, **prepared.kwargs)
    if hw.is_amd:
        gcn = compiled.asm["amdgcn"]
        return dict(
            name=name, kernel=prepared.kernel.fn.__name__, config=cfg.short(), shared=compiled.metadata.shared,
            predicate=smem_bytes(cfg, plan.problem, hw),
            dwordx4_loads=len(re.findall(r"(?:global|buffer)_load_dwordx4", gcn)),
            short_loads=len(re.findall(r"(?:global|buffer)_load_(?:short|ushort|sshort|ubyte|sbyte)\w*", gcn)),
            mfma=len(re.findall(r"v_mfma", gcn)),
            mfma_fp8=len(re.findall(r"v_mfma_\w*_(?:fp8|bf8)_(?:fp8|bf8)", gcn)),
            mfma_f16=len(re.findall(r"v_mfma_\w*_f16\b", gcn)),
            align={k: prepared.kwargs[k] for k in ("A_ALIGN", "B_ALIGN", "OUT_ALIGN", "A_EDGE", "B_EDGE", "OUT_EDGE")},
        )
    ptx = compiled.asm["ptx"]
    return dict(
        name=name, kernel=prepared.kernel.fn.__name__, config=cfg.short(), shared=compiled.metadata.shared,
        predicate=smem_bytes(cfg, plan.problem, hw),
        cp_async_16=len(re.findall(r"cp\.async\.c[ag]\.shared\.global[^;]*,\s*(?:0x10|16)\s*[,;]", ptx)),
        cp_async_small=len(re.findall(r"cp\.async\.c[ag]\.shared\.global[^;]*,\s*(?:0x4|0x8|4|8)\s*[,;]", ptx)),
        tma_loads=len(re.findall(r"cp\.async\.bulk\.tensor\.\dd\.shared[^;]*global", ptx)),
        tma_stores=len(re.findall(r"cp\.async\.bulk\.tensor\.\dd\.global\.shared", ptx)),
        st_global=len(re.findall(r"\bst\.global", ptx)),
        scalar_b16_loads=len(re.findall(r"ld\.global(?:\.[\w:]+)*\.b16\b", ptx)),
        wgmma=len(re.findall(r"wgmma\.mma_async", ptx)),
        # operand tiles copied from registers into shared memory inside the kernel (ttg.local_alloc of
        # a tensor), and whether every wgmma is waited for before the next is issued (pendings = 0 only)
        smem_from_regs=len(re.findall(r"ttg\.local_alloc %", compiled.asm["ttgir"])),
        wgmma_sync=not re.search(r"warp_group_dot_wait[^\n]*pendings = [1-9]", compiled.asm["ttgir"]),
        align={k: prepared.kwargs[k] for k in ("A_ALIGN", "B_ALIGN", "OUT_ALIGN", "A_EDGE", "B_EDGE", "OUT_EDGE")},
    )


def main(names: list[str]) -> int:
    import origami

    targets = ((GPUTarget("cuda", 90, 32), origami.load_profile("h200"), CASES),
               (GPUTarget("hip", "gfx942", 64), origami.load_profile("mi300x"), AMD_CASES))
    for target, hw, cases in targets:
        use_target(target)
        for name in cases:
            if names and name not in names:
                continue
            try:
                row = compile_case(name, hw)
                row["ok"] = True
            except Exception as e:  # noqa: BLE001 - reported per case
                row = dict(name=name, ok=False, error=f"{type(e).__name__}: {e}"[:2000])
            print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Compile every kernel family for sm_90 (H200) and gfx942 (MI300X) on this machine — no GPU needed:
Triton's compiler and its bundled assemblers run on the CPU — and check what the GPU will run: the
N = 1000 fast path in the PTX / AMDGCN, and ``origami.space.smem_bytes`` against the compiled
kernels' ``metadata.shared``.

Runs ``_aot_compile.py`` in a subprocess: this test process decorates kernels for the interpreter.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    ptxas = Path(__import__("triton").__file__).parent / "backends" / "nvidia" / "bin" / "ptxas"
    if not ptxas.exists():
        pytest.skip("Triton's bundled ptxas is missing")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["TRITON_CACHE_DIR"] = str(tmp_path_factory.mktemp("triton_cache"))
    r = subprocess.run([sys.executable, str(HERE / "_aot_compile.py")], capture_output=True, text=True, env=env,
                       timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    rows = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
    return {row["name"]: row for row in rows}


@pytest.mark.timeout(600)
def test_every_case_compiles(compiled):
    failed = {n: r["error"] for n, r in compiled.items() if not r["ok"]}
    assert not failed, failed


@pytest.mark.timeout(600)
def test_n1000_compiles_to_the_n1024_fast_path(compiled):
    """N = 1000 bf16 (rows 2000 bytes): 16-byte cp.async, multi-stage pipeline, no scalar 2-byte loads,
    exactly like N = 1024. Without the hints (or with 2-byte-aligned rows) there is no cp.async."""
    n1000, n1024 = compiled["dp-n1000"], compiled["dp-n1024"]
    assert n1000["cp_async_16"] > 0 and n1000["scalar_b16_loads"] == 0
    assert (n1000["cp_async_16"], n1000["shared"]) == (n1024["cp_async_16"], n1024["shared"])
    off = compiled["dp-n1000-hints-off"]
    assert off["cp_async_16"] == 0 and off["scalar_b16_loads"] > 0 and off["shared"] < n1000["shared"]
    padded = compiled["dp-padded-ld-odd-n"]  # 16-byte strides, odd extent: interior tiles keep cp.async
    assert padded["cp_async_16"] > 0 and padded["shared"] == n1000["shared"]


@pytest.mark.timeout(600)
def test_amd_n1000_uses_dwordx4_loads(compiled):
    on, off = compiled["amd-dp-n1000"], compiled["amd-dp-n1000-hints-off"]
    assert on["dwordx4_loads"] > 0 and on["short_loads"] == 0
    assert off["dwordx4_loads"] == 0 and off["short_loads"] > 0


@pytest.mark.timeout(600)
def test_unaligned_out_alone_keeps_vector_loads(compiled):
    """F.linear with ragged out_features (N = 1001 bf16 rows, a and the K-major weight 16-byte aligned): each
    operand keeps its own alignment class (plan.align_elements), so a and b load as 16-byte vectors and only
    out's stores are narrow. With one class for all three (the minimum, before 2026-12-05) the same kernels
    compiled to 512 scalar 2-byte loads and no cp.async (sm_90) and 128 short loads, no dwordx4 (gfx942)."""
    for name in ("dp-unaligned-out-only-NT", "amd-dp-unaligned-out-only-NT"):
        r = compiled[name]
        assert (r["align"]["A_ALIGN"], r["align"]["B_ALIGN"], r["align"]["OUT_ALIGN"]) == (8, 8, 1), r
    nv, amd = compiled["dp-unaligned-out-only-NT"], compiled["amd-dp-unaligned-out-only-NT"]
    assert nv["cp_async_16"] > 0 and nv["scalar_b16_loads"] == 0
    assert (nv["cp_async_16"], nv["shared"]) == (compiled["dp-n1000"]["cp_async_16"], compiled["dp-n1000"]["shared"])
    assert amd["dwordx4_loads"] > 0 and amd["short_loads"] == 0


@pytest.mark.timeout(600)
def test_amd_alignment_staging_turns_short_loads_into_dwordx4(compiled):
    """A 2-byte-aligned B (rows 1001 bf16 apart) loads with short loads on gfx942; the staged plan binds a padded
    copy (plan.staging_buffer) to the same pointer kernel, whose loads are then all dwordx4."""
    plain, staged = compiled["amd-dp-unaligned-b"], compiled["amd-dp-unaligned-b-staged"]
    assert plain["align"]["B_ALIGN"] == 1 and plain["short_loads"] > 0
    assert staged["align"]["B_ALIGN"] == 8 and staged["short_loads"] == 0 and staged["dwordx4_loads"] > plain["dwordx4_loads"]
    assert staged["kernel"] == plain["kernel"] == "gemm_kernel"


@pytest.mark.timeout(600)
def test_gfx942_runs_fnuz_fp8_on_fp8_mfma_and_ocp_on_fp16(compiled):
    """The fact origami.hardware.HardwareProfile.rate_key encodes: on gfx942 our scaled fp8 kernel compiles the fnuz
    encoding to fp8 MFMAs and OCP e4m3fn to fp16 MFMAs (an upcast: twice the instructions, fp16's rate)."""
    import origami
    from origami.problem import DType

    fnuz, ocp = compiled["amd-fp8-fnuz-NT-rowcol"], compiled["amd-fp8-ocp-NT-rowcol"]
    assert fnuz["mfma_fp8"] > 0 and fnuz["mfma_f16"] == 0
    assert ocp["mfma_fp8"] == 0 and ocp["mfma_f16"] == 2 * fnuz["mfma_fp8"]
    hw = origami.load_profile("mi300x")
    assert (hw.rate_key(DType.FP8_E4M3_FNUZ), hw.rate_key(DType.FP8_E4M3)) == ("fp8", "fp16")


@pytest.mark.timeout(600)
def test_smem_predicate_covers_compiled_kernels(compiled):
    """Pointer kernels: Triton allocates ≤ num_stages·(A + B) tiles on NVIDIA and exactly
    (num_stages − 1)·(A + B) LDS on AMD (the predicate). TMA kernels allocate 8 bytes of mbarrier
    per stage on top, which the predicate (that does not know TMA) leaves out: recorded exactly
    so a change shows."""
    for name, r in compiled.items():
        if not r["ok"]:
            continue
        stages = int(r["config"].split(" s")[1].split()[0])
        if name.startswith("amd-") and "hints-off" not in name:
            assert r["shared"] == r["predicate"], (name, r["shared"], r["predicate"])
        elif r["kernel"] == "gemm_tma_flat_kernel":
            # + output staging / store scratch that make_plan's _flat_smem_ok bounds by a whole tile
            from tritonblas.plan import _flat_smem_ok  # noqa: F401 - the guard this checks
            bm, bn = (int(x) for x in r["config"].split()[1].split("x")[:2])
            assert r["predicate"] < r["shared"] <= r["predicate"] + bm * bn * 4 + 1024, (name, r["shared"])
        elif r.get("tma_loads") and r.get("wgmma") and r["kernel"] == "gemm_tma_kernel" and not r.get("smem_from_regs"):
            assert r["shared"] == r["predicate"] + 8 * stages, (name, r["shared"], r["predicate"])
        elif r.get("tma_loads") and r.get("wgmma"):  # Stream-K TMA: 8 or 16 bytes of barriers per stage
            assert r["predicate"] + 8 * stages <= r["shared"] <= r["predicate"] + 16 * stages, (name, r["shared"])
        elif r.get("tma_loads"):  # mma.sync (BLOCK_M < 64): the pipeline keeps num_stages − 1 buffers
            assert r["shared"] <= r["predicate"] + 8 * stages, (name, r["shared"], r["predicate"])
        else:
            assert r["shared"] <= r["predicate"], (name, r["shared"], r["predicate"])


@pytest.mark.timeout(600)
def test_fp8_keeps_wgmma_in_both_accumulation_modes(compiled):
    for name in ("fp8-NT-rowcol", "fp8-NN-fastacc"):
        assert compiled[name]["wgmma"] > 0, name


@pytest.mark.timeout(600)
def test_new_tma_kernels_compile_to_tma(compiled):
    """Stream-K / split-K TMA: bulk tensor loads, no cp.async, no register spills where the pointer
    Stream-K of the same config spills; the flat kernel stores through TMA (no st.global)."""
    for name in ("tma-streamk-128x256-w8-s3", "tma-streamk-batched-TT-epilogue", "tma-splitk-16x64x128-s4",
                 "tma-flat-persistent-128x256-w8-s3", "tma-flat-dp-128x256-w8-s3"):
        r = compiled[name]
        assert r["tma_loads"] > 0 and r["cp_async_16"] == 0, name
    assert compiled["tma-streamk-128x256-w8-s3"]["kernel"] == "gemm_streamk_tma_kernel"
    assert compiled["tma-splitk-16x64x128-s4"]["kernel"] == "gemm_splitk_tma_kernel"
    flat = compiled["tma-flat-persistent-128x256-w8-s3"]
    assert flat["kernel"] == "gemm_tma_flat_kernel" and flat["tma_stores"] > 0 and flat["st_global"] == 0
    assert compiled["tma-flat-persistent-batched-ptr-out"]["tma_stores"] == 0



def test_hopper_tf32_wants_a_k_major_b(compiled):
    """Known slow path (Triton 3.6, sm_90), pinned so a fix — or a Triton that changes it — shows up:
    with a K-major B (layout T) the TF32 tiles go from TMA straight to wgmma with one MMA in flight;
    with an N-major B (layout N) each K-step copies B through registers into a transposed
    shared-memory tile and waits for every wgmma. fp8 behaves the same (probed 2026-11-30). On the
    H200, tritonblas.matmul ran fp32 (TF32) 8192^3 NN at 78 TFLOP/s against torch's 356
    (benchmarks/results/calibrate_h200_7d86f53.log)."""
    nn, nt = compiled["tma-tf32-NN"], compiled["tma-tf32-NT"]
    assert nt["smem_from_regs"] == 0 and not nt["wgmma_sync"], nt
    assert nn["smem_from_regs"] >= 1 and nn["wgmma_sync"], nn

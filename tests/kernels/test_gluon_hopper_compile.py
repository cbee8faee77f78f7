"""The experimental Gluon Hopper GEMM (tritonblas/kernels/gluon_hopper.py) on a CPU-only machine:
every variant compiles for sm_90 through the stub driver, and the PTX/SASS has what the design
relies on (TMA loads and store, async wgmma with one group in flight, mbarrier waits, setmaxnreg
for the producer/consumer partitions, no local memory); shared memory fits the 232448-byte limit;
``supports()`` and the wrapper's argument checks.

The compile runs ``_gluon_compile.py`` in a subprocess: this test process decorates kernels for the
interpreter (conftest sets TRITON_INTERPRET) and must keep the real driver.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tritonblas.kernels import gluon_hopper as G

HERE = Path(__file__).resolve().parent
needs_gluon = pytest.mark.skipif(not G.HAS_GLUON, reason="this Triton has no triton.experimental.gluon")


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    import triton

    if not (Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "ptxas").exists():
        pytest.skip("Triton's bundled ptxas is missing")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["TRITON_CACHE_DIR"] = str(tmp_path_factory.mktemp("triton_cache"))
    r = subprocess.run([sys.executable, str(HERE / "_gluon_compile.py"), *_names()], capture_output=True, text=True,
                       env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    rows = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
    return {row["name"]: row for row in rows}


# other configurations the wrapper accepts (block_n 64, block_k 32, deeper rings): compile-checked only
EXTRA = ["128x64x64-s4-bf16-NN", "128x256x32-s4-bf16-NT", "128x128x32-s6-fp16-NN", "128x64x32-s8-bf16-NT",
         # the bias epilogue (F.linear's bias): the variants the dispatcher runs
         "128x256x64-s3-bf16-NT-bias", "128x128x64-s4-fp16-NT-bias",
         # a column-major A (a weight gradient's grad.T): wgmma reads it through a transposed view
         "128x256x64-s3-bf16-TN", "128x128x64-s4-fp16-TN", "128x256x64-s3-bf16-TT",
         # gluon_scaled_mm (fp8 in, bf16 out, row-wise scales): promoted every K-step, or "-fast"
         "128x128x128-s5-e4m3-NT", "128x128x128-s5-e5m2-NT", "128x256x128-s3-e4m3-NT-fast",
         "128x128x128-s5-e4m3-NT-bias"]


def _names():
    return [f"{bm}x{bn}x{bk}-s{st}-{dt}-{lay}" for bm, bn, bk, st in G.VARIANTS for dt in ("bf16", "fp16")
            for lay in ("NN", "NT")] + EXTRA


@needs_gluon
@pytest.mark.timeout(300)
def test_every_variant_compiles_for_sm90(compiled):
    assert set(compiled) == set(_names())
    failed = {n: r["error"] for n, r in compiled.items() if not r["ok"]}
    assert not failed, failed


@needs_gluon
@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", _names())
def test_ptx_has_the_warp_specialised_pipeline(compiled, name):
    r = compiled[name]
    assert r["ok"], r.get("error")
    bm, bn, bk = (int(x) for x in name.split("-")[0].split("x"))
    # TMA: A is one box; B is one box NT ([BN, 64] rows of 128 bytes), BN / 64 boxes NN (128-byte
    # swizzle caps a box row at 64 elements); the epilogue stores through TMA
    lay = name.split("-")[3]  # A then B, N row-major / T column-major; a box row holds at most 64 elements
    assert r["tma_load"] == (bm // 64 if lay[0] == "T" else 1) + (1 if lay[1] == "T" else bn // 64), r
    assert r["tma_store"] >= 1 and r["UTMASTG"] >= 1 and r["UTMALDG"] >= 2
    # the operands' majorness reaches the wgmma: A transposed when stored column-major (grad.T), B
    # transposed (MN-major) when stored row-major (K, N)
    if not r["fp8"]:
        assert r["wgmma_trans"] == [[int(lay[0] == "T"), int(lay[1] == "N")]], r["wgmma_trans"]
    # 64-row wgmma per warpgroup, k = 32 bytes: BK / 16 (bf16) or BK / 32 (fp8) instructions per K-step,
    # at most one group in flight
    ik = 32 if r["fp8"] else 16
    assert r["wgmma"] == bk // ik and r["HGMMA" if not r["fp8"] else "QGMMA"] == bk // ik, r
    # fp8 without fast accumulation: the partial sum of each K-step is added into the fp32 accumulator
    # (one add per accumulator element a thread holds: BM * BN / 256); with it, or for bf16, none
    if r["fp8"]:
        per_thread = bm * bn // 256
        if "-fast" in name:
            assert r["add_f32"] < per_thread, r["add_f32"]
        else:
            assert r["add_f32"] >= per_thread, r["add_f32"]
    assert r["wgmma_wait_1"] >= 1
    # a producer and a consumer wait (ready / empty), the expect-tx arrive, the consumer's release
    assert r["mbarrier_try_wait"] >= 2 and r["mbarrier_expect_tx"] >= 1 and r["mbarrier_arrive"] >= 2
    # partitions: 8 consumer warps + the producer's warpgroup, registers moved between them
    assert r["reqntid"] == 384 and r["num_warps"] == 12
    assert G.PRODUCER_REGS in r["setmaxnreg"] and r["setmaxnreg_inc"] > 0 and r["setmaxnreg_dec"] > 0
    assert r["USETMAXREG"] > 0
    # the consumer's release barrier across both warpgroups (named barrier of 256 threads)
    assert r["named_bar_256"] > 0
    assert r["local_memory"] == 0 and r["STL/LDL"] == 0
    # operands only through TMA; the bias and the fp8 scales are the only direct global loads
    assert (r["ld_global"] > 0) == (name.endswith("-bias") or r["fp8"]), r
    assert r["regs"] <= G.MAXNREG and r["spill_stores"] == 0 and r["spill_loads"] == 0


@needs_gluon
@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", _names())
def test_shared_memory_fits(compiled, name):
    r = compiled[name]
    assert r["ok"], r.get("error")
    need = r["smem"]["total"]
    # Triton's allocation: the ring, the epilogue tile and the barriers, plus a little alignment and
    # warp-specialisation scratch; the static shared memory of the cubin comes on top
    assert need <= r["shared"] <= need + 1024, (r["shared"], r["smem"])
    assert r["shared"] + r.get("static_shared", 0) <= G.MAX_SMEM, r


def test_smem_accounting_of_the_variants():
    assert G.smem_bytes(128, 256, 64, 3) == dict(ring=147456, epilogue=65536, barriers=48, total=213040)
    assert G.smem_bytes(128, 128, 64, 4) == dict(ring=131072, epilogue=32768, barriers=64, total=163904)
    for bm, bn, bk, st in G.VARIANTS:
        assert G.smem_bytes(bm, bn, bk, st)["total"] <= G.MAX_SMEM
    assert G.smem_bytes(128, 256, 64, 4)["total"] > G.MAX_SMEM  # why 128x256 stops at 3 stages
    for bm, bn, bk, st in G.FP8_VARIANTS:  # fp8 in (1 byte), bf16 out
        assert G.smem_bytes(bm, bn, bk, st, 1, 2)["total"] <= G.MAX_SMEM


# --- supports() -----------------------------------------------------------------------------------
BF16 = torch.bfloat16


@needs_gluon
def test_supports_accepts_row_and_column_major_b():
    m, n, k = 300, 264, 1000
    assert G.supports(m, n, k, BF16, (k, 1), (n, 1), (n, 1)) is None
    assert G.supports(m, n, k, torch.float16, (k, 1), (1, k), (n, 1)) is None  # NT
    assert G.supports(127, 264, 65, BF16, (72, 1), (272, 1), (272, 1)) is None  # padded leading dims
    assert G.supports(m, n, k, BF16, (1, m + 4), (n, 1), (n, 1)) is None  # column-major A (grad.T)
    assert G.a_is_mmajor((1, 304)) is True and G.a_is_mmajor((1000, 1)) is False and G.a_is_mmajor((1, 1)) is False


@needs_gluon
@pytest.mark.parametrize("args, word", [
    ((64, 64, 64, torch.float32, (64, 1), (64, 1), (64, 1)), "dtype"),
    ((64, 64, 0, BF16, (64, 1), (64, 1), (64, 1)), "empty"),
    ((64, 64, 65, BF16, (65, 1), (64, 1), (64, 1)), "A strides"),
    ((64, 64, 64, BF16, (1, 63), (64, 1), (64, 1)), "A strides"),  # column-major, lead not 16-byte aligned
    ((64, 64, 64, BF16, (128, 2), (64, 1), (64, 1)), "A strides"),  # neither layout
    ((256, 256, 64, BF16, (0, 1), (256, 1), (256, 1)), "A strides"),  # a broadcast row: stride 0
    ((256, 256, 64, BF16, (64, 1), (0, 1), (256, 1)), "B strides"),
    ((256, 256, 64, BF16, (64, 1), (256, 1), (0, 1)), "C strides"),
    ((64, 63, 64, BF16, (64, 1), (63, 1), (64, 1)), "B strides"),
    ((64, 64, 63, BF16, (64, 1), (1, 63), (64, 1)), "B strides"),
    ((64, 64, 64, BF16, (64, 1), (128, 2), (64, 1)), "B strides"),
    ((64, 63, 64, BF16, (64, 1), (64, 1), (63, 1)), "C strides"),
    ((64, 64, 64, BF16, (64, 1), (64, 1), (1, 64)), "C strides"),
    # rows of 255 / 257 bf16 elements end inside a 16-byte chunk: the TMA store would write past N
    ((127, 255, 65, BF16, (72, 1), (256, 1), (256, 1)), "past the row end"),
    ((300, 257, 1000, BF16, (1000, 1), (264, 1), (264, 1)), "past the row end"),
])
def test_supports_gives_the_reason(args, word):
    reason = G.supports(*args)
    assert reason is not None and word in reason, reason


# --- the wrapper's argument checks (raised before anything is launched) ---------------------------
def _t(*shape, dtype=BF16):
    return torch.zeros(*shape, dtype=dtype)


def _f8(*shape):
    return torch.zeros(*shape).to(torch.float8_e4m3fn)


def _s(*shape):
    return torch.ones(*shape)


@needs_gluon
@pytest.mark.parametrize("call, arg", [
    (lambda: G.gluon_matmul(_t(64, 64, dtype=torch.float32), _t(64, 64, dtype=torch.float32)), "a"),
    (lambda: G.gluon_matmul(_t(64, 64), _t(64, 64, dtype=torch.float16)), "b"),
    (lambda: G.gluon_matmul(_t(64, 32), _t(64, 64)), "b"),
    (lambda: G.gluon_matmul(_t(64, 64), _t(64, 64), bias=_t(63)), "bias"),
    (lambda: G.gluon_scaled_mm(_t(64, 64), _t(64, 64).t(), _s(1), _s(1)), "a"),  # bf16, not fp8
    (lambda: G.gluon_scaled_mm(_f8(64, 32), _f8(64, 64).t(), _s(1), _s(1)), "b"),  # inner dims
    (lambda: G.gluon_scaled_mm(_f8(64, 64), _f8(64, 64).t(), _s(1), _s(1), out_dtype=torch.float32), "out_dtype"),
    (lambda: G.gluon_scaled_mm(_f8(64, 64), _f8(64, 64).t(), _s(64), _s(64)), "scale_a"),  # 1-D: neither recipe
    (lambda: G.gluon_scaled_mm(_f8(64, 64), _f8(64, 64).t(), _s(1).double(), _s(1)), "scale_a"),
    (lambda: G.gluon_scaled_mm(_f8(64, 64), _f8(64, 64).t(), _s(1), _s(1), block_n=256), "block_n"),
    (lambda: G.gluon_scaled_mm(_f8(64, 64), _f8(64, 64), _s(1), _s(1)), "b"),  # B row-major: not K-major
    (lambda: G.gluon_scaled_mm(_f8(64, 64).t(), _f8(64, 64).t(), _s(1), _s(1)), "a"),  # A column-major
    (lambda: G.gluon_scaled_mm(_f8(64, 64), _f8(64, 64).t().to(torch.float8_e5m2), _s(1), _s(1)), "b"),  # mixed
    (lambda: G.gluon_scaled_mm(_f8(64, 64), _f8(64, 64).t(), _s(1), _s(1), bias=_t(63)), "bias"),
    (lambda: G.gluon_matmul(_t(64, 64), _t(64, 64), bias=_t(64, dtype=torch.float64)), "bias"),
    (lambda: G.gluon_matmul(_t(64, 64), _t(64, 64), bias=_t(128)[::2]), "bias"),
    (lambda: G.gluon_matmul(_t(2, 64, 64), _t(64, 64)), "a"),
    (lambda: G.gluon_matmul(_t(64, 64), [[1.0]]), "b"),
    (lambda: G.gluon_matmul(_t(64, 64), _t(64, 64), out=_t(64, 32)), "out"),
    (lambda: G.gluon_matmul(_t(64, 64), _t(64, 64), out=_t(64, 64, dtype=torch.float32)), "out"),  # fp32: not bf16/fp16
    (lambda: G.gluon_matmul(_t(64, 65)[:, :63], _t(63, 64)), "a"),  # row stride 130 bytes
    (lambda: G.gluon_matmul(_t(64, 64), _t(64, 63)), "b"),
    (lambda: G.gluon_matmul(_t(64, 64), _t(64, 64), out=_t(64, 72)[:, 1:65]), "out"),  # misaligned base
    (lambda: G.gluon_matmul(_t(64, 64), _t(64, 64)), "a"),  # CPU tensors: no sm_90 device
    (lambda: G.gluon_matmul(_t(64, 64), _t(64, 64), block_m=64), "block_m"),
    (lambda: G.gluon_matmul(_t(64, 64), _t(64, 64), block_n=96), "block_n"),
    (lambda: G.gluon_matmul(_t(64, 64), _t(64, 64), block_k=128), "block_k"),
    (lambda: G.gluon_matmul(_t(64, 64), _t(64, 64), stages=4), "stages"),  # 128x256x64 x4 > 232448 B
    (lambda: G.gluon_matmul(_t(64, 64), _t(64, 64), stages=1), "stages"),
    (lambda: G.gluon_matmul(_t(64, 64), _t(64, 64), group_m=0), "group_m"),
])
def test_wrapper_names_the_bad_argument(call, arg):
    with pytest.raises(ValueError) as e:
        call()
    assert str(e.value).startswith(f"{arg}") and (str(e.value)[len(arg)] in ":="), str(e.value)


@needs_gluon
def test_wrapper_empty_problems_need_no_kernel():
    assert G.gluon_matmul(_t(0, 64), _t(64, 64)).shape == (0, 64)
    out = torch.full((8, 16), 3.0, dtype=BF16)
    assert torch.equal(G.gluon_matmul(_t(8, 0), _t(0, 16), out=out), torch.zeros(8, 16, dtype=BF16))


def test_an_empty_hook_chain_is_no_launch_hook():
    """Triton 3.6 keeps an empty HookChain in both launch-hook slots: that is no hook, so warm Gluon
    keys take the raw launch (reading "not None" as a hook cost ~150 us per call on the H200); a
    hook added to the chain (a profiler's) sends launches back through Triton."""
    from triton import knobs

    from tritonblas import _fastlaunch

    chain = knobs.runtime.launch_enter_hook
    if not hasattr(chain, "calls"):
        pytest.skip("this Triton's launch hooks are not HookChains")
    assert not _fastlaunch.launch_hooks_on() and not G._launch_hooks_on()

    def hook(*args, **kwargs):
        return None

    chain.add(hook)
    try:
        assert _fastlaunch.launch_hooks_on() and G._launch_hooks_on()
    finally:
        chain.remove(hook)
    assert not G._launch_hooks_on()

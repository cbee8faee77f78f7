"""tritonblas.plan: TileConfig → launch mapping (H200 and an AMD profile), config validation,
launch-argument validation, the workspace cache, ahead-of-time compilation, the interpreter shim
and an import without side effects."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from _check import check_gemm, config, operand, run_gemm
from origami import GemmProblem, TileConfig
from tritonblas import plan as planmod
from tritonblas.plan import (AMD_OPTION_FIELDS, CONSTEXPR_FIELDS, GRID_FIELDS, OPTION_FIELDS, LaunchPlan, align_class,
                             alignment_bytes, edge_alignment_bytes, launch, make_plan, problem_from_tensors)

ROOT = Path(__file__).resolve().parents[2]
P = GemmProblem(1000, 700, 512, a_dtype="fp16", b_dtype="fp16", c_dtype="fp16")


def test_every_tileconfig_field_has_one_role():
    roles = CONSTEXPR_FIELDS + OPTION_FIELDS + AMD_OPTION_FIELDS + GRID_FIELDS
    assert len(roles) == len(set(roles))
    assert set(roles) == {f.name for f in dataclasses.fields(TileConfig)}


def test_h200_mapping(h200):
    cfg = config("dp", 128, 64, 64, group_m=8, num_warps=8, num_stages=3)
    lp = make_plan(cfg, P, h200)
    assert lp.constexprs == dict(BLOCK_M=128, BLOCK_N=64, BLOCK_K=64, GROUP_M=8, NUM_CHIPLETS=1, CHUNK=1)
    assert lp.options == dict(num_warps=8, num_stages=3)  # no AMD knobs on NVIDIA
    assert lp.grid == (8 * 11,) and lp.kernel_name == "gemm_kernel" and lp.workspace_bytes == 0
    from tritonblas.kernels import gemm_kernel

    assert lp.kernel is gemm_kernel
    hash(lp)


def test_grids_and_workspaces(h200):
    tiles = 8 * 11
    per = make_plan(config("persistent", 128, 64, 64, grid=132), P, h200)
    assert per.grid == (tiles,) and per.kernel_name == "gemm_persistent_kernel"  # never more programs than tiles
    per = make_plan(config("persistent", 128, 64, 64, grid=40), P, h200)
    assert per.grid == (40,)
    sk = make_plan(config("streamk", 128, 64, 64, grid=132), P, h200)
    assert sk.grid == (132,) and sk.counters == tiles % 132 and sk.workspace_tiles == 2 * 132
    assert sk.workspace_bytes == 2 * 132 * 128 * 64 * 4
    even = make_plan(config("streamk", 128, 64, 64, grid=44), P, h200)
    assert even.counters == 0 and even.workspace_bytes == 0  # 88 tiles = 2 full waves: pure DP
    spk = make_plan(config("splitk", 128, 64, 64, split_k=4), P, h200)
    assert spk.grid == (tiles * 4,) and spk.counters == tiles and spk.workspace_tiles == tiles * 4
    assert spk.split_k == 4


def test_amd_mapping(mi300x):
    cfg = config("persistent", 64, 64, 32, grid=304, amd=True, num_chiplets=mi300x.chiplets, chunk=4)
    lp = make_plan(cfg, P, mi300x)
    assert lp.constexprs["NUM_CHIPLETS"] == mi300x.chiplets == 8 and lp.constexprs["CHUNK"] == 4
    assert lp.options == dict(num_warps=4, num_stages=2, waves_per_eu=0, matrix_instr_nonkdim=16, kpack=1)
    assert not make_plan(cfg, P, mi300x, tma=True).tma  # no TMA on AMD


def test_invalid_configs_raise_clear_errors(h200, mi300x):
    with pytest.raises(ValueError, match="vendor"):
        make_plan(config("dp", amd=True), P, h200)
    with pytest.raises(ValueError, match="vendor"):
        make_plan(config("dp"), P, mi300x)
    with pytest.raises(ValueError, match="shared memory"):
        make_plan(config("dp", 256, 128, 256, num_warps=8, num_stages=8), P, h200)
    with pytest.raises(ValueError, match="chiplets"):
        make_plan(config("dp", num_chiplets=8, chunk=2), P, h200)
    with pytest.raises(ValueError, match="split-K"):
        make_plan(config("splitk", split_k=64), GemmProblem(64, 64, 64), h200)
    with pytest.raises(TypeError):
        make_plan("dp", P, h200)
    with pytest.raises(ValueError, match="int8"):
        make_plan(config("dp", bk=32), GemmProblem(64, 64, 64, a_dtype="int8", b_dtype="int8", c_dtype="fp32"), h200)


def test_tma_choice(h200):
    aligned = GemmProblem(4096, 1000, 7000, align_bytes=16)
    assert make_plan(config("dp", 128, 128, 64), aligned, h200, tma=True).kernel_name == "gemm_tma_kernel"
    p = make_plan(config("persistent", 128, 128, 64, grid=132), aligned, h200, tma=True)
    assert p.tma and p.pointer_kernel_name == "gemm_persistent_kernel"
    unaligned = dataclasses.replace(aligned, n=511, align_bytes=2)
    lp = make_plan(config("dp", 128, 128, 64), unaligned, h200, tma=True)
    assert lp.kernel_name == "gemm_kernel" and not lp.tma
    assert make_plan(config("streamk", 128, 128, 64, grid=132), aligned, h200, tma=True).kernel_name == \
        "gemm_streamk_tma_kernel"
    sk = make_plan(config("splitk", 16, 64, 128, split_k=4), GemmProblem(16, 4096, 4096), h200, tma=True)
    assert sk.kernel_name == "gemm_splitk_tma_kernel" and sk.pointer_kernel_name == "gemm_splitk_kernel"
    assert make_plan(config("streamk", 128, 128, 64, grid=132), unaligned, h200, tma=True).kernel_name == \
        "gemm_streamk_kernel"
    assert make_plan(config("streamk", 128, 128, 64, grid=132), aligned, h200).kernel_name == "gemm_streamk_kernel"
    assert make_plan(config("dp", 128, 128, 64), aligned, h200).kernel_name == "gemm_kernel"  # TMA is opt-in


def test_alignment_classes(device):
    x = torch.empty(64, 1000, dtype=torch.bfloat16, device=device)
    assert alignment_bytes(x) == 16  # row stride 2000 bytes
    assert alignment_bytes(torch.empty(64, 511, dtype=torch.bfloat16, device=device)) == 2
    assert alignment_bytes(torch.empty(64, 1002, dtype=torch.bfloat16, device=device)) == 4
    assert alignment_bytes(torch.empty(1000, 64, dtype=torch.bfloat16, device=device).t()) == 16  # transposed view
    assert alignment_bytes(torch.empty(4097, dtype=torch.bfloat16, device=device)[1:].view(64, 64)) == 2  # offset
    assert alignment_bytes(torch.empty(1, 64, 36, dtype=torch.float32, device=device)) == 16  # batch of 1 ignored
    assert alignment_bytes(torch.empty(64, 1008, dtype=torch.bfloat16, device=device)[:, :1001]) == 16
    assert edge_alignment_bytes(torch.empty(64, 1008, dtype=torch.bfloat16, device=device)[:, :1001]) == 2  # extent
    assert edge_alignment_bytes(torch.empty(64, 1000, dtype=torch.bfloat16, device=device)) == 16
    assert edge_alignment_bytes(torch.empty(1000, 1, dtype=torch.bfloat16, device=device)) == 16  # order 1
    assert [align_class(b) for b in (1, 2, 4, 8, 16)] == [1, 1, 4, 4, 16]
    p = problem_from_tensors(torch.empty(8, 16, device=device), torch.empty(16, 8, device=device).t().t(),
                             torch.empty(8, 8, device=device))
    assert (p.m, p.n, p.k, p.a_layout.value, p.align_bytes) == (8, 8, 16, "N", 16)


def test_launch_validates_arguments(device, h200):
    a = operand(33, 40, torch.float16, False, device)
    b = operand(40, 24, torch.float16, False, device)
    out = torch.empty(33, 24, dtype=torch.float16, device=device)
    lp = make_plan(config("dp"), problem_from_tensors(a, b, out), h200)
    cases = [
        (dict(b=operand(41, 24, torch.float16, False, device)), "inner dims"),
        (dict(b=b.float()), "dtypes must match"),
        (dict(out=out[:, :20]), "out: expected"),
        (dict(a=a.to("meta")), "device"),
        (dict(a=a.double(), b=b.double()), "unsupported dtype"),
        (dict(scale_a=torch.ones(2, device=device)), r"scale_a: expected shape"),
        (dict(scale_b=torch.ones(24, 1, device=device)), r"scale_b: expected shape"),
        (dict(bias=torch.ones(23, device=device)), "bias: expected shape"),
        (dict(activation="silu"), "activation"),
        (dict(c=torch.ones(5, device=device), beta=1.0), "c: shape"),
        (dict(out=torch.empty(33, 24, dtype=torch.float32, device=device)), "plan expects fp16"),
    ]
    for kw, msg in cases:
        args = dict(a=a, b=b, out=out)
        args.update(kw)
        a_, b_, o_ = args.pop("a"), args.pop("b"), args.pop("out")
        with pytest.raises((ValueError, TypeError), match=msg):
            launch(lp, a_, b_, o_, **args)
    other = make_plan(config("dp"), GemmProblem(32, 24, 40, "fp16", "fp16", "fp16"), h200)
    with pytest.raises(ValueError, match="plan is for"):
        launch(other, a, b, out)
    square = operand(40, 40, torch.float16, False, device)
    sq_plan = make_plan(config("dp"), problem_from_tensors(square, square, square), h200)
    with pytest.raises(ValueError, match="overlap"):
        launch(sq_plan, square, operand(40, 40, torch.float16, False, device), square)


@pytest.mark.timeout(60)
def test_workspace_cache_is_bounded_and_clearable(device, h200):
    planmod.clear_workspaces()
    a = operand(70, 100, torch.float16, False, device)
    b = operand(100, 50, torch.float16, False, device)
    run_gemm(config("splitk", split_k=2), a, b, h200)
    assert len(planmod.WORKSPACES) == 1
    ws, counters = next(iter(planmod.WORKSPACES.values()))
    assert ws.dtype == torch.float32 and counters.dtype == torch.int32 and int(counters.count_nonzero()) == 0
    assert ws.numel() >= 6 * 2 * 32 * 32
    planmod.clear_workspaces()
    assert not planmod.WORKSPACES
    for i in range(planmod.MAX_WORKSPACES + 3):  # distinct (device, stream) keys
        planmod.WORKSPACES[("fake", i, 0)] = (ws, counters)
    planmod.workspace(torch.device(device), 10, 10)
    assert len(planmod.WORKSPACES) <= planmod.MAX_WORKSPACES
    planmod.clear_workspaces()


@pytest.mark.timeout(120)
def test_precompile_reports_errors_without_raising(device, h200):
    p = GemmProblem(40, 24, 48, "fp16", "fp16", "fp16")
    good = make_plan(config("dp"), p, h200)
    bad = dataclasses.replace(good, kernel_name="no_such_kernel")
    results = planmod.precompile([good, bad], device)
    assert results[0] is None and "no_such_kernel" in results[1]


@pytest.mark.timeout(60)
def test_interpreter_shim_is_idempotent_and_fixes_bf16(device, h200):
    from tritonblas import _interpreter

    if not _interpreter.interpreting():
        pytest.skip("interpreter only")
    assert _interpreter.apply() and _interpreter.apply()
    a = operand(32, 64, torch.bfloat16, False, device)
    b = operand(64, 32, torch.bfloat16, False, device)
    out, _ = run_gemm(config("dp"), a, b, h200)
    check_gemm(out, a, b, what="bf16 through the shim")
    x = torch.randn(1000) * 100
    bits = _interpreter._fp32_to_bf16_rne(x.numpy())
    assert torch.equal(torch.from_numpy(bits.view("int16")), x.bfloat16().view(torch.int16))
    import numpy as np
    from triton.runtime import interpreter as interp

    assert interp._patch_lang_tensor.__name__ == "_patch_lang_tensor" and \
        interp._patch_lang_tensor.__module__ == "tritonblas._interpreter"

    class Handle:  # the numpy >= 2.4 case: a 1-element 1-D array, as the interpreter holds scalars
        data = np.array([7], dtype=np.int32)

    class T:
        handle = Handle()

    assert _interpreter.tensor_index(T()) == 7


def test_import_has_no_side_effects():
    code = ("import sys, tritonblas; assert 'torch' not in sys.modules and 'triton' not in sys.modules, "
            "sorted(m for m in sys.modules if m.startswith(('torch', 'triton'))); "
            "assert callable(tritonblas.make_plan)")
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT)
    assert r.returncode == 0, r.stderr


def test_plan_is_picklable(h200):
    import pickle

    lp = make_plan(config("splitk", split_k=2), GemmProblem(64, 64, 128), h200)
    assert pickle.loads(pickle.dumps(lp)) == lp
    assert isinstance(lp, LaunchPlan)


class _InlinePool:
    """A stand-in for precompile's process pool that runs each job here (what it is handed is what a
    spawned worker would run: the plan, the device, the launch kwargs and the scales)."""

    def submit(self, fn, *args):
        from concurrent.futures import Future

        f = Future()
        f.set_result(fn(*args))
        return f


@pytest.mark.timeout(120)
@pytest.mark.parametrize("dtypes, kw, scales", [
    (("fp8_e4m3", "fp8_e4m3", "bf16"), "tensor", "tensor"),
    (("fp8_e4m3", "fp8_e4m3", "bf16"), "row", "row"),
    (("fp32", "fp32", "fp32"), "tf32", None),
])
def test_precompile_binds_the_variant_the_launch_runs(device, h200, monkeypatch, dtypes, kw, scales):
    # the constexprs precompile binds (SCALE_A/SCALE_B, INPUT_PRECISION) are those of the launch that
    # follows: a mismatch compiles every config again in the launching process (the tf32 / fp8 sweeps'
    # ~0.3 s a config on the H200, session 18)
    p = GemmProblem(40, 24, 48, *dtypes)
    plan = make_plan(config("dp"), p, h200)
    a, b, out = planmod._example_tensors(p, device)
    if kw == "tf32":
        launch = dict(allow_tf32=True)
    elif kw == "tensor":
        launch = dict(scale_a=torch.ones((), device=device), scale_b=torch.ones((), device=device))
    else:
        launch = dict(scale_a=torch.ones(p.m, device=device), scale_b=torch.ones(p.n, device=device))
    want = planmod.prepare_launch(plan, a, b, out, **launch).kwargs
    seen = []
    real = planmod.prepare_launch

    def spy(*args, **kwargs):
        prepared = real(*args, **kwargs)
        seen.append(prepared.kwargs)
        return prepared

    monkeypatch.setattr(planmod, "prepare_launch", spy)
    extra = dict(allow_tf32=True) if kw == "tf32" else {}
    assert planmod.precompile([plan], device, scales=scales, **extra) == [None]
    assert planmod.precompile([plan], device, pool=_InlinePool(), scales=scales, **extra) == [None]  # the sweeps' path
    keys = ("SCALE_A", "SCALE_B", "INPUT_PRECISION")
    assert [{k: s[k] for k in keys} for s in seen] == [{k: want[k] for k in keys}] * 2
    assert want["SCALE_A"] or want["INPUT_PRECISION"] == "tf32"  # the variant differs from the default one
    with pytest.raises(ValueError, match="scales: expected one of tensor, row"):
        planmod.precompile([plan], device, scales="per-block")


@pytest.mark.parametrize("layouts", [("N", "N"), ("T", "N"), ("N", "T"), ("T", "T")])
@pytest.mark.parametrize("batch", [1, 3])
@pytest.mark.parametrize("dtypes", [("bf16", "bf16", "bf16"), ("fp32", "fp32", "fp32"), ("fp8_e4m3", "fp8_e4m3", "bf16")])
def test_compile_operands_bind_what_the_example_operands_bind(device, h200, layouts, batch, dtypes):
    """precompile's GPU workers bind uninitialised operands (``example_tensors(random=False)``: no float32 draft, none of the
    random data a compile never reads); every non-tensor argument of the launch they prepare (constexprs,
    strides, sizes, the alignment classes) is the one the example operands, what a launch holds, give."""
    from origami import Layout

    p = GemmProblem(40, 24, 48, *dtypes, Layout(layouts[0]), Layout(layouts[1]), batch=batch)
    plan = make_plan(config("dp"), p, h200)
    scales = {} if dtypes[0] != "fp8_e4m3" else planmod._example_scales(p, device, "row")
    got, want = planmod._example_tensors(p, device, random=False), planmod._example_tensors(p, device)
    assert [(t.shape, t.stride(), t.dtype) for t in got] == [(t.shape, t.stride(), t.dtype) for t in want]

    def bound(tensors):
        kw = planmod.prepare_launch(plan, *tensors, **scales).kwargs
        return {k: v for k, v in kw.items() if not isinstance(v, torch.Tensor) and "desc" not in k.lower()}

    assert bound(got) == bound(want)


def test_fp8_promotes_every_128_k_capped_at_the_tiles_block_k():
    """The fp8 promotion interval every launch binds (MAX_IMPRECISE): 128 K, or once a K-step where BLOCK_K is
    smaller (Triton refuses a larger max_num_imprecise_acc: tests/kernels/_aot_compile.py's BLOCK_K 64 cases), and
    never below one wgmma's 32 for any BLOCK_K the space enumerates."""
    from origami.enumerate import _block_ks
    from origami.problem import DType
    from tritonblas.plan import fp8_promote_k

    assert [fp8_promote_k(bk) for bk in (32, 64, 128, 256, 512)] == [32, 64, 128, 128, 128]
    assert all(32 <= fp8_promote_k(bk) <= bk for bk in _block_ks(DType("fp8_e4m3")))

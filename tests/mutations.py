"""Mutation check (RELIABILITY.md §4.6 "test the tester", for the kernels): apply each named fault to
a temporary copy of the tree, run the CPU tests that should catch it, and report which test did.

    python tests/mutations.py                 # every mutation
    python tests/mutations.py --only k_tail_off_by_one streamk_dropped_contribution
    python tests/mutations.py --list
    python tests/mutations.py --baseline      # also run each test set on the unmutated copy first
    python tests/mutations.py --tests tests/kernels/test_fuzz.py   # what the fuzz alone catches

Exit status 0 when every mutation is caught (its tests fail) and, with --baseline, every test set
passes unmutated; 1 otherwise. Not collected by pytest (the name does not match test_*.py); it
takes a few minutes on 2 cores (each mutation is one pytest process, stopped at the first failure).
The working tree itself is never modified.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Mutation:
    name: str
    what: str
    path: str
    old: str
    new: str
    tests: tuple[str, ...]


MUTATIONS = (
    Mutation("k_tail_off_by_one", "the peeled K-tail iteration drops its last element",
             "tritonblas/kernels/_tiles.py",
             "mask_k = k_full * BLOCK_K + tl.arange(0, BLOCK_K) < k_bound",
             "mask_k = k_full * BLOCK_K + tl.arange(0, BLOCK_K) < k_bound - 1",
             ("tests/kernels/test_gemm_kernels.py",)),
    Mutation("streamk_dropped_contribution", "the Stream-K fix-up skips the last contributor's partial",
             "tritonblas/kernels/streamk.py",
             "for q in range(first + 1, last + 1):",
             "for q in range(first + 1, last):",
             ("tests/kernels/test_streamk_splitk.py",)),
    Mutation("streamk_finisher_assumed_last",
             "the fix-up adds its own registers and skips slot `last`: right only when the highest "
             "contributor arrives last (the interpreter's id order)",
             "tritonblas/kernels/streamk.py",
             "acc = load_partial(Workspace, 2 * first + (_range_start(first, base, extra) < tile_lo).to(tl.int32),\n"
             "                                   BLOCK_M, BLOCK_N)\n"
             "                for q in range(first + 1, last + 1):",
             "acc += load_partial(Workspace, 2 * first + (_range_start(first, base, extra) < tile_lo).to(tl.int32),\n"
             "                                    BLOCK_M, BLOCK_N)\n"
             "                for q in range(first + 1, last):",
             ("tests/kernels/test_streamk_splitk.py", "tests/kernels/test_program_order.py")),
    Mutation("splitk_wrong_reduction", "the split-K reduction leaves out the last split",
             "tritonblas/kernels/splitk.py",
             "for j in range(1, split_k):",
             "for j in range(1, split_k - 1):",
             ("tests/kernels/test_streamk_splitk.py",)),
    Mutation("transposed_stride", "a transposed (M- or K-contiguous) operand addressed as row-major",
             "tritonblas/kernels/_tiles.py",
             "off = r0[:, None] + r1[None, :] * aligned(s1, ALIGN)",
             "off = r0[:, None] * aligned(s1, ALIGN) + r1[None, :]",
             ("tests/kernels/test_gemm_kernels.py",)),
    Mutation("missing_bias", "the pointer epilogue never adds the bias",
             "tritonblas/kernels/_epilogue.py",
             "            bias = tl.load(Bias + rn.to(tl.int64) * stride_bias)\n"
             "        acc = acc + bias.to(tl.float32)[None, :]",
             "            bias = tl.load(Bias + rn.to(tl.int64) * stride_bias)\n"
             "        acc = acc",
             ("tests/kernels/test_epilogue_layouts.py", "tests/kernels/test_gemm_kernels.py")),
    Mutation("fp16_partials", "Stream-K/split-K partials rounded through fp16",
             "tritonblas/kernels/_epilogue.py",
             "tl.store(Workspace + _partial_offsets(slot, BLOCK_M, BLOCK_N), acc)",
             "tl.store(Workspace + _partial_offsets(slot, BLOCK_M, BLOCK_N), acc.to(tl.float16).to(tl.float32))",
             ("tests/kernels/test_fp16_overflow.py",)),
    Mutation("epilogue_mask_past_n", "edge tiles store one column past N (into the next row or the padding)",
             "tritonblas/kernels/_epilogue.py",
             "            mask_n = rn < aligned(N, OUT_EDGE)\n        else:\n            mask_n = rn < N\n"
             "        mask = mask_m[:, None] & mask_n[None, :]",
             "            mask_n = rn <= aligned(N, OUT_EDGE)\n        else:\n            mask_n = rn <= N\n"
             "        mask = mask_m[:, None] & mask_n[None, :]",
             ("tests/kernels/test_gpu_cases_cpu.py",)),
    Mutation("warm_linear_drops_bias", "the warm path for F.linear launches without the bias (the "
             "view-binding branch; the address-binding branch runs on a GPU only)",
             "tritonblas/fastpath.py",
             "        dispatch.launch_fast(f, a, b, out.view(-1, out_shape[-1]) if out.dim() != 2 else out, bias,\n"
             "                             1.0, 1.0 if bias is not None else 0.0)",
             "        dispatch.launch_fast(f, a, b, out.view(-1, out_shape[-1]) if out.dim() != 2 else out, None,\n"
             "                             1.0, 0.0)",
             ("tests/dropin/test_models.py",)),
    Mutation("weight_grad_transposed_layout", "the weight gradient produced as (x.T @ grad).T, which "
             "AccumulateGrad then copies into the weight's layout",
             "tritonblas/fastpath.py",
             "            gw = mm(g2s.t(), x2)",
             "            gw = mm(x2.t(), g2s).t()",
             ("tests/dropin/test_models.py",)),
    Mutation("deterministic_filter_ignored", "deterministic mode keeps a non-deterministic model pick",
             "tritonblas/dispatch.py",
             "if e.config.kind in DETERMINISTIC_KINDS), None)",
             "if True), None)",
             ("tests/api/test_deterministic_mode.py",)),
    Mutation("scaled_warm_drops_scales", "a warm scaled_mm launch binds no scale vectors of its own "
             "(the kernel reads whatever the placeholders point at)",
             "tritonblas/dispatch.py",
             "        f.call(a, b, out, bias, 1.0, beta, sa, sb)",
             "        f.call(a, b, out, bias, 1.0, beta)",
             ("tests/dropin/test_scaled_mm.py",)),
    Mutation("bmm_hot_answers_any_entry", "the hot bmm serves a 2-D or batch-broadcast entry another op recorded",
             "tritonblas/fastpath.py",
             "    if a.dim() != 3 or b.dim() != 3 or a.is_nested or b.is_nested or a.shape[0] != b.shape[0]:",
             "    if False:",
             ("tests/dropin/test_hot_addmm_bmm.py",)),
    Mutation("addmm_grad_layout_ignored", "the warm addmm's backward writes a transposed weight's gradient row-major",
             "tritonblas/fastpath.py",
             "gb = _mm_graph(a.t(), grad) if graph else _mm_like(a.t(), grad, ctx.b_t)",
             "gb = _mm_graph(a.t(), grad) if graph else _mm(a.t(), grad)",
             ("tests/dropin/test_hot_addmm_bmm.py",)),
    Mutation("unroutable_recorded_in_any_state", "a refusal under forward AD or autocast remembered as the signature's",
             "tritonblas/fastpath.py",
             "            or _intercepting() or _any_autocast()):",
             "            or False):",
             ("tests/dropin/test_unroutable_cache.py",)),
    Mutation("refused_class_ignores_other_operands", "a call is answered from the refused-class memory by its first "
             "tensor alone (an fp32 operand beside a refused fp64 one skips the route)",
             "tritonblas/fastpath.py",
             "            if u.dtype is not dt or u.device != dev:\n                return False\n        elif isinstance(u, torch.Tensor):\n            return False\n    return True\n\n\ndef record_refused_class",
             "            if False:\n                return False\n        elif isinstance(u, torch.Tensor):\n            return False\n    return True\n\n\ndef record_refused_class",
             ("tests/dropin/test_unroutable_cache.py",)),
    Mutation("refused_class_probed_in_any_state", "a refused class recorded under a mode (the probe tensor passes "
             "through it and may be refused for that)",
             "tritonblas/fastpath.py",
             "    if not args or type(args[0]) not in _PLAIN or _fast_off() or _intercepting():",
             "    if not args or type(args[0]) not in _PLAIN or _fast_off():",
             ("tests/dropin/test_unroutable_cache.py",)),
    Mutation("refused_class_for_any_refusal", "every refusal remembered as its dtype/device class (a shape or "
             "one tensor's refusal would send routable calls to torch)",
             "tritonblas/fastpath.py",
             "    return not dispatch.kernels_take(probe)",
             "    return True",
             ("tests/dropin/test_unroutable_cache.py",)),
    Mutation("below_autograd_any_thread", "the kernels below autograd serve every thread's GEMMs (registration is "
             "process-wide: a thread outside enable() would run our kernels)",
             "tritonblas/below_autograd.py",
             "    if _STATE[0]():\n        return True",
             "    if True:\n        return True",
             ("tests/dropin/test_below_autograd.py",)),
    Mutation("below_autograd_no_carry", "enable() does not hand its block to the threads that run its work "
             "(a CUDA backward runs in autograd's device thread: its GEMMs would run torch's kernels)",
             "tritonblas/routing.py",
             "            below_autograd.carry(stack)",
             "            pass",
             ("tests/dropin/test_below_autograd.py",)),
    Mutation("unaligned_out_stays_staged_loads", "a problem unaligned in out alone keeps the pointer kernel with "
             "register-staged loads (the TMA plan of its aligned problem never chosen)",
             "tritonblas/dispatch.py",
             "    if not any(stage) and _plan.reads_as_is(problem, key.ab_align, key.orders[:2]):",
             "    if False and not any(stage) and _plan.reads_as_is(problem, key.ab_align, key.orders[:2]):",
             ("tests/api/test_align_staging.py",)),
    Mutation("one_align_class_for_all_operands", "a launch hints every operand with the minimum alignment class "
             "of a, b and out (a ragged out sends aligned operands to scalar loads)",
             "tritonblas/plan.py",
             "        A_ALIGN=align_elements(la, a), B_ALIGN=align_elements(lb, b), OUT_ALIGN=align_elements(lo, out),",
             "        A_ALIGN=align_elements(min(la, lb, lo), a), B_ALIGN=align_elements(min(la, lb, lo), b), "
             "OUT_ALIGN=align_elements(lo, out),",
             ("tests/api/test_align_staging.py",)),
    Mutation("pointer_plans_never_staged", "alignment staging binds its buffers to TMA kernels only (an AMD "
             "plan of the aligned problem reads the caller's unaligned operands)",
             "tritonblas/plan.py",
             "    if not (plan.stage_a or plan.stage_b):\n        return a, b, ()",
             "    if not (plan.stage_a or plan.stage_b) or plan.kernel_name not in TMA_KERNELS:\n        return a, b, ()",
             ("tests/api/test_align_staging.py",)),
    Mutation("ragged_grad_staged_per_gemm", "F.linear's backward lets each GEMM copy a ragged gradient (two staging "
             "copies of an lm_head's logits gradient a step)",
             "tritonblas/fastpath.py",
             "            g2s = stage_shared(g2, w, x2)",
             "            g2s = g2",
             ("tests/dropin/test_fast_path.py",)),
    Mutation("size_one_stride_hinted", "a size-1 dim's real stride reaches the kernel under its operand's alignment "
             "hint (a false tl.multiple_of fact)",
             "tritonblas/plan.py",
             "    return (0 if n0 == 1 else s0), (0 if n1 == 1 else s1)",
             "    return s0, s1",
             ("tests/api/test_launch_hints.py",)),
    Mutation("ocp_fp8_priced_native_on_gfx942", "origami prices OCP fp8 at the fp8 MFMA rate on gfx942, where Triton "
             "upcasts it to fp16 MFMA",
             "origami/hardware.py",
             '        return "fp16" if self.arch == "gfx942" else "fp8"',
             '        return "fp8"',
             ("tests/origami/test_profiles.py",)),
    Mutation("small_eager_at_the_threshold", "TRITONBLAS_EAGER_MIN_GFLOP and TRITONBLAS_GRAD_MIN_GFLOP send a GEMM of "
             "exactly G GFLOP to torch (the threshold is 'fewer than G')",
             "tritonblas/fastpath.py",
             "    return flop < limit",
             "    return flop <= limit",
             ("tests/dropin/test_small_eager.py", "tests/dropin/test_small_grad.py")),
    Mutation("small_grad_ignores_alignment", "TRITONBLAS_GRAD_MIN_GFLOP sends unaligned training GEMMs to torch too "
             "(DLRM's ragged widths, where our kernels beat cuBLAS)",
             "tritonblas/fastpath.py",
             "    if m % e or n % e or k % e:",
             "    if False:",
             ("tests/dropin/test_small_grad.py",)),
    Mutation("small_grad_without_autograd", "the training rule also defers GEMMs autograd does not record (decode, "
             "inference: session 24's 2% decode loss)",
             "tritonblas/fastpath.py",
             "    if grad and w.dim() == 2 and x.dim() >= 1:",
             "    if w.dim() == 2 and x.dim() >= 1:",
             ("tests/dropin/test_small_grad.py",)),
    Mutation("vendor_aligned_keeps_decode", "TRITONBLAS_VENDOR_ALIGNED leaves decode-sized GEMMs (M or N <= 16) to "
             "ours, where cuBLAS measured faster on F.linear's K-major weight (session 38)",
             "tritonblas/handover.py",
             "    if not thin and (k % 8 or n % 8 or (grad and m % 8)):\n        return False\n    if on is",
             "    if not thin and (m <= 16 or n <= 16 or k % 8 or n % 8 or (grad and m % 8)):\n        return False\n"
             "    if on is",
             ("tests/dropin/test_vendor_aligned.py",)),
    Mutation("vendor_thin_k_ours", "TRITONBLAS_VENDOR_ALIGNED leaves GEMMs whose K is under one MMA step to ours (the "
             "rotary embedding's fp32 K = 1 matmul took the cold route once a forward: H100 eager decode, session 39)",
             "tritonblas/handover.py",
             "MMA_K_BYTES = 32\n",
             "MMA_K_BYTES = 0\n",
             ("tests/dropin/test_vendor_aligned.py",)),
    Mutation("vendor_aligned_hot_path_only", "the vendor rule holds only on the hot path: torch.mm, keyword forms, "
             "baddbmm and torch.compile's graphs run ours on the shapes it hands to cuBLAS",
             "tritonblas/routing.py",
             "    if a.dim() >= 2 and b.dim() >= 2 and _handed(profile, a, a.shape[-2], b.shape[-1], a.shape[-1], a, b):",
             "    if False:",
             ("tests/dropin/test_vendor_aligned.py",)),
    Mutation("vendor_rule_traced_raw", "under torch.compile the routes read the vendor switch with the hot path's raw "
             "environment lookup, which torch 2.11's dynamo cannot trace: a graph break at every routed GEMM, and "
             "fullgraph fails (GPU suite at 5a1b5be, session 39)",
             "tritonblas/routing.py",
             "    if _is_compiling():  # the settings read outside dynamo",
             "    if False:  # the settings read outside dynamo",
             ("tests/dropin/test_vendor_aligned.py", "tests/dropin/test_models.py")),
    Mutation("vendor_scaled_ignored", "torch._scaled_mm under enable() runs ours on NVIDIA GPUs by default, where "
             "torch's fp8 GEMM ran 1.9x faster (H200, 40 shapes)",
             "tritonblas/routing.py",
             "    if profile is None and isinstance(a, Tensor) and handover.vendor_scaled(a):",
             "    if False:",
             ("tests/dropin/test_scaled_mm.py",)),
    Mutation("vendor_aligned_unguarded_weight", "TRITONBLAS_VENDOR_ALIGNED reads F.linear's weight as 2-D unchecked "
             "(a 0-d weight: an IndexError, not torch's error; a 1-D weight handed over by a rule that never read it)",
             "tritonblas/handover.py",
             "    ws = w.shape\n    if len(ws) != 2:\n        return False\n    n, k = ws\n",
             "    ws = w.shape\n    n, k = ws[0], ws[-1]\n",
             ("tests/dropin/test_vendor_aligned.py",)),
    Mutation("routes_read_nested_sizes", "the routes read a nested tensor's sizes (a strided-layout one has none: "
             "an internal error instead of torch's result for bmm, or torch's own error for matmul)",
             "tritonblas/routing.py",
             "    return all(isinstance(x, torch.Tensor) and not x.is_nested for x in xs)",
             "    return all(isinstance(x, torch.Tensor) for x in xs)",
             ("tests/dropin/test_routed_ops.py",)),
    Mutation("scale_beyond_float_ours", "an alpha/beta beyond the operands' type's range reaches our kernels under "
             "enable() (±inf where torch raises its overflow error: a helper's hunt, session 40)",
             "tritonblas/routing.py",
             "    return dtype.is_floating_point and any(ops.scale_overflows(x, dtype) for x in xs)",
             "    return False",
             ("tests/dropin/test_routed_ops.py",)),
    Mutation("linear_front_swaps_n_k", "the routing wrapper's front for F.linear reads the weight's shape as (K, N): "
             "the vendor rule asked with F.linear's sizes swapped (session 40's front)",
             "tritonblas/handover.py",
             "    ws = w.shape\n    if len(ws) != 2:\n        return False\n    n, k = ws\n",
             "    ws = w.shape\n    if len(ws) != 2:\n        return False\n    k, n = ws\n",
             ("tests/dropin/test_vendor_aligned.py",)),
    Mutation("linear_forward_keeps_a_stale_verdict", "nn.Linear's forward under enable() keeps a weight's verdict "
             "when TRITONBLAS_VENDOR_ALIGNED changes (session 41's kept verdict, unchecked against the variable)",
             "tritonblas/handover.py",
             "e[0]() is not w or e[1] != vendor_aligned_raw() or e[2] != _table_raw()",
             "e[0]() is not w or e[2] != _table_raw()",
             ("tests/dropin/test_linear_forward.py",)),
    Mutation("linear_forward_misses_a_dtype_change", "nn.Linear's forward keeps a weight's verdict after its data "
             "changed dtype (param.data = ..., the same Parameter)",
             "tritonblas/handover.py",
             "or e[3] != _TABLE_GEN[0] or e[4] is not w.dtype or e[5] is not w.is_cuda):",
             "or e[3] != _TABLE_GEN[0] or e[5] is not w.is_cuda):",
             ("tests/dropin/test_linear_forward.py",)),
    Mutation("linear_forward_skips_autograds_m", "nn.Linear's forward hands a call autograd records to torch without "
             "the rule's M test (an unaligned M's backward GEMMs on torch's op)",
             "tritonblas/handover.py",
             "                elif handed and _grad_enabled() and (",
             "                elif handed and False and (",
             ("tests/dropin/test_linear_forward.py", "tests/dropin/test_vendor_aligned.py")),
    Mutation("linear_forward_reads_parameters_always", "nn.Linear's forward reads _parameters whatever the class "
             "(a parametrized module's or a custom __getattr__'s weight is not what torch's forward multiplies by)",
             "tritonblas/handover.py",
             "        if cls is linear_cls or params_of.get(cls) or (cls not in params_of and _remember_reads(cls)):",
             "        if True:",
             ("tests/dropin/test_linear_forward.py",)),
    Mutation("linear_forward_over_a_patched_forward", "enable() replaces an nn.Linear.forward some library patched "
             "in (its behaviour lost inside the block)",
             "tritonblas/routing.py",
             "    if (getattr(orig, \"__module__\", None), getattr(orig, \"__qualname__\", None)) != _TORCH_LINEAR_FORWARD:",
             "    if False:",
             ("tests/dropin/test_linear_forward.py",)),
    Mutation("paired_spread_unpaired", "models.py's paired quartiles pair the two sides' sorted times instead of "
             "the same rotation round's (a drift common to both sides then reads as spread)",
             "benchmarks/models.py",
             "for b, s in zip(base_ms, side_ms)]",
             "for b, s in zip(sorted(base_ms), sorted(side_ms))]",
             ("tests/benchmarks/test_models_script.py",)),
    Mutation("front_reads_sizes_under_jit_trace", "the routing wrapper's front reads sizes under torch.jit.trace (a "
             "refused trace then crashed the process: the front swallowed the tracer's error)",
             "tritonblas/routing.py",
             "        if not kwargs and not _is_compiling() and not _jit_tracing():",
             "        if not kwargs and not _is_compiling():",
             ("tests/dropin/test_jit_trace.py",)),
    Mutation("wrapper_routes_under_jit_trace", "the routing wrapper routes calls under torch.jit.trace (the first and "
             "second invocation take different paths: the tracer's check fails)",
             "tritonblas/routing.py",
             "                if _jit_tracing():  # torch.jit.trace",
             "                if False:  # torch.jit.trace",
             ("tests/dropin/test_jit_trace.py",)),
    Mutation("profile_hash_reads_spelling", "a profile's content hash reads how its numbers are spelled (2 vs 2.0: "
             "one profile, two hashes; a rendered copy looks like another profile)",
             "origami/hardware.py",
             "    canonical = json.dumps(_as_checked(raw, d), sort_keys=True, default=str)",
             "    canonical = json.dumps(raw, sort_keys=True, default=str)",
             ("tests/origami/test_profiles.py",)),
    Mutation("vendor_aligned_default_everywhere", "TRITONBLAS_VENDOR_ALIGNED unset sends aligned GEMMs to torch on "
             "every device (ROCm and the CPU too, where nothing measured torch's op faster)",
             "tritonblas/handover.py",
             "    if on is settings.DEFAULT and (not (t.is_cuda and _NVIDIA_BUILD) or _TABLE_GEN[0] or _table_raw()):",
             "    if on is settings.DEFAULT and (_TABLE_GEN[0] or _table_raw()):",
             ("tests/dropin/test_vendor_aligned.py",)),
    Mutation("vendor_aligned_over_a_table", "TRITONBLAS_VENDOR_ALIGNED unset overrides a tile table in force (its "
             "per-shape measurements, ours where it measured ours faster)",
             "tritonblas/handover.py",
             "    if on is settings.DEFAULT and (not (t.is_cuda and _NVIDIA_BUILD) or _TABLE_GEN[0] or _table_raw()):",
             "    if on is settings.DEFAULT and not (t.is_cuda and _NVIDIA_BUILD):",
             ("tests/dropin/test_vendor_aligned.py",)),
    Mutation("vendor_aligned_any_dtype", "TRITONBLAS_VENDOR_ALIGNED defers fp32 GEMMs too (no evidence there)",
             "tritonblas/handover.py",
             "    return thin or t.dtype in _TWO_BYTE or _any_autocast()",
             "    return True",
             ("tests/dropin/test_vendor_aligned.py",)),
    Mutation("below_autograd_unchecked_shapes", "the kernels below autograd take shapes torch rejects (our error, "
             "not torch's, for a mismatched K or an addmm c that does not broadcast)",
             "tritonblas/below_autograd.py",
             "    if not _ours(*tensors) or not _shapes_torch_takes(a, b, c):",
             "    if not _ours(*tensors):",
             ("tests/dropin/test_below_autograd.py",)),
)


def _copy_tree(dst: Path) -> None:
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, check=True,
                           capture_output=True).stdout.decode().split("\0")
    for f in filter(None, files):
        src = ROOT / f
        if src.is_file():
            (dst / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst / f)


def _apply(tree: Path, m: Mutation) -> None:
    p = tree / m.path
    text = p.read_text()
    n = text.count(m.old)
    if n != 1:
        raise SystemExit(f"mutation {m.name}: expected the text once in {m.path}, found it {n} times "
                         "(the code changed: update tests/mutations.py)")
    p.write_text(text.replace(m.old, m.new))


def _pytest(tree: Path, tests: tuple[str, ...]) -> tuple[int, str, float]:
    env = dict(os.environ, PYTHONPATH=str(tree), TRITON_INTERPRET="1")
    env.setdefault("NUMBA_CACHE_DIR", str(Path(tempfile.gettempdir()) / "numba-mutations"))
    env.pop("TRITONBLAS_PROFILE", None)
    t = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:xdist", "-p", "no:cacheprovider",
                        "-rf", *tests], cwd=tree, env=env, capture_output=True, text=True, timeout=900)
    failed = re.findall(r"^FAILED (\S+)", r.stdout, re.M)
    summary = failed[0] if failed else (r.stdout.strip().splitlines() or [""])[-1]
    return r.returncode, summary, time.perf_counter() - t


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", nargs="+", metavar="NAME", help="run only these mutations")
    ap.add_argument("--list", action="store_true", help="list the mutations and exit")
    ap.add_argument("--baseline", action="store_true", help="first check each test set passes unmutated")
    ap.add_argument("--tests", nargs="+", metavar="PATH", help="run these tests for every mutation instead "
                    "(e.g. tests/kernels/test_fuzz.py)")
    args = ap.parse_args(argv)
    names = {m.name for m in MUTATIONS}
    if args.list:
        for m in MUTATIONS:
            print(f"{m.name:32s} {m.what}  [{m.path}; {' '.join(m.tests)}]")
        return 0
    unknown = set(args.only or ()) - names
    if unknown:
        print(f"error: --only: unknown mutation(s) {', '.join(sorted(unknown))}; known: {', '.join(sorted(names))}",
              file=sys.stderr)
        return 2
    chosen = [m for m in MUTATIONS if not args.only or m.name in args.only]
    if args.tests:
        chosen = [Mutation(m.name, m.what, m.path, m.old, m.new, tuple(args.tests)) for m in chosen]
    ok = True
    print(f"{'mutation':32s} {'result':8s} {'secs':>5s}  caught by")
    with tempfile.TemporaryDirectory(prefix="tritonblas-mutations-") as tmp:
        if args.baseline:
            base = Path(tmp) / "baseline"
            _copy_tree(base)
            for tests in sorted({m.tests for m in chosen}):
                rc, summary, dt = _pytest(base, tests)
                good = rc == 0
                ok &= good
                print(f"{'(baseline) ' + ' '.join(Path(t).name for t in tests):32s} "
                      f"{'pass' if good else 'FAIL':8s} {dt:5.0f}  {summary}", flush=True)
        for m in chosen:
            tree = Path(tmp) / m.name
            _copy_tree(tree)
            _apply(tree, m)
            rc, summary, dt = _pytest(tree, m.tests)
            caught = rc == 1  # 1: tests failed; other codes are errors of the run itself
            ok &= caught
            print(f"{m.name:32s} {'caught' if caught else f'MISSED({rc})':8s} {dt:5.0f}  "
                  f"{summary if caught else summary + ' — ' + m.what}", flush=True)
            shutil.rmtree(tree, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

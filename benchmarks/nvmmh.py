"""Adapter: NVIDIA nvMatmulHeuristics (nvMMH) as a config picker for *our* Triton kernels.

    from benchmarks.nvmmh import available, top_configs
    top_configs(origami.GemmProblem(64, 8192, 4096), k=8)   # -> list[TileConfig], best estimate first

nvMMH is an optional, proprietary dependency (PyPI ``nvidia-matmul-heuristics``; ``pip install
tritonblas[nvmmh]``): it is imported lazily, never vendored, and this module is our own code. It is
used as a baseline only (benchmarks/compare.py): "nvMMH top-1 / best of top-k, run on our kernel".

What the adapter does, per query:

- target ``TRITON`` with the ``PERF_MODEL_BASED_AUTO_TUNING`` flag, on the *predefined* hardware
  descriptor of the profile's GPU (h200 → ``H200_SXM``), also on a machine with a GPU, so that the
  answers do not depend on where the script runs (without a descriptor and without a GPU the library
  silently models an A100);
- precision: one letter per type (H fp16, T bf16, S fp32, Q e4m3, R e5m2), fp32 accumulation (F for
  tf32): ``TST`` bf16, ``HSH`` fp16, ``SFS`` tf32, ``SSS`` fp32, ``QQTST`` e4m3 → bf16 (five letters:
  A, B, C, compute, D). Beware: the letter B is int8 in nvMMH, not bf16;
- a custom TRITON backend whose additional-validity callback maps each candidate onto a TileConfig
  (below) and accepts it only if it passes every predicate of ``origami.space`` for our profile, so
  nvMMH ranks inside *our* space; the results are checked again afterwards;
- results re-sorted by nvMMH's own runtime estimate (the library returns them unsorted), ties kept
  in the library's order, then de-duplicated after mapping (two warp tilings of one CTA tile become
  one TileConfig). The same problem always gives the same list.

Mapping of one nvMMH kernel configuration onto a TileConfig:

- kind ``dp``, or ``splitk`` with ``split_k = splitK`` when splitK > 1 (our split-K kernel takes any
  split count; our predicates only allow it where the tile grid leaves SMs idle);
- block_m/n/k = cta[0]/cta[1]/cta[2] (cta[0] tiles M: checked with 64×8192×4096, whose picks have a
  small CTA M, against 8192×64×4096, whose picks have a small CTA N);
- num_warps = (cta_m/warp_m)·(cta_n/warp_n)·(cta_k/warp_k) (nvMMH has no warp-count field), moved to
  the nearest count our space enumerates (4 or 8) that fits the accumulator-register predicate;
- num_stages = loadStages, lowered until the pipeline fits in shared memory;
- group_m = gridSwizzle (the header defines it as Triton's GROUP_SIZE_M; 0 → 1). ctaOrder
  (column-major raster) and cluster shapes have no counterpart in our kernels and are ignored.

Layouts: our N/T letters name nvMMH's ``{A}{B}_ROW_MAJOR`` layouts (C is row-major in our kernels).
On the TRITON target the layout did not change a single answer in our probes (all 8 layouts, five
shapes, nvMMH 0.1.0.27), so a wrong guess here would not change the baseline.

Pitfall handled here: the library's Python wrapper destroys its handle in ``__del__``, which
segfaults (at the latest at interpreter exit) once a query has run; our interface objects skip that
and live for the life of the process (one per precision, a few kB).
"""

from __future__ import annotations

import dataclasses
import math
import threading
import sys
from dataclasses import dataclass
from pathlib import Path

_ROOT = str(Path(__file__).resolve().parent.parent)
if _ROOT not in sys.path:  # run as a script, or imported from benchmarks/compare.py
    sys.path.insert(0, _ROOT)

from origami.config import Kind, TileConfig  # noqa: E402
from origami.hardware import HardwareProfile, load_profile  # noqa: E402
from origami.problem import DType, GemmProblem  # noqa: E402
from origami.space import check_registers, check_smem, violations  # noqa: E402

__all__ = ["available", "unavailable_reason", "top_configs", "top_estimates", "precision_of", "map_config",
           "GPU_OF_PROFILE", "ALLOWED_WARPS"]

# our profile name → nvMMH predefined GPU enum member
GPU_OF_PROFILE = {"h200": "H200_SXM", "h100": "H100_SXM", "b200": "B200"}
ALLOWED_WARPS = (4, 8)  # the warp counts origami.enumerate offers on NVIDIA
_LETTER = {DType.FP16: "H", DType.BF16: "T", DType.FP32: "S", DType.TF32: "S", DType.FP8_E4M3: "Q",
           DType.FP8_E5M2: "R"}

_LOCK = threading.RLock()
_MOD = None           # the imported module (or None before the first use)
_IMPORT_ERROR: str | None = None
_SESSIONS: dict = {}  # (precision, gpu) -> _Session, kept for the life of the process


def _module():
    """Import nvMatmulHeuristics once; None (and the reason remembered) when it is not installed."""
    global _MOD, _IMPORT_ERROR
    with _LOCK:
        if _MOD is None and _IMPORT_ERROR is None:
            try:
                import nvMatmulHeuristics as mod  # noqa: PLC0415 - optional dependency, imported lazily

                _MOD = mod
            except Exception as e:  # noqa: BLE001 - ImportError, or the shared library failing to load
                _IMPORT_ERROR = f"{type(e).__name__}: {e}"
        return _MOD


def unavailable_reason() -> str | None:
    """None when nvMMH can be used, else why not (for skip messages)."""
    if _module() is None:
        return (f"nvMatmulHeuristics is not importable ({_IMPORT_ERROR}); "
                "install the optional extra: pip install 'tritonblas[nvmmh]'")
    return None


def available() -> bool:
    return unavailable_reason() is None


def precision_of(problem: GemmProblem) -> str:
    """nvMMH's precision string for the problem's dtypes (ValueError when it has none)."""
    a, b, c = problem.a_dtype, problem.b_dtype, problem.c_dtype
    for d in (a, b, c):
        if d not in _LETTER:
            raise ValueError(f"nvmmh: no precision letter for {d.value}")
    if c is DType.TF32:
        raise ValueError("nvmmh: tf32 is an input mode; the output is fp32")
    if a is DType.TF32 or b is DType.TF32:
        if not (a is b is DType.TF32 and c is DType.FP32):
            raise ValueError(f"nvmmh: tf32 needs tf32 x tf32 -> fp32, got {problem.describe()}")
        return "SFS"
    if a is b and a.bytes >= 2:
        return _LETTER[a] + "S" + _LETTER[c]
    return _LETTER[a] + _LETTER[b] + _LETTER[c] + "S" + _LETTER[c]


def _nearest_warps(derived: int) -> list[int]:
    """Allowed warp counts, the nearest (in log2) to nvMMH's derived count first, larger on ties."""
    d = math.log2(max(1, derived))
    return sorted(ALLOWED_WARPS, key=lambda w: (abs(math.log2(w) - d), -w))


def map_config(cta, warp, split_k: int, stages: int, swizzle: int, problem: GemmProblem,
               hw: HardwareProfile) -> TileConfig | None:
    """One nvMMH configuration (plain numbers) → our TileConfig, or None when our space has no such
    config (not a power-of-two tile, or a violated predicate after the clamps)."""
    bm, bn, bk = (int(x) for x in cta)
    wm, wn, wk = (max(1, int(x)) for x in warp)
    derived = max(1, bm // wm) * max(1, bn // wn) * max(1, bk // wk)
    kind = Kind.SPLITK if split_k > 1 else Kind.DP
    group_m = max(1, int(swizzle))
    try:
        base = TileConfig(kind, bm, bn, bk, 4, 1, group_m, split_k=max(1, int(split_k)))
    except (TypeError, ValueError):
        return None
    warps = next((w for w in _nearest_warps(derived)
                  if check_registers(_replace(base, num_warps=w), problem, hw) is None), None)
    if warps is None:
        return None
    cfg = None
    for s in range(min(8, max(1, int(stages))), 0, -1):
        cand = _replace(base, num_warps=warps, num_stages=s)
        if check_smem(cand, problem, hw) is None:
            cfg = cand
            break
    if cfg is None or violations(cfg, problem, hw):
        return None
    return cfg


def _replace(cfg: TileConfig, **kw) -> TileConfig:
    return dataclasses.replace(cfg, **kw)


@dataclass
class _Session:
    """One nvMMH handle + H200-style descriptor + TRITON backend with our validity callback."""

    iface: object
    descriptor: object
    backend: object
    current: list  # [problem, hw] of the query in flight (the callback reads it)


def _session(precision: str, gpu: str) -> _Session:
    mod = _module()
    key = (precision, gpu)
    s = _SESSIONS.get(key)
    if s is not None:
        return s

    class _Immortal(mod.NvMatmulHeuristicsInterface):
        def __del__(self):  # the wrapper's destroy segfaults after a query: never destroy
            pass

    iface = _Immortal(mod.NvMatmulHeuristicsTarget.TRITON, precision,
                      flags=mod.NvMatmulHeuristicsFlags.PERF_MODEL_BASED_AUTO_TUNING)
    desc = iface.createHardwareDescriptor()
    iface.setHardwarePredefinedGpu(desc, getattr(mod.NvMatmulHeuristicsNvidiaGpu, gpu))
    backend = iface.createBackend(mod.NvMatmulHeuristicsTarget.TRITON)
    current: list = [None, None]

    def valid(cfg_ptr, _problem_ptr) -> int:
        try:
            c = cfg_ptr.contents
            problem, hw = current
            ok = map_config(tuple(c.cta), tuple(c.warp), int(c.splitK), int(c.loadStages), int(c.gridSwizzle),
                            problem, hw) is not None
            return 1 if ok else 0
        except Exception:  # noqa: BLE001 - an exception must not cross the C boundary
            return 0

    iface.setBackendCallbackProperty(
        backend, mod.NvMatmulHeuristicsBackendPropertyCallbackKind.KERNEL_ADDITIONAL_VALIDITY_CHECK, valid)
    s = _Session(iface, desc, backend, current)
    _SESSIONS[key] = s
    return s


def top_estimates(problem: GemmProblem, k: int = 8, profile: "str | HardwareProfile" = "h200",
                  ) -> list[tuple[TileConfig, float]]:
    """nvMMH's ``k`` best configs for ``problem`` inside our space, as (TileConfig, estimated seconds),
    fastest estimate first. May return fewer than ``k`` (after de-duplication, or for tiny problems).
    RuntimeError when nvMMH is not installed; ValueError for dtypes or profiles it cannot model."""
    reason = unavailable_reason()
    if reason:
        raise RuntimeError(reason)
    hw = load_profile(profile)
    gpu = GPU_OF_PROFILE.get(hw.name)
    if gpu is None:
        raise ValueError(f"nvmmh: no predefined nvMMH GPU for profile {hw.name!r} "
                         f"(known: {', '.join(sorted(GPU_OF_PROFILE))})")
    if min(problem.m, problem.n, problem.k, problem.batch) <= 0:
        raise ValueError(f"nvmmh: {problem.describe()} is empty")
    precision = precision_of(problem)
    mod = _module()
    layout = getattr(mod.NvMatmulHeuristicsMatmulLayout,
                     f"{problem.a_layout.value}{problem.b_layout.value}_ROW_MAJOR")
    with _LOCK:
        s = _session(precision, gpu)
        s.current[:] = [problem, hw]
        try:
            q = s.iface.makeNvMatmulHeuristicsProblem(problem.m, problem.n, problem.k, layout, problem.batch)
            raw = s.iface.getEx(q, max(2 * k, 16), s.backend, s.descriptor)
            found = []
            for r in raw:
                c = r["nvmmhKernelConfiguration"]
                cfg = map_config(tuple(c.cta), tuple(c.warp), int(c.splitK), int(c.loadStages),
                                 int(c.gridSwizzle), problem, hw)
                found.append((cfg, float(r["runtime"])))
        finally:
            s.current[:] = [None, None]
    order = sorted(range(len(found)), key=lambda i: (found[i][1], i))
    out, seen = [], set()
    for i in order:
        cfg, est = found[i]
        if cfg is None or cfg in seen or not math.isfinite(est):
            continue
        seen.add(cfg)
        out.append((cfg, est))
        if len(out) == k:
            break
    return out


def top_configs(problem: GemmProblem, k: int = 8, profile: "str | HardwareProfile" = "h200") -> list[TileConfig]:
    """:func:`top_estimates` without the estimates."""
    return [cfg for cfg, _ in top_estimates(problem, k, profile)]


if __name__ == "__main__":  # a quick look: python benchmarks/nvmmh.py M N K [dtype]
    m, n, k = (int(x) for x in sys.argv[1:4])
    dt = sys.argv[4] if len(sys.argv) > 4 else "bf16"
    p = GemmProblem(m, n, k, dt, dt, DType(dt).default_output)
    for cfg, est in top_estimates(p, 8):
        print(f"{cfg.short():44s} est {est * 1e6:9.1f} us")

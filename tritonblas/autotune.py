"""The model as a pruner for a user's ``@triton.autotune``: rank the kernel's own configs on the
actual problem and keep the best ``top_k``, so autotuning benchmarks a few configs, or none.

    @triton.autotune(configs=[triton.Config({"BLOCK_M": 128, ...}, num_warps=8, num_stages=3), ...],
                     key=["M", "N", "K"],
                     prune_configs_by={"early_config_prune": tritonblas.autotune.pruner(top_k=2)})
    @triton.jit
    def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, ..., BLOCK_M: tl.constexpr, ...): ...

Triton calls the pruner once per new autotune key with the launch's named arguments. The problem is
read from them: ``M``, ``N``, ``K`` (ints) and the tensors ``a_ptr``, ``b_ptr``, ``c_ptr`` (dtypes,
layouts by :func:`origami.problem.layout_order`, alignment by :func:`tritonblas.plan.alignment_bytes`);
pass other argument names if the kernel uses them. Each ``triton.Config`` becomes a ``dp``
:class:`origami.TileConfig` (:meth:`~origami.TileConfig.from_triton_config`; on AMD profiles the
AMD knobs default to ``waves_per_eu=0, matrix_instr_nonkdim=16, kpack=1``, on NVIDIA they are
dropped) and is scored by :func:`origami.predict`. Configs the model rejects (shared memory,
registers, instruction shape...) come after every accepted one, in their given order, so the
pruner always returns at least one config. The profile is ``profile=``, else ``$TRITONBLAS_PROFILE``,
else the tensors' device (:func:`tritonblas._device.profile_for_device`).

Under ``TRITON_INTERPRET=1`` Triton's autotuner still benchmarks the kept configs, and its default
``do_bench`` needs a GPU driver ("0 active drivers"): pass ``do_bench=tritonblas.autotune.run_once``
(runs each kept config once, times nothing), best with ``top_k=1``
(examples/autotune_pruner.py; tests/api/test_autotune_pruner.py).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Mapping, Sequence

import origami
from origami import GemmProblem, Layout, TileConfig
from origami.config import checked_names
from origami.problem import layout_order

__all__ = ["pruner", "problem_of", "rank_configs", "run_once"]

_AMD_DEFAULTS = {"waves_per_eu": 0, "matrix_instr_nonkdim": 16, "kpack": 1}


def problem_of(args: Mapping[str, Any], *, m: str = "M", n: str = "N", k: str = "K", a: str = "a_ptr",
               b: str = "b_ptr", c: str | None = "c_ptr") -> GemmProblem:
    """The GemmProblem of a launch's named arguments (A is M×K, B is K×N, C is M×N)."""
    from tritonblas.dispatch import DTYPES
    from tritonblas.plan import alignment_bytes

    missing = [name for name in (m, n, k, a, b) if name not in args]
    if missing:
        raise ValueError(f"pruner: the kernel has no argument(s) {missing} (arguments: {sorted(args)}); "
                         "pass m=/n=/k=/a=/b= with its names")
    ta, tb, tc = args[a], args[b], args.get(c) if c else None
    named = [(name, t) for name, t in ((a, ta), (b, tb), (c, tc)) if t is not None or name in (a, b)]
    for name, t in named:
        if not hasattr(t, "dtype") or not hasattr(t, "stride"):
            raise ValueError(f"pruner: argument {name} is {type(t).__name__}, not a tensor (pass a=/b=/c= with "
                             "the names of the kernel's A, B and C tensor arguments)")
    tensors = [t for _, t in named]
    for name, t in named:
        if t.dtype not in DTYPES:
            raise ValueError(f"pruner: argument {name} has dtype {t.dtype}, which origami has no DType for")

    def layout(t) -> Layout:
        (n0, n1), (s0, s1) = t.shape[-2:], t.stride()[-2:]
        return Layout.T if layout_order(n0, n1, s0, s1) == 1 else Layout.N

    return GemmProblem(int(args[m]), int(args[n]), int(args[k]), DTYPES[ta.dtype], DTYPES[tb.dtype],
                       DTYPES[(tc if tc is not None else ta).dtype], layout(ta), layout(tb),
                       align_bytes=min(alignment_bytes(t) for t in tensors))


def _tile(cfg: Any, hw: origami.HardwareProfile, names: Mapping[str, str] | None) -> TileConfig:
    tile = TileConfig.from_triton_config(cfg, names)
    if hw.is_amd:
        return dataclasses.replace(tile, **{f: v if getattr(tile, f) is None else getattr(tile, f)
                                            for f, v in _AMD_DEFAULTS.items()})
    return dataclasses.replace(tile, **{f: None for f in _AMD_DEFAULTS})


def rank_configs(configs: Sequence[Any], problem: GemmProblem, hw: "origami.HardwareProfile | str",
                 names: Mapping[str, str] | None = None) -> list[tuple[Any, "origami.Estimate | str"]]:
    """``(config, Estimate)`` for every config the model accepts, fastest first (ties keep the given
    order), then ``(config, reason)`` for each it rejects, in the given order. A bad ``names`` raises
    ValueError (it would reject every config alike)."""
    checked_names(names)
    hw = origami.load_profile(hw)
    scored, rejected = [], []
    for i, cfg in enumerate(configs):
        try:
            est = origami.predict(problem, hw, _tile(cfg, hw, names))
        except (ValueError, TypeError) as e:
            rejected.append((cfg, str(e)))
            continue
        scored.append((est.latency_ns, i, cfg, est))
    scored.sort(key=lambda s: s[:2])
    return [(cfg, est) for _, _, cfg, est in scored] + rejected


def pruner(*, top_k: int = 1, profile: Any = None, m: str = "M", n: str = "N", k: str = "K", a: str = "a_ptr",
           b: str = "b_ptr", c: str | None = "c_ptr",
           names: Mapping[str, str] | None = None) -> Callable[..., list[Any]]:
    """An ``early_config_prune`` for ``@triton.autotune(prune_configs_by=...)`` keeping the model's
    ``top_k`` best of the kernel's configs for each problem (see the module docstring).
    ``names`` maps TileConfig fields to the kernel's constexpr names (``{"block_m": "BM"}``)."""
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
        raise ValueError(f"top_k: must be an int >= 1, got {top_k!r}")
    checked_names(names)  # fail here, not as every config "rejected" at the kernel's first launch
    if profile is not None:
        origami.load_profile(profile)  # a bad name fails here, not deep inside Triton's autotuner

    def early_config_prune(configs: Sequence[Any], named_args: Mapping[str, Any], **kwargs: Any) -> list[Any]:
        args = {**named_args, **kwargs}
        problem = problem_of(args, m=m, n=n, k=k, a=a, b=b, c=c)
        from tritonblas._device import profile_for_device

        hw = profile_for_device(args[a].device, profile=profile).profile
        return [cfg for cfg, _ in rank_configs(configs, problem, hw, names)[:top_k]]

    return early_config_prune


def run_once(fn: Callable[[], Any], quantiles: Sequence[float] | None = None, **_: Any) -> list[float]:
    """A ``do_bench`` for ``@triton.autotune`` under TRITON_INTERPRET=1: calls ``fn`` once and
    reports 0 ms for every quantile (the autotuner then keeps the first of the kept configs, the
    model's best)."""
    fn()
    return [0.0] * len(quantiles or (0.5,))

"""Triton integration (DESIGN.md §3): TileConfig ↔ triton.Config and the model as an
``early_config_prune`` for a user's ``@triton.autotune`` kernel, run under the interpreter."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")

import origami  # noqa: E402
from origami import GemmProblem, Kind, TileConfig  # noqa: E402
from tritonblas.autotune import problem_of, pruner, rank_configs  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "autotune_pruner.py"


def test_to_triton_config_nvidia():
    cfg = TileConfig(Kind.DP, 128, 64, 32, 4, 3, group_m=8)
    tc = cfg.to_triton_config()
    assert isinstance(tc, triton.Config)
    assert tc.kwargs == {"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8}
    assert (tc.num_warps, tc.num_stages) == (4, 3)
    assert TileConfig.from_triton_config(tc) == cfg
    renamed = cfg.to_triton_config({"block_m": "BLOCK_SIZE_M", "group_m": "GROUP_SIZE_M"})
    assert set(renamed.kwargs) == {"BLOCK_SIZE_M", "BLOCK_N", "BLOCK_K", "GROUP_SIZE_M"}
    assert TileConfig.from_triton_config(renamed) == cfg


def test_to_triton_config_refuses_bad_names():
    """names= with a typo'd field was ignored (the kernel then missed its constexpr at launch); two
    fields under one constexpr name silently dropped one (BLOCK_N got block_n, BLOCK_M vanished)."""
    cfg = TileConfig(Kind.DP, 128, 64, 32, 4, 3)
    for names, needle in (({"block_x": "BX"}, "unknown TileConfig field"), ({"block_m": "BLOCK_N"}, "two fields"),
                          ({"block_m": 3}, "identifiers"), ({"block_m": "BLOCK M"}, "identifiers")):
        with pytest.raises(ValueError, match=f"^names: .*{needle}"):
            cfg.to_triton_config(names)
    swapped = cfg.to_triton_config({"block_m": "BLOCK_N", "block_n": "BLOCK_M"})  # a consistent swap is fine
    assert swapped.kwargs["BLOCK_N"] == 128 and swapped.kwargs["BLOCK_M"] == 64


def test_to_triton_config_amd_extras():
    cfg = TileConfig(Kind.DP, 256, 128, 64, 8, 2, group_m=4, waves_per_eu=0, matrix_instr_nonkdim=16, kpack=2)
    tc = cfg.to_triton_config()
    assert tc.kwargs["waves_per_eu"] == 0 and tc.kwargs["matrix_instr_nonkdim"] == 16 and tc.kwargs["kpack"] == 2
    assert TileConfig.from_triton_config(tc) == cfg


def test_selected_dp_config_maps_and_others_refuse():
    best = origami.select(GemmProblem(4096, 4096, 4096), "h200").config
    if best.kind is Kind.DP:
        assert TileConfig.from_triton_config(best.to_triton_config()) == best
    sk = TileConfig(Kind.SPLITK, 64, 64, 64, 4, 3, split_k=4)
    with pytest.raises(ValueError, match="TileConfig.kind: only 'dp'.*'splitk'"):
        sk.to_triton_config()


def test_from_triton_config_errors_and_defaults():
    tutorial = triton.Config({"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 32}, num_warps=4, num_stages=4)
    assert TileConfig.from_triton_config(tutorial).group_m == 1  # no GROUP_M: no swizzle
    with pytest.raises(ValueError, match="no BLOCK_K / BLOCK_SIZE_K constexpr for TileConfig.block_k"):
        TileConfig.from_triton_config(triton.Config({"BLOCK_M": 64, "BLOCK_N": 64}))


CONFIGS = [triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8}, num_warps=w, num_stages=s)
           for bm, bn, bk, w, s in [(256, 256, 128, 8, 4), (128, 256, 64, 8, 3), (64, 64, 32, 4, 4),
                                    (128, 128, 64, 8, 3), (16, 64, 64, 4, 3)]]


def _args(m, n, k, dtype=torch.bfloat16):
    a, b = torch.empty(m, k, dtype=dtype), torch.empty(k, n, dtype=dtype)
    return {"a_ptr": a, "b_ptr": b, "c_ptr": torch.empty(m, n, dtype=dtype), "M": m, "N": n, "K": k}


@pytest.mark.parametrize("shape", [(4096, 4096, 4096), (16, 4096, 4096), (300, 200, 5000)])
def test_pruner_keeps_the_models_best(shape):
    args = _args(*shape)
    problem = problem_of(args)
    assert problem == GemmProblem(*shape)
    kept = pruner(top_k=2, profile="h200")(CONFIGS, args)
    preds = {}
    for c in CONFIGS:
        try:
            preds[id(c)] = origami.predict(problem, "h200", TileConfig.from_triton_config(c)).latency_ns
        except ValueError:
            pass
    assert len(preds) >= 2  # 256x256x128 never fits in shared memory; M=16 rules out BLOCK_M > 64
    best2 = sorted(preds, key=preds.get)[:2]
    assert [id(c) for c in kept] == best2


def test_pruner_puts_rejected_configs_last_and_never_returns_nothing():
    only_bad = [CONFIGS[0]]
    ranked = rank_configs(only_bad, GemmProblem(4096, 4096, 4096), "h200")
    assert ranked[0][0] is CONFIGS[0] and "check_smem" in ranked[0][1]
    assert pruner(profile="h200")(only_bad, _args(4096, 4096, 4096)) == only_bad


def test_pruner_amd_profile_defaults_the_amd_knobs():
    ranked = rank_configs(CONFIGS, GemmProblem(4096, 4096, 4096), "mi300x")
    assert all(isinstance(e, origami.Estimate) for _, e in ranked[:3])
    assert ranked[0][1].config.matrix_instr_nonkdim == 16


def test_pruner_argument_errors():
    with pytest.raises(ValueError, match="top_k: must be an int >= 1"):
        pruner(top_k=0)
    with pytest.raises(ValueError, match=r"no argument\(s\) \['M'\]"):
        pruner(profile="h200")(CONFIGS, {k: v for k, v in _args(64, 64, 64).items() if k != "M"})


def test_pruner_refuses_bad_names_and_profile_when_made():
    """``names=`` with a typo'd field (``{"block_mm": "BM"}``) or a non-identifier value was ignored by
    ``from_triton_config`` (``to_triton_config`` refuses it): the kernel's ``BM`` configs then failed as "no
    BLOCK_M constexpr", every one was "rejected" and the pruner returned the first ``top_k`` unranked, silently.
    A bad ``profile=`` surfaced only at the kernel's first launch, deep inside Triton's autotuner. Both now fail
    when the pruner is made (and ``rank_configs`` before scoring), as ``OrigamiChoices(profile=)`` does."""
    bm = [triton.Config({"BM": 64, "BN": 64, "BK": 32}, num_warps=4, num_stages=3),
          triton.Config({"BM": 128, "BN": 128, "BK": 64}, num_warps=8, num_stages=3)]
    good = {"block_m": "BM", "block_n": "BN", "block_k": "BK"}
    for bad, needle in (({**good, "block_mm": "BM"}, "unknown TileConfig field"), ({**good, "block_m": 3}, "identifiers")):
        with pytest.raises(ValueError, match=f"^names: .*{needle}"):
            TileConfig.from_triton_config(bm[0], bad)
        with pytest.raises(ValueError, match=f"^names: .*{needle}"):
            pruner(profile="h200", names=bad)
        with pytest.raises(ValueError, match=f"^names: .*{needle}"):
            rank_configs(bm, GemmProblem(4096, 4096, 4096), "h200", bad)
    with pytest.raises(origami.ProfileError, match="h300: unknown profile"):
        pruner(profile="h300")
    ranked = rank_configs(bm, GemmProblem(4096, 4096, 4096), "h200", good)
    assert all(isinstance(e, origami.Estimate) for _, e in ranked)


def test_example_user_kernel_autotunes_through_the_pruner(monkeypatch, device):
    monkeypatch.setenv("TRITONBLAS_PROFILE", "h200")
    spec = importlib.util.spec_from_file_location("autotune_pruner_example", EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    calls = []
    prune = mod.matmul_kernel.early_config_prune
    mod.matmul_kernel.early_config_prune = lambda *a, **k: calls.append(1) or prune(*a, **k)
    a, b = torch.randn(80, 48, device=device), torch.randn(48, 72, device=device)
    want = (a.double() @ b.double()).float()
    got = mod.matmul(a, b).double().cpu()
    if device == "cuda":  # the example's tl.dot rounds fp32 inputs to TF32: RELIABILITY.md's TF32 bound
        bound = 2 * 2.0 ** -11 * (a.abs().double() @ b.abs().double()).cpu() + 1e-6
        assert ((got - want.double().cpu()).abs() <= bound).all()
    else:
        torch.testing.assert_close(got.float(), want.cpu(), rtol=2e-3, atol=2e-3)
    mod.matmul(a, b)
    assert len(calls) == 1, "Triton prunes once per autotune key"
    problem = GemmProblem(80, 72, 48, "fp32", "fp32", "fp32")
    best = rank_configs(mod.CONFIGS, problem, "h200")[0][0]
    assert mod.matmul_kernel.best_config is best


def test_problem_of_names_the_argument_that_is_not_a_tensor():
    """A None or integer where a tensor belongs is named as itself (the names once shifted past a
    dropped None), and a None C is simply absent."""
    args = _args(64, 48, 32)
    with pytest.raises(ValueError, match=r"argument a_ptr is NoneType, not a tensor"):
        problem_of({**args, "a_ptr": None})
    with pytest.raises(ValueError, match=r"argument b_ptr is int, not a tensor"):
        problem_of({**args, "b_ptr": 7})
    p = problem_of({**args, "c_ptr": None})
    assert (p.m, p.n, p.k) == (64, 48, 32)

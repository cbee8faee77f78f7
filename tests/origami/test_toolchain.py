"""origami.toolchain (the Triton release the model predicts for) and the one rule that depends on it,
gfx950's LDS under Triton >= 3.8 (origami.space.smem_bytes; measured by tests/benchmarks/test_amd_census.py)."""

from __future__ import annotations

import pytest

import origami
from origami import space, toolchain
from origami.config import TileConfig
from origami.problem import DType, GemmProblem


def test_the_variable_overrides_the_installed_release(monkeypatch):
    monkeypatch.setenv(toolchain.ENV_TRITON_VERSION, "3.9")
    assert toolchain.triton_version() == (3, 9)
    monkeypatch.setenv(toolchain.ENV_TRITON_VERSION, "3.10.1+rocm")
    assert toolchain.triton_version() == (3, 10)
    monkeypatch.setenv(toolchain.ENV_TRITON_VERSION, "three")
    with pytest.raises(ValueError, match=r"\$ORIGAMI_TRITON_VERSION: 'three' is not a Triton version"):
        toolchain.triton_version()
    monkeypatch.delenv(toolchain.ENV_TRITON_VERSION)
    installed = toolchain.triton_version()
    assert installed is None or (installed[0] >= 3 and installed[1] >= 0)


@pytest.mark.parametrize("version,gfx950_bytes", [("3.6", 98304), ("3.7", 98304), ("3.8", 208896), ("3.9", 208896)])
def test_gfx950_lds_follows_the_compiler_and_gfx942_does_not(monkeypatch, version, gfx950_bytes):
    monkeypatch.setenv(toolchain.ENV_TRITON_VERSION, version)
    p = GemmProblem(4096, 4096, 4096, a_dtype=DType.BF16, b_dtype=DType.BF16, c_dtype=DType.BF16)
    cfg = TileConfig("dp", 256, 128, 128, 8, 2)  # A = 64 KiB, B = 32 KiB a stage
    staged = 2 * (256 * 128 + 128 * 128) * 2
    assert space.smem_bytes(cfg, p, origami.load_profile("mi350x")) == gfx950_bytes
    assert gfx950_bytes in (staged // 2, staged + staged // 16)
    assert space.smem_bytes(cfg, p, origami.load_profile("mi300x")) == staged // 2  # gfx942: one stage in registers
    one = TileConfig("dp", 256, 128, 128, 8, 1)
    assert space.smem_bytes(one, p, origami.load_profile("mi350x")) == 256 * 128 * 2  # max(A, B) at one stage
    assert space.smem_bytes(cfg, p, origami.load_profile("h200")) == staged  # NVIDIA: every stage, any release


def test_the_predicate_rejects_what_triton_3_9_cannot_fit_on_gfx950(monkeypatch):
    """256x256x128 bf16 at 2 stages took 270272 B of LDS on gfx950 with Triton 3.9 (the census), over
    the 160 KiB a program may use: admitted under 3.6's rule, rejected under 3.9's."""
    p = GemmProblem(4096, 4096, 4096, a_dtype=DType.BF16, b_dtype=DType.BF16, c_dtype=DType.BF16)
    cfg = TileConfig("dp", 256, 256, 128, 8, 2)
    hw = origami.load_profile("mi350x")
    monkeypatch.setenv(toolchain.ENV_TRITON_VERSION, "3.6")
    assert space.check_smem(cfg, p, hw) is None
    monkeypatch.setenv(toolchain.ENV_TRITON_VERSION, "3.9")
    assert space.check_smem(cfg, p, hw) == "shared memory: needs 278528 bytes with 2 stages, the profile allows 163840"


def test_selection_follows_the_toolchain_and_its_caches_do_not_go_stale(monkeypatch):
    """64x16384x4096 bf16 on mi350x: under 3.6's rule the pick is a 2-stage 64x256x128 split-K
    config, which needs 174080 B of LDS under 3.8+'s (over 160 KiB): there the pick is one that fits.
    The caches are keyed by the compiler-dependent input, so switching back gives 3.6's pick again."""
    hw = origami.load_profile("mi350x")
    p = GemmProblem(64, 16384, 4096, a_dtype=DType.BF16, b_dtype=DType.BF16, c_dtype=DType.BF16)
    monkeypatch.setenv(toolchain.ENV_TRITON_VERSION, "3.6")
    old = origami.select(p, hw).config
    monkeypatch.setenv(toolchain.ENV_TRITON_VERSION, "3.9")
    new = origami.select(p, hw).config
    assert space.check_smem(old, p, hw) is not None and space.check_smem(new, p, hw) is None
    assert origami.rank(p, hw, 3)[0].config == new
    monkeypatch.setenv(toolchain.ENV_TRITON_VERSION, "3.6")
    assert origami.select(p, hw).config == old and origami.rank(p, hw, 3)[0].config == old

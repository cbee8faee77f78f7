"""benchmarks/scaled_mm_compare.py's arguments on CPU (the comparison itself needs a GPU)."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import scaled_mm_compare  # noqa: E402


@pytest.mark.parametrize("bad", ["16", "48", "0"])
def test_a_promotion_interval_triton_cannot_compile_is_refused_by_name(bad, capsys):
    with pytest.raises(SystemExit) as e:
        scaled_mm_compare.main(["--promote-k", bad])
    assert e.value.code == 2
    assert f"--promote-k: {bad} is not a power of two of at least 32" in capsys.readouterr().err


def test_without_a_gpu_it_says_so(capsys):
    import torch

    if torch.cuda.is_available():
        pytest.skip("checks what happens without a GPU")
    assert scaled_mm_compare.main(["--promote-k", "128"]) == 2
    assert "needs a CUDA GPU" in capsys.readouterr().err


@pytest.mark.parametrize("spec,why", [("no_such_term=1", "no_such_term"), ("fp8_promote_efficiency", "KEY=VALUE"),
                                      ("fp8_promote_efficiency=abc", "abc")])
def test_a_bad_variant_is_refused_by_name_before_any_gpu_work(spec, why):
    with pytest.raises(SystemExit) as e:
        scaled_mm_compare.main(["--variant", spec])
    assert "--variant" in str(e.value) and why in str(e.value)


def test_picked_is_origamis_pick_for_scaled_mms_layout():
    import origami

    hw = origami.load_profile("h100")
    p = origami.GemmProblem(512, 4096, 4096, "fp8_e4m3", "fp8_e4m3", "bf16", "N", "T", 1, 16)
    assert scaled_mm_compare.picked(512, 4096, 4096, hw) == origami.select(p, hw).config.short()
    fast = hw.replace_model(fp8_promote_efficiency=0.77115)
    assert scaled_mm_compare.picked(128, 10240, 8192, fast) != scaled_mm_compare.picked(128, 10240, 8192, hw)
    from origami.space import without_promotion

    big = origami.GemmProblem(8192, 8192, 8192, "fp8_e4m3", "fp8_e4m3", "bf16", "N", "T", 1, 16)
    assert scaled_mm_compare.picked(8192, 8192, 8192, hw, fast=True) == \
        origami.select(big, without_promotion(hw)).config.short() != scaled_mm_compare.picked(8192, 8192, 8192, hw)

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

"""The recorded data stays one part's: sweep.py and vendor_times.py refuse a GPU their --profile does not
name (benchmarks/_harness.foreign_gpu, on HardwareProfile.name_match), since the device tool may answer an H200 call with an H100."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import _harness  # noqa: E402
import origami  # noqa: E402


@pytest.mark.parametrize("profile, gpu, ok", [
    ("h200", "NVIDIA H200", True),
    ("h200", "NVIDIA H200 NVL", True),
    ("h200", "NVIDIA H100 80GB HBM3", False),
    ("h100", "NVIDIA H100 80GB HBM3", True),
    ("h100", "nvidia h100 pcie", True),      # case-insensitive, as the dispatcher maps names
    ("h100", "NVIDIA H200", False),
    ("mi300x", "AMD Instinct MI300X", True),
    ("mi300x", "AMD Instinct MI325X", False),
])
def test_a_gpu_is_foreign_unless_the_profile_names_it(profile, gpu, ok):
    hw = origami.load_profile(profile)
    why = _harness.foreign_gpu(hw, gpu)
    assert (hw.name_match(gpu) > 0) is ok  # the dispatcher's rule, the same predicate
    assert (why is None) is ok
    if not ok:
        assert profile in why and gpu in why and "--any-gpu" in why


def _fake_cuda(monkeypatch, name: str):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda index=None: name)


def test_sweep_refuses_a_foreign_gpu_before_timing_anything(monkeypatch, capsys):
    from benchmarks import sweep

    _fake_cuda(monkeypatch, "NVIDIA H100 80GB HBM3")
    monkeypatch.setattr(sweep, "run_shard", lambda *a, **k: pytest.fail("timed on a foreign GPU"))
    with pytest.raises(SystemExit) as ei:
        sweep.main(["--heldout", "--jobs", "fp16", "--profile", "h200"])
    assert ei.value.code == 2
    assert "profile h200 describes H200, but this GPU is 'NVIDIA H100 80GB HBM3'" in capsys.readouterr().err


def test_vendor_times_refuses_a_foreign_gpu(monkeypatch, capsys):
    import vendor_times

    _fake_cuda(monkeypatch, "NVIDIA H100 80GB HBM3")
    monkeypatch.setattr(vendor_times, "recorded_problems", lambda *a: pytest.fail("timed on a foreign GPU"))
    with pytest.raises(SystemExit):
        vendor_times.main(["--profile", "h200"])
    assert "--any-gpu" in capsys.readouterr().err

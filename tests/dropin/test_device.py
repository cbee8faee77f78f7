"""Device → profile mapping (tritonblas/_device.py), with fake device properties: no GPU needed.

The fakes carry the fields ``torch.cuda.get_device_properties`` has, with values seen on real
parts (torch prints total_memory in MiB: MI300X 196592, H100 81090, B200 182631).
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from types import SimpleNamespace

import pytest

import origami
from tritonblas import _device
from tritonblas._device import (DeviceError, DeviceInfo, DeviceMismatchWarning, clear_device_cache, match_profile,
                                profile_for_device)

MiB, GiB = 2**20, 2**30


def nvidia(name, cc, sms, mem):
    return SimpleNamespace(name=name, major=cc[0], minor=cc[1], multi_processor_count=sms, total_memory=mem)


def amd(name, arch, cus, mem, **extra):
    major, minor = (9, 4) if arch == "gfx942" else (9, 5)
    return SimpleNamespace(name=name, gcnArchName=f"{arch}:sramecc+:xnack-", major=major, minor=minor,
                           multi_processor_count=cus, total_memory=mem, **extra)


H200 = nvidia("NVIDIA H200", (9, 0), 132, 150754820096)
H100 = nvidia("NVIDIA H100 80GB HBM3", (9, 0), 132, 81090 * MiB)
B200 = nvidia("NVIDIA B200", (10, 0), 148, 182631 * MiB)
MI300X = amd("AMD Instinct MI300X", "gfx942", 304, 196592 * MiB)
MI325X = amd("AMD Instinct MI325X", "gfx942", 304, 262128 * MiB)
MI355X = amd("AMD Instinct MI355X", "gfx950", 256, 294896 * MiB)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    monkeypatch.delenv("TRITONBLAS_PROFILE", raising=False)
    monkeypatch.delenv("ORIGAMI_PROFILE_DIR", raising=False)
    clear_device_cache()
    yield
    clear_device_cache()


def quiet(props, **kw) -> DeviceInfo:
    """match_profile, asserting that it does not warn."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return match_profile(props, **kw)


# --- mapping by properties ----------------------------------------------------------------------
@pytest.mark.parametrize("props, expected", [
    (H200, "h200"), (H100, "h100"), (B200, "b200"),
    (MI300X, "mi300x"), (MI325X, "mi325x"), (MI355X, "mi355x"),
    (amd("AMD Instinct MI350X", "gfx950", 256, 294896 * MiB), "mi350x"),
    (amd("AMD Instinct MI300X VF", "gfx942", 304, 196592 * MiB), "mi300x"),
])
def test_known_devices(props, expected):
    info = quiet(props, index=3)
    assert info.profile.name == expected
    assert info.how == "name"
    assert info.index == 3 and info.name == props.name
    assert info.live_compute_units == info.compute_units == props.multi_processor_count
    assert info.mismatches == ()


def test_amd_without_name_is_told_apart_by_memory():
    """MI300X and MI325X share arch and CU count; 192 vs 256 GB decides (DESIGN.md §4)."""
    small = quiet(amd("", "gfx942", 304, 196592 * MiB))
    big = quiet(amd("", "gfx942", 304, 262128 * MiB))
    assert (small.profile.name, small.how) == ("mi300x", "arch+cus+memory")
    assert (big.profile.name, big.how) == ("mi325x", "arch+cus+memory")


def test_mi350x_mi355x_without_name_is_ambiguous():
    with pytest.warns(DeviceMismatchWarning, match="ambiguous between mi350x, mi355x"):
        info = match_profile(amd("", "gfx950", 256, 294896 * MiB))
    assert info.profile.name == "mi350x" and info.how == "nearest"  # the lower clock: conservative
    with pytest.raises(DeviceError, match="ambiguous"):
        match_profile(amd("", "gfx950", 256, 294896 * MiB), strict=True)


def test_mi350x_mi355x_without_name_but_with_clock():
    with pytest.warns(DeviceMismatchWarning, match="has no name") as rec:
        info = match_profile(amd("", "gfx950", 256, 294896 * MiB, clock_rate=2_400_000))
    assert info.profile.name == "mi355x"
    assert "ambiguous" not in str(rec[0].message)
    with pytest.warns(DeviceMismatchWarning):
        assert match_profile(amd("", "gfx950", 256, 294896 * MiB, clock_rate=2_200_000)).profile.name == "mi350x"


def test_nvidia_without_matching_name_warns():
    with pytest.warns(DeviceMismatchWarning, match="matches no profile's device_names"):
        info = match_profile(nvidia("NVIDIA H800", (9, 0), 132, 81090 * MiB))
    assert info.profile.name == "h100"  # nearest by memory among the sm_90 profiles
    assert info.how == "nearest"


def test_mig_slice_warns_and_exposes_the_live_count():
    mig = nvidia("NVIDIA H100 80GB HBM3 MIG 1g.10gb", (9, 0), 16, 9728 * MiB)
    with pytest.warns(DeviceMismatchWarning, match="16 of the profile's 132 compute units") as rec:
        info = match_profile(mig, index=0)
    assert len(rec) == 1  # one warning listing every difference
    assert info.profile.name == "h100"
    assert info.live_compute_units == 16 and info.compute_units == 16
    assert info.profile.compute_units == 132  # the profile is not mutated
    plan = info.plan_profile  # what the dispatcher plans with: the live 16 SMs
    assert plan.compute_units == 16 and plan.content_hash != info.profile.content_hash
    assert plan.matrix_peak_flops["bf16"] == pytest.approx(info.profile.matrix_peak_flops["bf16"] * 16 / 132)
    assert plan.memory == info.profile.memory and "16 of the profile's 132" in plan.sources["compute.compute_units"]
    assert any("GiB of memory" in m for m in info.mismatches)
    with pytest.raises(DeviceError, match="16 of the profile's 132"):
        match_profile(mig, strict=True)


def test_cu_masked_amd_device():
    masked = amd("AMD Instinct MI300X", "gfx942", 38, 196592 * MiB)  # e.g. CPX partition / CU mask
    with pytest.warns(DeviceMismatchWarning, match="8 chiplets may not apply"):
        info = match_profile(masked)
    assert (info.profile.name, info.compute_units) == ("mi300x", 38)
    assert info.plan_profile.compute_units == 32  # rounded down to a multiple of the 8 XCDs


def test_more_compute_units_than_the_profile():
    with pytest.warns(DeviceMismatchWarning, match="another SKU"):
        info = match_profile(nvidia("NVIDIA H100 80GB HBM3", (9, 0), 144, 81090 * MiB))
    assert info.live_compute_units == 144 and info.compute_units == 132  # grids never exceed either
    assert info.plan_profile is info.profile


@pytest.mark.parametrize("props, arch", [
    (nvidia("NVIDIA GeForce RTX 4090", (8, 9), 128, 24 * GiB), "sm_89"),
    (nvidia("NVIDIA B300 SXM6 AC", (10, 3), 148, 270 * GiB), "sm_103"),
    (amd("AMD Instinct MI250X", "gfx90a", 110, 64 * GiB), "gfx90a"),
])
def test_unknown_device_suggests_calibrate(props, arch):
    with pytest.raises(DeviceError) as exc:
        match_profile(props, index=1)
    msg = str(exc.value)
    assert isinstance(exc.value, RuntimeError)
    assert f"no hardware profile for arch {arch}" in msg
    assert "python -m tritonblas calibrate" in msg and "TRITONBLAS_PROFILE" in msg
    assert "cuda:1" in msg and props.name in msg


def test_forced_profile_is_checked_against_the_device():
    with pytest.warns(DeviceMismatchWarning, match="profile mi300x is for gfx942, the device is sm_90"):
        info = match_profile(H200, profile="mi300x", source="TRITONBLAS_PROFILE")
    assert info.profile.name == "mi300x" and info.how == "TRITONBLAS_PROFILE"
    assert info.compute_units == 132  # min(live, profile)
    assert quiet(H200, profile="h200").how == "profile="


def test_profile_dir_profile_wins_a_name_tie(tmp_path, monkeypatch):
    text = (Path(origami.__file__).resolve().parent.parent / "hwprofiles" / "h200.yaml").read_text()
    (tmp_path / "h200_calibrated.yaml").write_text(text.replace("name: h200", "name: h200_calibrated"))
    monkeypatch.setenv("ORIGAMI_PROFILE_DIR", str(tmp_path))
    assert quiet(H200).profile.name == "h200_calibrated"


# --- the cached wrapper -------------------------------------------------------------------------
@pytest.fixture
def fake_gpu(monkeypatch):
    """Make profile_for_device see fake devices: {index: props}; counts property queries."""
    devices: dict[int, SimpleNamespace] = {}
    calls: list[int] = []

    def props(index):
        calls.append(index)
        return devices[index]

    monkeypatch.setattr(_device, "_properties", props)
    return devices, calls


def test_wrapper_maps_and_caches_per_index(fake_gpu):
    devices, calls = fake_gpu
    devices.update({0: H200, 1: MI300X})
    a = profile_for_device(0)
    assert a.profile.name == "h200" and a.index == 0
    assert profile_for_device(0) is a and calls == [0]
    assert profile_for_device(1).profile.name == "mi300x" and calls == [0, 1]
    clear_device_cache()
    assert profile_for_device(0).profile.name == "h200" and calls == [0, 1, 0]


def test_wrapper_accepts_device_strings(fake_gpu):
    devices, _ = fake_gpu
    devices[1] = B200
    assert profile_for_device("cuda:1").profile.name == "b200"
    import torch

    assert profile_for_device(torch.device("cuda", 1)).index == 1


def test_env_override_read_at_call_time(fake_gpu, monkeypatch):
    devices, _ = fake_gpu
    devices[0] = H200
    assert profile_for_device(0).profile.name == "h200"
    monkeypatch.setenv("TRITONBLAS_PROFILE", "h100")  # set after import and after a first call
    with pytest.warns(DeviceMismatchWarning, match="TRITONBLAS_PROFILE forces h100"):
        info = profile_for_device(0)
    assert (info.profile.name, info.how) == ("h100", "TRITONBLAS_PROFILE")
    assert quiet_wrapper(0, profile="h200").profile.name == "h200"  # profile= beats the environment


def quiet_wrapper(device, **kw) -> DeviceInfo:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return profile_for_device(device, **kw)


def test_env_override_by_path_on_cpu(monkeypatch, tmp_path):
    f = tmp_path / "mine.yaml"
    f.write_text((Path(origami.__file__).resolve().parent.parent / "hwprofiles" / "mi355x.yaml").read_text())
    monkeypatch.setenv("TRITONBLAS_PROFILE", str(f))
    info = profile_for_device("cpu")
    assert (info.profile.name, info.index, info.how) == ("mi355x", None, "TRITONBLAS_PROFILE")
    assert info.compute_units == 256


def test_bad_env_profile_names_the_variable_value(monkeypatch):
    monkeypatch.setenv("TRITONBLAS_PROFILE", "h300")
    with pytest.raises(origami.ProfileError, match="h300: unknown profile"):
        profile_for_device("cpu")


@pytest.mark.parametrize("value", ["h300", "/nonexistent/profile.yaml", "not-yaml-file"])
def test_bad_env_profile_error_names_the_variable(monkeypatch, tmp_path, value, device):
    """A garbage $TRITONBLAS_PROFILE (unknown name, missing file, a file that is not a profile) is a
    ProfileError naming the variable, also from a call that never mentions a profile (on the
    kernels' device: with a GPU, CPU tensors run torch's matmul and read no profile)."""
    if value == "not-yaml-file":
        value = str(tmp_path / "notes.txt")
        (tmp_path / "notes.txt").write_text("just some text\n")
    monkeypatch.setenv("TRITONBLAS_PROFILE", value)
    with pytest.raises(origami.ProfileError, match=r"^\$TRITONBLAS_PROFILE="):
        profile_for_device("cpu")
    import torch
    import tritonblas
    with pytest.raises(origami.ProfileError, match=r"^\$TRITONBLAS_PROFILE="):
        tritonblas.matmul(torch.ones(2, 2, device=device), torch.ones(2, 2, device=device))


def test_cpu_without_a_profile_says_how_to_get_one():
    with pytest.raises(DeviceError, match="TRITONBLAS_PROFILE"):
        profile_for_device("cpu")


def test_strict_is_not_served_from_the_lenient_cache(fake_gpu):
    devices, _ = fake_gpu
    devices[0] = nvidia("NVIDIA H100 80GB HBM3 MIG 3g.40gb", (9, 0), 60, 40 * GiB)
    with pytest.warns(DeviceMismatchWarning):
        assert profile_for_device(0).compute_units == 60
    with pytest.raises(DeviceError):
        profile_for_device(0, strict=True)


def test_no_device_query_at_import(monkeypatch):
    """Executing the module (as a fresh copy, so the real one keeps its classes) queries nothing."""
    import importlib.util

    import torch

    calls = []
    for fn in ("get_device_properties", "current_device", "device_count", "is_available"):
        monkeypatch.setattr(torch.cuda, fn, lambda *a, _fn=fn, **k: calls.append(_fn))
    spec = importlib.util.spec_from_file_location("_device_import_probe", _device.__file__)
    probe = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, probe)  # dataclasses look their module up there
    spec.loader.exec_module(probe)
    assert calls == []

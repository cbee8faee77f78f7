"""Which hardware profile describes a device — the only place in tritonblas that queries a device.

Precedence (DESIGN.md §3): an explicit ``profile=`` argument, then ``$TRITONBLAS_PROFILE`` (a
profile name or a path to a YAML file, read at call time), then the live device's properties.

Mapping a device to a shipped profile (``match_profile``, pure: it takes a properties object, so
tests pass a ``SimpleNamespace``):

- The architecture narrows the candidates and is never guessed: AMD by the ``gcnArchName`` prefix
  (``gfx942:sramecc+:xnack-`` → ``gfx942``), NVIDIA by compute capability (``(9, 0)`` → ``sm_90``,
  ``(10, 0)`` → ``sm_100``). No candidate → :class:`DeviceError` suggesting ``tritonblas calibrate``.
- Then the device name: the profile whose ``device_names`` entry is the longest substring of it
  (case-insensitive) wins; on a tie a profile from ``$ORIGAMI_PROFILE_DIR`` beats a shipped one.
- Without a name match, AMD parts are told apart by CU count and memory size (MI300X 192 GB vs
  MI325X 256 GB) — a confident match when both fit one profile. Otherwise the nearest profile by
  CU count, memory and clock is taken with a warning. MI350X and MI355X share arch, CU count and
  memory: without their names only the peak engine clock (``clock_rate``, where the properties
  carry it) separates them; failing that, the first one (mi350x, the lower clock — conservative)
  is assumed, with a warning naming both. NVIDIA needs the name (H100 and H200 share arch and SM
  count); a nameless match is a warning.

A live device that differs from its profile — fewer SMs/CUs (a MIG slice, a CU mask, an AMD compute
partition), more of them, another memory size, another arch than a forced profile — gives one
:class:`DeviceMismatchWarning` listing every difference, or a :class:`DeviceError` with
``strict=True``. :attr:`DeviceInfo.compute_units` is the live count capped by the profile's: size
persistent and Stream-K grids with it, never with the profile's count.

Nothing is queried at import. ``profile_for_device`` caches per device index (and strictness and
override); ``clear_device_cache`` empties the cache.
"""

from __future__ import annotations

import os
import threading
import warnings
from dataclasses import dataclass
from typing import Any, Iterable

from origami.hardware import HardwareProfile, ProfileError, list_profiles, load_profile
from tritonblas.log import DeviceMismatchWarning, logger

__all__ = [
    "DeviceInfo", "DeviceError", "DeviceMismatchWarning", "ENV_PROFILE",
    "match_profile", "profile_for_device", "clear_device_cache",
    "DeviceProps", "read_properties", "device_properties", "override_key", "CACHE",
]

from tritonblas.settings import ENV_PROFILE, ENV_PROFILE_DIR  # noqa: E402
_CALIBRATE = ("run `python -m tritonblas calibrate` on this device to write a profile, then set "
              f"{ENV_PROFILE}=<path to it> (or pass profile=...)")
_MEMORY_TOLERANCE = 0.15  # relative; usable memory is a few percent below the nominal size


class DeviceError(RuntimeError):
    """No profile describes the device, or (``strict=True``) the chosen one does not match it."""


@dataclass(frozen=True, slots=True)
class DeviceInfo:
    """A device and the profile that describes it.

    ``how`` says where the profile came from: ``"name"``, ``"arch+cus+memory"`` or ``"nearest"``
    (mapped from the device's properties), ``"profile="`` or ``"TRITONBLAS_PROFILE"`` (forced).
    ``mismatches`` lists every way the live device differs from the profile (already warned about).
    """

    profile: HardwareProfile
    live_compute_units: int
    index: int | None
    name: str = ""
    how: str = "name"
    mismatches: tuple[str, ...] = ()
    capped: HardwareProfile | None = None

    @property
    def compute_units(self) -> int:
        """SMs/CUs a launch may rely on: the live count, never more than the profile's."""
        return min(self.live_compute_units, self.profile.compute_units)

    @property
    def plan_profile(self) -> HardwareProfile:
        """The profile the dispatcher plans with: ``profile``, or, on a device with fewer compute
        units than it (a MIG slice, a CU mask), its copy for the live count
        (:meth:`HardwareProfile.with_compute_units`), so that persistent and Stream-K grids and the
        model's waves are sized for the units that exist."""
        return self.capped if self.capped is not None else self.profile


def _capped(hw: HardwareProfile, live: int, desc: str) -> HardwareProfile | None:
    if live >= hw.compute_units or live < hw.chiplets:
        return None
    return hw.with_compute_units(live, f"live device {desc}: {live} of the profile's {hw.compute_units} "
                                       "compute units (tritonblas, at run time)")


# ---------------------------------------------------------------------------------------------
# The pure mapping
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class DeviceProps:
    """What the mapping reads of a device (:func:`read_properties`)."""

    name: str
    vendor: str
    arch: str
    compute_units: int
    memory_bytes: int
    clock_mhz: float | None

    def describe(self, index: int | None) -> str:
        where = f"cuda:{index} " if index is not None else ""
        return (f"{where}{self.name or '(unnamed device)'} ({self.arch}, {self.compute_units} "
                f"{'CUs' if self.vendor == 'amd' else 'SMs'}, {self.memory_bytes / 2**30:.0f} GiB)")


def read_properties(props: Any) -> DeviceProps:
    """Normalise a ``torch.cuda.get_device_properties`` result (or a fake with the same fields)."""
    name = str(getattr(props, "name", "") or "")
    gcn = str(getattr(props, "gcnArchName", "") or "")
    if gcn.startswith("gfx"):
        vendor, arch = "amd", gcn.split(":")[0]
    else:
        vendor, arch = "nvidia", f"sm_{int(props.major)}{int(props.minor)}"
    clock = getattr(props, "clock_rate", None)  # kHz, as cudaDeviceProp.clockRate / hipDeviceProp
    return DeviceProps(name=name, vendor=vendor, arch=arch, compute_units=int(props.multi_processor_count),
                  memory_bytes=int(getattr(props, "total_memory", 0) or 0),
                  clock_mhz=float(clock) / 1000.0 if clock else None)


def _memory_off(p: HardwareProfile, dev: DeviceProps) -> float:
    hbm = p.memory["hbm_bytes"]
    return abs(dev.memory_bytes - hbm) / hbm if dev.memory_bytes else 0.0


def _choose(cands: list[HardwareProfile], dev: DeviceProps) -> tuple[HardwareProfile, str, list[str]]:
    """Pick one profile of the device's arch; returns (profile, how, notes that deserve a warning)."""
    scores = [p.name_match(dev.name) for p in cands]
    best = max(scores)
    if best > 0:  # the last of the best: ORIGAMI_PROFILE_DIR profiles come after the shipped ones
        return [p for p, s in zip(cands, scores) if s == best][-1], "name", []

    fits = [p for p in cands
            if p.compute_units == dev.compute_units and _memory_off(p, dev) <= _MEMORY_TOLERANCE]
    if dev.vendor == "amd" and len(fits) == 1:
        return fits[0], "arch+cus+memory", []

    def distance(p: HardwareProfile) -> tuple:
        clock_off = (abs(p.compute["boost_clock_mhz"] - dev.clock_mhz) if dev.clock_mhz else 0.0)
        return (p.compute_units != dev.compute_units, round(_memory_off(p, dev), 2), clock_off)

    ranked = sorted(cands, key=distance)  # stable: list order breaks exact ties
    chosen = ranked[0]
    tied = [p.name for p in ranked if distance(p) == distance(chosen)]
    what = f"device name {dev.name!r} matches no profile's device_names" if dev.name else "the device has no name"
    note = f"{what}; chose {chosen.name} as the nearest {dev.arch} profile by CU count, memory and clock"
    if len(tied) > 1:
        note += (f" — ambiguous between {', '.join(tied)} (same arch, CU count and memory); "
                 f"set {ENV_PROFILE}=<the right one>")
    return chosen, "nearest", [note]


def _differences(p: HardwareProfile, dev: DeviceProps) -> list[str]:
    """How the live device differs from profile ``p`` (empty when it matches)."""
    out = []
    if p.vendor != dev.vendor or p.arch != dev.arch:
        out.append(f"profile {p.name} is for {p.arch}, the device is {dev.arch}")
    live, want = dev.compute_units, p.compute_units
    if live < want:
        why = "a MIG slice, a CU mask or a smaller SKU?"
        if p.is_amd:
            why = f"a CU mask, a compute partition or a smaller SKU? the profile's {p.chiplets} chiplets may not apply"
        out.append(f"the device has {live} of the profile's {want} compute units ({why}); "
                   f"launch grids are limited to {live}")
    elif live > want:
        out.append(f"the device has {live} compute units, the profile {p.name} only {want} (another SKU?)")
    off = _memory_off(p, dev)
    if off > _MEMORY_TOLERANCE:
        out.append(f"the device has {dev.memory_bytes / 2**30:.0f} GiB of memory, the profile "
                   f"{p.memory['hbm_bytes'] / 2**30:.0f} GiB")
    return out


def match_profile(props: Any, *, index: int | None = None, strict: bool = False,
                  profile: "str | os.PathLike[str] | HardwareProfile | None" = None,
                  source: str = "profile=",
                  profiles: Iterable[HardwareProfile] | None = None) -> DeviceInfo:
    """The profile for a device given its properties; no device query, no environment read.

    ``props`` needs ``name``, ``multi_processor_count``, ``total_memory`` and either
    ``gcnArchName`` (AMD) or ``major``/``minor`` (NVIDIA); ``clock_rate`` (kHz) is optional.
    ``profile`` forces a profile (``source`` names where it came from, for messages); otherwise one
    is chosen from ``profiles`` (default: every profile ``origami.list_profiles()`` names).
    Mismatches warn (:class:`DeviceMismatchWarning`), or raise :class:`DeviceError` when strict.
    """
    dev = read_properties(props)
    desc = dev.describe(index)
    notes: list[str] = []
    if profile is not None:
        hw, how = _load_forced(profile, source), source
        if dev.name and hw.device_names and hw.name_match(dev.name) == 0:
            notes.append(f"{source} forces {hw.name}, whose device_names {list(hw.device_names)} "
                         f"do not match {dev.name!r}")
    else:
        pool = list(profiles) if profiles is not None else [load_profile(n) for n in list_profiles()]
        cands = [p for p in pool if p.arch == dev.arch]
        if not cands:
            known = ", ".join(f"{p.name} ({p.arch})" for p in pool)
            raise DeviceError(f"{desc}: no hardware profile for arch {dev.arch} (profiles: {known}); "
                              f"{_CALIBRATE}")
        hw, how, notes = _choose(cands, dev)
    notes += _differences(hw, dev)
    if notes:
        msg = f"{desc} with profile {hw.name}: " + "; ".join(notes)
        if strict:
            raise DeviceError(f"{msg}. Pick the right profile with {ENV_PROFILE} or profile=, or {_CALIBRATE}")
        warnings.warn(f"{msg} (strict=True makes this an error)", DeviceMismatchWarning, stacklevel=3)
    logger.info("device %s -> profile %s (by %s)", desc, hw.name, how)
    return DeviceInfo(profile=hw, live_compute_units=dev.compute_units, index=index, name=dev.name,
                      how=how, mismatches=tuple(notes), capped=_capped(hw, dev.compute_units, desc))


# ---------------------------------------------------------------------------------------------
# The device query (thin, cached)
# ---------------------------------------------------------------------------------------------
# (index, strict, override_key(forced profile), $ORIGAMI_PROFILE_DIR) → DeviceInfo. The dispatcher's
# warm entries check that their DeviceInfo is still the one here (cleared by clear_device_cache).
CACHE: dict[tuple, DeviceInfo] = {}
_LOCK = threading.Lock()


def _device_index(device: Any) -> int | None:
    """CUDA/HIP device index of ``device`` (None for CPU and meta: no device to query)."""
    if isinstance(device, bool):
        raise TypeError(f"device: expected an int, str or torch.device, got {device!r}")
    if isinstance(device, int):
        if device < 0:
            raise ValueError(f"device: index must be >= 0, got {device}")
        return device
    import torch

    if device is None:
        return torch.cuda.current_device() if torch.cuda.is_available() else None
    dev = torch.device(device)
    if dev.type in ("cpu", "meta"):
        return None
    if dev.type != "cuda":
        raise DeviceError(f"device {dev}: tritonblas runs on CUDA/ROCm GPUs, or on CPU under TRITON_INTERPRET=1")
    return dev.index if dev.index is not None else torch.cuda.current_device()


def _properties(index: int) -> Any:
    import torch

    return torch.cuda.get_device_properties(index)


def device_properties(index: int) -> Any:
    """``torch.cuda.get_device_properties(index)``: the one device query (tests replace
    ``_properties`` with fakes, which this and :func:`profile_for_device` both go through)."""
    return _properties(index)


def override_key(profile: Any) -> Any:
    """A forced profile (a name, a path or a loaded profile) as a hashable cache-key part."""
    if profile is None or isinstance(profile, HardwareProfile):
        return profile
    return os.fspath(profile)


def _load_forced(profile: Any, source: str) -> HardwareProfile:
    """``load_profile(profile)``; a ProfileError for a profile forced by ``$TRITONBLAS_PROFILE`` is
    prefixed with the variable and its value, so the message points at the environment."""
    try:
        return load_profile(profile)
    except ProfileError as e:
        if source != ENV_PROFILE:
            raise
        raise ProfileError(f"${ENV_PROFILE}={profile!r}: {e}") from e


def profile_for_device(device: Any = None, *, profile: "str | os.PathLike[str] | HardwareProfile | None" = None,
                       strict: bool = False) -> DeviceInfo:
    """The profile for ``device`` (an index, ``"cuda:1"``, a ``torch.device``, or None = current).

    ``profile=`` (a name, a path or a loaded profile) beats ``$TRITONBLAS_PROFILE``, which beats the
    device mapping; a forced profile is still checked against the live device. A CPU or meta device
    has nothing to map, so it needs one of the two (kernels then run under TRITON_INTERPRET=1).
    """
    env = os.environ.get(ENV_PROFILE) or None
    forced, source = (profile, "profile=") if profile is not None else (env, ENV_PROFILE)
    index = _device_index(device)
    key = (index, strict, override_key(forced), os.environ.get(ENV_PROFILE_DIR))
    with _LOCK:
        hit = CACHE.get(key)
    if hit is not None:
        return hit
    if index is None:
        if forced is None:
            raise DeviceError(f"no GPU to map to a hardware profile (device {device!r}): set {ENV_PROFILE} "
                              "to a profile name or path, or pass profile= (e.g. 'h200'), to run on CPU "
                              "under TRITON_INTERPRET=1")
        hw = _load_forced(forced, source)
        info = DeviceInfo(profile=hw, live_compute_units=hw.compute_units, index=None, name="cpu", how=source)
    else:
        info = match_profile(_properties(index), index=index, strict=strict, profile=forced, source=source)
    with _LOCK:
        CACHE[key] = info
    return info


# GPU index -> whether it maps to a profile with neither profile= nor $TRITONBLAS_PROFILE given
# (tritonblas.dispatch.has_profile's answers, kept where the mapping they depend on is kept)
HAS_PROFILE: dict[int, bool] = {}


def clear_device_cache() -> None:
    """Forget every device → profile mapping (after changing the environment or the profile files)."""
    with _LOCK:
        CACHE.clear()
        HAS_PROFILE.clear()

"""Hardware profiles: load, validate and list the YAML files in ``hwprofiles/``; render a raw
profile to YAML text (``render_profile``, what ``tritonblas calibrate`` writes) and check it.

A profile is data, never code: every number carries its unit in its key and a source in the
``sources`` table. Validation is strict — an unknown, missing, duplicated, mistyped or implausible
field raises one :class:`ProfileError` naming the file and every bad dotted path. Nothing is
silently defaulted. The loaded :class:`HardwareProfile` is frozen and hashable by content.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import threading
import weakref
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping, Sequence

from origami._yaml import YamlError, dump_yaml, float_text, load_yaml

__all__ = ["HardwareProfile", "ProfileError", "load_profile", "list_profiles", "SCHEMA", "MODEL_PARAMS",
           "OPTIONAL_MODEL_PARAMS",
           "render_profile", "check_profile_text", "as_written", "profile_by_hash"]

SCHEMA_VERSION = 1
RATE_KEYS = ("fp32", "tf32", "fp16", "bf16", "fp8", "int8")
SHIPPED = ("mi300x", "mi325x", "mi350x", "mi355x", "h100", "h200", "b200")


class ProfileError(ValueError):
    """A hardware profile is unreadable or invalid; the message names the file and field path(s)."""


# ---------------------------------------------------------------------------------------------
# Schema. Each leaf is (type, lo, hi, unit/doc). lo/hi bound plausible values (catch 10^3 unit slips).
# ---------------------------------------------------------------------------------------------
_INT, _FLOAT, _STR, _LIST_STR, _SHAPE = "int", "number", "string", "list of strings", "[m, n, k] list"

_TB = 1e12
SCHEMA: dict[str, Any] = {
    "schema_version": (_INT, 1, 1, "schema version (1)"),
    "name": (_STR, None, None, "profile name, e.g. h200"),
    "vendor": (_STR, ("amd", "nvidia"), None, "amd | nvidia"),
    "arch": (_STR, ("gfx942", "gfx950", "sm_90", "sm_100"), None, "architecture id, the device lookup key"),
    "device_names": (_LIST_STR, None, None, "substrings of the device name reported by the driver"),
    "compute": {
        "compute_units": (_INT, 1, 1024, "SMs (NVIDIA) or CUs (AMD)"),
        "chiplets": (_INT, 1, 16, "XCDs on AMD, dies on B200, 1 on monolithic parts"),
        "dispatch": (_STR, ("round_robin", "linear"), None,
                     "round_robin: program p runs on chiplet p mod chiplets; linear: no chiplet affinity"),
        "boost_clock_mhz": (_FLOAT, 100, 5000, "datasheet peak engine clock"),
        "sustained_clock_mhz": (_FLOAT, 100, 5000, "clock under dense matrix load (what the model uses)"),
        "warp_size": (_INT, (32, 64), None, "threads per warp/wavefront"),
        "max_warps_per_cu": (_INT, 1, 256, "resident warps/waves per CU"),
        "max_blocks_per_cu": (_INT, 1, 64, "resident programs per CU"),
        "smem_bytes_per_cu": (_INT, 16 * 1024, 1024 * 1024, "shared memory / LDS per CU"),
        "smem_bytes_per_block": (_INT, 16 * 1024, 1024 * 1024, "max shared memory / LDS one program may use"),
        "registers_per_cu": (_INT, 16 * 1024, 1024 * 1024, "32-bit registers per CU"),
        "max_registers_per_thread": (_INT, 63, 1024, "architectural per-thread register limit"),
    },
    "memory": {
        "l2_bytes_per_chiplet": (_INT, 1 << 20, 1 << 30, "L2 capacity of one chiplet"),
        "l2_bytes_per_s": (_FLOAT, 0.1 * _TB, 50 * _TB, "aggregate L2 read bandwidth, all chiplets"),
        "llc_bytes": (_INT, 0, 1 << 31, "last-level cache (Infinity Cache/MALL); 0 = none"),
        "llc_bytes_per_s": (_FLOAT, 0.0, 50 * _TB, "LLC bandwidth; 0 when llc_bytes is 0"),
        "hbm_bytes": (_INT, 1 << 30, 1 << 40, "device memory capacity"),
        "hbm_bytes_per_s": (_FLOAT, 0.1 * _TB, 50 * _TB, "peak HBM bandwidth"),
    },
    "matrix": {
        "peak_flops": {k: (_FLOAT, 0.0, 1e17, f"dense {k} matrix peak at boost clock, FLOP/s; 0 = unsupported")
                       for k in RATE_KEYS},
        "instr_shape": {k: (_SHAPE, None, None, f"matrix instruction m,n,k for {k} inputs")
                        for k in RATE_KEYS},
    },
    "launch_overhead_ns": (_FLOAT, 100, 100_000, "host launch + kernel start latency"),
    "model": {},  # filled from MODEL_PARAMS below
    "sources": "sources",
}

# Efficiency parameters of the model: (lo, hi, meaning). They are fitted by `tritonblas calibrate`.
MODEL_PARAMS: dict[str, tuple[float, float, str]] = {
    "mma_efficiency": (0.05, 1.0, "achieved fraction of the sustained matrix peak in a large tile's main loop"),
    "small_tile_efficiency": (0.05, 1.0, "efficiency of a 64x64 tile relative to a 256x128 one (interpolated by area)"),
    "streamk_efficiency": (0.05, 1.0, "main-loop efficiency of the Stream-K kernel relative to data-parallel"),
    "splitk_efficiency": (0.05, 1.0, "main-loop efficiency of the split-K kernel relative to data-parallel; 1: the "
                                     "same, as profiles before it assumed"),
    "streamk_split_efficiency": (0.05, 1.0, "extra main-loop efficiency of a Stream-K grid with no data-parallel "
                                            "phase (fewer tiles than programs: every tile split), x streamk_efficiency"),
    "streamk_unaligned_penalty": (1.0, 10.0, "extra slowdown of the Stream-K kernel's loads of unaligned rows (no TMA, "
                                             "masked pointer loads), x unaligned_penalty; 1: the data-parallel "
                                             "kernel's loss"),
    "fp8_promote_efficiency": (0.05, 1.0, "NVIDIA fp8 main-loop rate with fp32 promotion of the accumulator "
                                          "(the default, fp8_fast_accum off: every tritonblas.plan.fp8_promote_k of K; "
                                          "the shipped values were fitted on sweeps promoting every 32 K), as a fraction of the profile's fp8 peak "
                                          "(measured with fast accumulation)"),
    "fp8_promoted_spill_limit": (0.0, 65536.0, "the space leaves out the fp8 configs (NVIDIA sm_90, rows at least 4 "
                                               "bytes aligned) whose kernel, promoting the wgmma sum into fp32, the "
                                               "sm_90 compile census says spills at least this many bytes per thread "
                                               "(origami.space.promoted_spill_bytes); 0: no such rule"),
    "fp8_single_warpgroup_efficiency": (0.05, 1.0, "extra NVIDIA fp8 main-loop efficiency of a 4-warp program (one "
                                                   "warpgroup: its promotion adds cannot overlap another warpgroup's "
                                                   "MMAs), x fp8_promote_efficiency"),
    "k_iter_overhead_ns": (0.0, 1000.0, "fixed cost per K-iteration of one program (address math, barriers)"),
    "tile_overhead_ns": (0.0, 100_000.0, "fixed cost per output tile (prologue fill + epilogue issue)"),
    "hbm_efficiency": (0.05, 1.0, "achievable fraction of peak HBM bandwidth"),
    "l2_efficiency": (0.05, 1.0, "achievable fraction of peak L2 bandwidth"),
    "llc_efficiency": (0.0, 1.0, "achievable fraction of LLC bandwidth (0 when no LLC)"),
    "unaligned_penalty": (1.0, 20.0, "slowdown of loads whose rows are not 16-byte aligned (no TMA/vector loads)"),
    "fixup_ns": (0.0, 100_000.0, "cost of one Stream-K/split-K tile fix-up beyond its bytes (atomic + sync)"),
    "mem_latency_ns": (50.0, 10_000.0, "load latency one pipeline stage must hide (num_stages - 1 loads in flight)"),
    "hbm_latency_ns": (0.0, 10_000.0, "load latency of a K-step's bytes that miss the L2 (read from HBM), where it "
                                      "exceeds mem_latency_ns (which then serves L2 hits): a K-step's latency is "
                                      "mem_latency_ns + its miss share x (this - mem_latency_ns); 0: one latency "
                                      "for every load, as profiles before it were fitted"),
    "overlap_loss": (0.0, 1.0, "fraction of the smaller of compute and memory time per K-step not hidden behind the larger"),
    "staged_spill_rule": (0.0, 1.0, "1: the space leaves out configs whose register-staged kernels spill "
                                    "(origami.space.STAGED_PRESSURE_LIMITS, from an sm_90 compile census); "
                                    "0: the profile has not been validated with it"),
    "staged_slowdown_limit": (0.0, 64.0, "the space leaves out register-staged configs (rows under 4 bytes aligned, "
                                         "NVIDIA sm_90, 2-byte operands) whose spilling kernel ran at least this many "
                                         "times its prediction against clean configs on training rows "
                                         "(origami.space.measured_spill_slowdown); 0: no such rule"),
    "fp8_spill_traffic_limit": (0.0, 1024.0, "the space leaves out register-staged fp8 configs (rows under 4 bytes "
                                             "aligned, NVIDIA sm_90, 1-byte operands) whose kernel the compile census "
                                             "says spills at least this many bytes per multiply-add of its K-step "
                                             "(origami.space.census_spill_traffic); 0: no such rule"),
    "splitk_range_reads": (0.0, 1.0, "share of a split-K wave's other K ranges whose operand bytes the memory terms "
                                     "count as distinct reads (the ranges are disjoint); 0: one range, as "
                                     "profiles before it were fitted"),
    "streamk_range_reads": (0.0, 1.0, "the same for Stream-K's streamed phase, whose programs read about grid / "
                                      "streamed tiles disjoint K ranges of each tile at once; 0: one range, as "
                                      "profiles before it were fitted"),
    "staged_spill_penalty": (0.0, 3.0, "extra main-loop time, as a share of it, of a kernel that spills registers under "
                                       "register-staged loads (rows under 4 bytes aligned, NVIDIA: "
                                       "origami.space.staged_spills, from an sm_90 compile census); 0: not modelled"),
    "splitk_fixup_read_efficiency": (0.01, 1.0, "rate at which a split-K tile's last program reads the other "
                                                "splits' fp32 partials, as a share of its SM's part of the L2 "
                                                "bandwidth (one program alone: bounded by its loads in flight, "
                                                "not by the L2); 1: that whole share, as profiles before it assumed"),
    "mn_major_tile_cost": (0.0, 8.0, "extra wide-MMA work of a tf32/fp8 K-step that reads the N-major B (or M-major A) "
                                     "through registers (origami.kmajor.mma_reads_through_registers: Hopper wgmma, "
                                     "unstaged) from 16-byte-aligned rows (origami.select._mn_priced), as BLOCK_M + "
                                     "this x BLOCK_N rows instead of BLOCK_M; 0: not modelled"),
    "staged_load_exponent": (0.0, 4.0, "how much slower register-staged loads (rows under 4 bytes aligned, NVIDIA: "
                                       "origami.space.register_staged) run where an SM holds fewer than 8 warps: "
                                       "unaligned_penalty x (8 / warps) ** this; 0: not modelled (the penalty is flat)"),
    "narrow_load_exponent": (0.0, 4.0, "staged_load_exponent's counterpart for rows 4 or 8 bytes aligned (NVIDIA: "
                                       "cp.async copies of that width, no TMA): unaligned_penalty x (8 / warps) ** "
                                       "this where an SM holds fewer than 8 warps; 0: not modelled (flat)"),
    "ws_efficiency": (0.0, 2.0, "main-loop efficiency of the warp-specialised persistent kernel (kind 'ws': Hopper, "
                                "tritonblas.kernels.gluon_hopper) relative to the data-parallel kernel's; 0: the "
                                "profile has no such kernel and the model's space leaves it out"),
}
# Model parameters a profile may leave out (added after profiles were written): their value then.
# ws_efficiency 0 keeps every older profile's space, and so its rankings, as they were.
OPTIONAL_MODEL_PARAMS: dict[str, float] = {"ws_efficiency": 0.0, "streamk_unaligned_penalty": 1.0,
                                           "staged_spill_rule": 0.0, "staged_slowdown_limit": 0.0,
                                           "fp8_spill_traffic_limit": 0.0,
                                           "splitk_range_reads": 0.0, "streamk_range_reads": 0.0,
                                           "hbm_latency_ns": 0.0,
                                           "staged_spill_penalty": 0.0, "splitk_fixup_read_efficiency": 1.0,
                                           "mn_major_tile_cost": 0.0, "staged_load_exponent": 0.0, "narrow_load_exponent": 0.0,
                                           "splitk_efficiency": 1.0, "fp8_promoted_spill_limit": 0.0}
SCHEMA["model"] = {k: (_FLOAT, lo, hi, doc) for k, (lo, hi, doc) in MODEL_PARAMS.items()}


# ---------------------------------------------------------------------------------------------
# Loaded profile
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True, weakref_slot=True)
class HardwareProfile:
    """A validated, immutable hardware profile. Sections are read-only mappings."""

    name: str
    vendor: str
    arch: str
    device_names: tuple[str, ...]
    compute: Mapping[str, Any]
    memory: Mapping[str, Any]
    matrix_peak_flops: Mapping[str, float]
    matrix_instr_shape: Mapping[str, tuple[int, int, int]]
    launch_overhead_ns: float
    model: Mapping[str, float]
    sources: Mapping[str, str]
    content_hash: str
    path: str

    def __post_init__(self) -> None:
        # A profile made outside _build (dataclasses.replace, a direct call) kept the content_hash it
        # was handed: equal to, and found by profile_by_hash as, a profile with other contents. Its hash
        # is recomputed from its fields; every profile is then registered under its hash. Its fields are
        # checked as a file's are (a replaced compute_units of 0 reached the scorer: ZeroDivisionError).
        if not getattr(_BUILDING, "on", False):
            where = f"{self.path} (replaced)"
            try:
                raw = _to_raw(self)
            except (TypeError, ValueError, AttributeError) as e:
                raise ProfileError(f"{where}: not a profile's fields: {e}") from None
            # the checked, read-only sections replace the caller's (a dict it keeps could change under the hash)
            fields, content_hash = _checked(raw, where)
            for name, value in fields.items():
                object.__setattr__(self, name, value)
            object.__setattr__(self, "content_hash", content_hash)
        _remember(self)

    def __hash__(self) -> int:
        return hash(self.content_hash)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, HardwareProfile) and other.content_hash == self.content_hash

    # Convenience accessors (vendor-neutral names used by the model).
    @property
    def compute_units(self) -> int:
        return self.compute["compute_units"]

    @property
    def chiplets(self) -> int:
        return self.compute["chiplets"]

    @property
    def is_amd(self) -> bool:
        return self.vendor == "amd"

    def name_match(self, device_name: str) -> int:
        """How well the driver's ``device_name`` names this profile's part: the length of the longest of
        ``device_names`` it contains (case-insensitive), 0 when none does. The one rule by which the
        dispatcher maps a device to a profile (the longest match wins: "H200 NVL" over "H200") and the
        sweep scripts refuse timings of a foreign GPU."""
        lname = device_name.lower()
        return max((len(s) for s in self.device_names if s.lower() in lname), default=0)

    def rate_key(self, dtype) -> "str | None":
        """The ``matrix.peak_flops`` key of the rate this GPU's kernels run input type ``dtype`` (an
        ``origami.problem.DType``) at; None when its compiler takes no such operand. The fp8 encodings by
        architecture, as Triton 3.6 compiles ``tl.dot`` (sm_90 and gfx942/gfx950 builds on a CPU, 2026-12-05):

        - gfx942 (MI300X/MI325X): the fnuz encodings run on fp8 MFMA (``v_mfma_f32_32x32x16_fp8_fp8``); OCP
          e4m3fn/e5m2 are upcast to fp16 (``v_mfma_f32_32x32x8_f16``): fp16's rate;
        - gfx950 (MI350X/MI355X): OCP runs on fp8 MFMA (``v_mfma_f32_32x32x64_f8f6f4``); fnuz is upcast to fp16
          (Triton warns);
        - NVIDIA: OCP only; fnuz does not compile ("type fp8e4b8 not supported in this architecture").
        """
        key = dtype.rate_key
        if key != "fp8":
            return key
        if dtype.fnuz:
            return "fp8" if self.arch == "gfx942" else "fp16" if self.is_amd else None
        return "fp16" if self.arch == "gfx942" else "fp8"

    def matrix_rate(self, dtype) -> float:
        """``matrix.peak_flops`` of :meth:`rate_key` (FLOP/s at the boost clock); 0.0 when the kernels take no
        such operand here."""
        key = self.rate_key(dtype)
        return 0.0 if key is None else self.matrix_peak_flops.get(key, 0.0)

    def sustained_peak_flops(self, rate_key: str) -> float:
        """Matrix peak scaled from the boost clock to the sustained clock under dense load."""
        c = self.compute
        return self.matrix_peak_flops[rate_key] * c["sustained_clock_mhz"] / c["boost_clock_mhz"]

    def replace_model(self, **params: float) -> "HardwareProfile":
        """A copy with some model parameters replaced (validated); used by calibration."""
        raw = json.loads(self._raw_json())
        raw["model"].update(params)
        return _build(raw, f"{self.path} (model override)")

    def with_compute_units(self, units: int, why: str) -> "HardwareProfile":
        """A copy for a device that exposes only ``units`` of the compute units (a MIG slice, a CU
        mask): ``compute_units`` = ``units`` rounded down to a multiple of the chiplet count (so the
        copy validates; never more than the device has), the matrix peaks scaled by the same
        fraction, everything per-CU and the memory system unchanged. ``why`` becomes the source."""
        units = int(units) - int(units) % self.chiplets
        if not 0 < units <= self.compute_units:
            raise ValueError(f"with_compute_units: {units} compute units for {self.name} "
                             f"({self.compute_units}, {self.chiplets} chiplets)")
        raw = json.loads(self._raw_json())
        frac = units / self.compute_units
        raw["compute"]["compute_units"] = units
        raw["matrix"]["peak_flops"] = {k: v * frac for k, v in raw["matrix"]["peak_flops"].items()}
        raw["sources"]["compute.compute_units"] = why
        return _build(raw, f"{self.path} ({units} of {self.compute_units} compute units)")

    def _raw_json(self) -> str:
        return json.dumps(_to_raw(self), sort_keys=True)

    def to_yaml_dict(self) -> dict:
        return _to_raw(self)


def _to_raw(p: HardwareProfile) -> dict:
    return {
        "schema_version": SCHEMA_VERSION, "name": p.name, "vendor": p.vendor, "arch": p.arch,
        "device_names": list(p.device_names), "compute": dict(p.compute), "memory": dict(p.memory),
        "matrix": {"peak_flops": dict(p.matrix_peak_flops),
                   "instr_shape": {k: list(v) for k, v in p.matrix_instr_shape.items()}},
        "launch_overhead_ns": p.launch_overhead_ns,
        # an optional parameter at its default is left out, as a profile written before it leaves it
        "model": {k: v for k, v in p.model.items() if OPTIONAL_MODEL_PARAMS.get(k, None) != v},
        "sources": dict(p.sources),
    }


def _parse_yaml(text: str, where: str) -> Any:
    """The shared safe reader (``origami._yaml``: no anchors/aliases, no duplicate keys)."""
    try:
        return load_yaml(text, where)
    except YamlError as e:
        raise ProfileError(str(e)) from None


# ---------------------------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------------------------
def _check_leaf(spec: tuple, value: Any, path: str, errors: list[str]) -> Any:
    kind, lo, hi, doc = spec
    if kind == _STR:
        if not isinstance(value, str) or not value:
            errors.append(f"{path}: expected a non-empty string ({doc}), got {value!r}")
            return value
        if isinstance(lo, tuple) and value not in lo:
            errors.append(f"{path}: expected one of {', '.join(lo)}, got {value!r}")
        return value
    if kind == _LIST_STR:
        if not isinstance(value, list) or not value or not all(isinstance(v, str) and v for v in value):
            errors.append(f"{path}: expected a non-empty list of strings ({doc}), got {value!r}")
            return value
        return tuple(value)
    if kind == _SHAPE:
        if (not isinstance(value, list) or len(value) != 3
                or not all(isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= 256 for v in value)):
            errors.append(f"{path}: expected [m, n, k], three ints in 1..256 ({doc}), got {value!r}")
            return value
        return tuple(value)
    # numbers
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        hint = " (write numbers unquoted, with a decimal point and signed exponent, e.g. 4.8e+12)" \
            if isinstance(value, str) else ""
        errors.append(f"{path}: expected a {kind} ({doc}), got {type(value).__name__} {value!r}{hint}")
        return value
    if kind == _INT and not isinstance(value, int):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            errors.append(f"{path}: expected an integer ({doc}), got {value!r}")
            return value
    if isinstance(value, float) and not math.isfinite(value):
        errors.append(f"{path}: must be a finite number, got {value!r}")
        return value
    if isinstance(lo, tuple):
        if value not in lo:
            errors.append(f"{path}: expected one of {lo}, got {value!r}")
    else:
        if lo is not None and value < lo:
            errors.append(f"{path}: must be >= {lo:g} ({doc}), got {value!r}"
                          + (" — must be > 0" if value <= 0 and lo > 0 else "")
                          + (" — check the units" if value > 0 else ""))
        if hi is not None and value > hi:
            errors.append(f"{path}: must be <= {hi:g} ({doc}), got {value!r} — check the units")
    return float(value) if kind == _FLOAT else value


def _check_section(spec: dict, data: Any, path: str, errors: list[str]) -> dict:
    where = path or "(top level)"
    if not isinstance(data, dict):
        errors.append(f"{where}: expected a mapping, got {type(data).__name__}")
        return {}
    out: dict[str, Any] = {}
    for key in data:
        if key not in spec:
            close = [k for k in spec if _similar(str(key), k)]
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            errors.append(f"{_join(path, str(key))}: unknown field{hint}; allowed: {', '.join(spec)}")
    for key, sub in spec.items():
        p = _join(path, key)
        if key not in data:
            if path == "model" and key in OPTIONAL_MODEL_PARAMS:
                out[key] = OPTIONAL_MODEL_PARAMS[key]
            else:
                errors.append(f"{p}: field required")
            continue
        if sub == "sources":
            out[key] = data[key]
        elif isinstance(sub, dict):
            out[key] = _check_section(sub, data[key], p, errors)
        else:
            out[key] = _check_leaf(sub, data[key], p, errors)
    return out


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _similar(a: str, b: str) -> bool:
    a, b = a.lower(), b.lower()
    return a != b and (a in b or b in a or (len(a) > 3 and a[:4] == b[:4]))


def _numeric_paths(spec: dict, prefix: str = "", numeric_only: bool = True) -> list[str]:
    """Dotted paths of the schema's numeric leaves (all leaves but `sources` with numeric_only=False)."""
    out = []
    for k, v in spec.items():
        p = _join(prefix, k)
        if isinstance(v, dict):
            out += _numeric_paths(v, p, numeric_only)
        elif isinstance(v, tuple) and k != "schema_version" and (
                not numeric_only or v[0] in (_INT, _FLOAT, _SHAPE)):
            out.append(p)
    return out


def _check_sources(sources: Any, errors: list[str]) -> dict:
    if not isinstance(sources, dict):
        errors.append("sources: expected a mapping of field path (or section prefix) -> source text")
        return {}
    all_paths = _numeric_paths(SCHEMA)
    known = _numeric_paths(SCHEMA, numeric_only=False)  # a source may also back a string field
    for key, text in sources.items():
        key = str(key)
        if not isinstance(text, str) or len(text.strip()) < 8:
            errors.append(f"sources.{key}: expected a source text (URL, paper, or 'measured on ...'), got {text!r}")
        if not any(p == key or p.startswith(key + ".") for p in known):
            errors.append(f"sources.{key}: names no field of the schema")
    for p in all_paths:
        parts = p.split(".")
        if not any(".".join(parts[:i]) in sources for i in range(1, len(parts) + 1)):
            errors.append(f"sources: no source for {p} (add '{p}' or a section prefix of it)")
    return dict(sources)


def _cross_checks(d: dict, errors: list[str]) -> None:
    c, m = d.get("compute", {}), d.get("memory", {})
    try:
        if c["compute_units"] % c["chiplets"]:
            errors.append(f"compute.chiplets: must divide compute.compute_units ({c['compute_units']}), "
                          f"got {c['chiplets']}")
        if c["sustained_clock_mhz"] > c["boost_clock_mhz"]:
            errors.append("compute.sustained_clock_mhz: must be <= compute.boost_clock_mhz")
        if c["smem_bytes_per_block"] > c["smem_bytes_per_cu"]:
            errors.append("compute.smem_bytes_per_block: must be <= compute.smem_bytes_per_cu")
        if (m["llc_bytes"] == 0) != (m["llc_bytes_per_s"] == 0):
            errors.append("memory.llc_bytes_per_s: must be 0 exactly when memory.llc_bytes is 0")
        if d.get("vendor") == "amd" and not str(d.get("arch", "")).startswith("gfx"):
            errors.append(f"arch: {d['arch']!r} is not an AMD arch (gfx...)")
        if d.get("vendor") == "nvidia" and not str(d.get("arch", "")).startswith("sm_"):
            errors.append(f"arch: {d['arch']!r} is not an NVIDIA arch (sm_...)")
        if d["matrix"]["peak_flops"]["bf16"] <= 0:
            errors.append("matrix.peak_flops.bf16: must be > 0 (every supported GPU has a bf16 matrix unit)")
    except (KeyError, TypeError):
        pass  # already reported as a missing/mistyped field


def _as_checked(raw: Any, checked: Any) -> Any:
    """``raw`` with each number replaced by its checked value (:func:`_check_leaf`'s int or float) where that
    is the same number: what the content hash reads."""
    if isinstance(raw, dict) and isinstance(checked, dict):
        return {k: _as_checked(v, checked[k]) if k in checked else v for k, v in raw.items()}
    if isinstance(raw, list) and isinstance(checked, (list, tuple)) and len(raw) == len(checked):
        return [_as_checked(a, b) for a, b in zip(raw, checked)]
    numbers = (int, float)
    if (isinstance(raw, numbers) and isinstance(checked, numbers) and not isinstance(raw, bool)
            and not isinstance(checked, bool) and raw == checked):
        return checked
    return raw


def _checked(raw: Any, where: str) -> tuple[dict, str]:
    """A profile's fields (read-only sections) and content hash from its raw form, or ProfileError naming every bad
    field (the schema's and the cross-checks'): the one check of a profile file (:func:`_build`) and of a profile
    made by ``dataclasses.replace`` or a direct call (``HardwareProfile.__post_init__``)."""
    errors: list[str] = []
    d = _check_section(SCHEMA, raw, "", errors)
    if isinstance(raw, dict) and "sources" in raw:
        d["sources"] = _check_sources(raw["sources"], errors)
    if not errors:
        _cross_checks(d, errors)
    if errors:
        body = "\n  ".join(f"{where}: {e}" for e in errors)
        raise ProfileError(f"{len(errors)} error(s) in profile {where}:\n  {body}" if len(errors) > 1 else body)
    # an optional model parameter at its default is hashed as absent (_to_raw writes it so): a
    # profile with it explicit and the same profile without it are one profile
    if any(raw["model"].get(k, v) == v and k in raw["model"] for k, v in OPTIONAL_MODEL_PARAMS.items()):
        raw = {**raw, "model": {k: v for k, v in raw["model"].items() if OPTIONAL_MODEL_PARAMS.get(k, None) != v}}
    # numbers hashed as checked (a float field written 2 is 2.0, an int field written 2.0 is 2): one profile
    # whichever way its numbers are spelled, so a rendered copy (render_profile) hashes as its source
    canonical = json.dumps(_as_checked(raw, d), sort_keys=True, default=str)
    ro = MappingProxyType
    fields = dict(name=d["name"], vendor=d["vendor"], arch=d["arch"], device_names=d["device_names"],
                  compute=ro(d["compute"]), memory=ro(d["memory"]), matrix_peak_flops=ro(d["matrix"]["peak_flops"]),
                  matrix_instr_shape=ro(d["matrix"]["instr_shape"]), launch_overhead_ns=d["launch_overhead_ns"],
                  model=ro(d["model"]), sources=ro(d["sources"]))
    return fields, _hash_text(canonical)


def _build(raw: Any, where: str) -> HardwareProfile:
    fields, content_hash = _checked(raw, where)
    _BUILDING.on = True  # checked here: HardwareProfile.__post_init__ keeps what it is given
    try:
        return HardwareProfile(**fields, content_hash=content_hash, path=where)
    finally:
        _BUILDING.on = False


def _hash_text(canonical: str) -> str:
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


# Every live profile, by content hash (HardwareProfile.__post_init__ registers it): what lets a
# profile *object* cross a traced boundary as its hash alone (tritonblas.ops under torch.compile,
# where storing it in a registry while tracing would be a side effect dynamo replays too late).
# Weak references, every live one under its hash (a copy of a profile's file has its hash too): a
# profile stays found as long as anything holds it (a count bound evicted profiles that
# _load_text's cache kept handing out, after enough calibration builds; one slot per hash lost a
# live profile when a newer copy with the same hash died).
_BY_HASH: "dict[str, list[weakref.ref]]" = {}
_BY_HASH_LOCK = threading.Lock()
_BY_HASH_SWEEP = [256]  # sweep hashes with no live profile when there are this many
_BUILDING = threading.local()


def _remember(hw: HardwareProfile) -> None:
    with _BY_HASH_LOCK:
        refs = [r for r in _BY_HASH.get(hw.content_hash, ()) if r() is not None]
        refs.append(weakref.ref(hw))
        _BY_HASH[hw.content_hash] = refs
        if len(_BY_HASH) >= _BY_HASH_SWEEP[0]:
            for h in [h for h, rs in _BY_HASH.items() if all(r() is None for r in rs)]:
                del _BY_HASH[h]
            _BY_HASH_SWEEP[0] = max(256, 2 * len(_BY_HASH))


def profile_by_hash(content_hash: str) -> "HardwareProfile | None":
    """The profile origami built (loaded, checked or calibrated) with this ``content_hash``, or None."""
    with _BY_HASH_LOCK:
        refs = list(_BY_HASH.get(content_hash, ()))
    for r in reversed(refs):  # the newest live one
        hw = r()
        if hw is not None:
            return hw
    return None


# ---------------------------------------------------------------------------------------------
# Public entry points
# ---------------------------------------------------------------------------------------------
ENV_PROFILE_DIR = "ORIGAMI_PROFILE_DIR"  # a directory of extra profiles, loadable by name


def _profile_dirs() -> list[Path]:
    dirs = []
    extra = os.environ.get(ENV_PROFILE_DIR)
    if extra:
        dirs.append(Path(extra))
    return dirs


def _shipped_text(name: str) -> str | None:
    f = resources.files("hwprofiles").joinpath(f"{name}.yaml")
    try:
        return f.read_text() if f.is_file() else None
    except (OSError, ValueError):  # a name the OS refuses (too long, a NUL byte): no such profile
        return None


def list_profiles() -> list[str]:
    """Shipped profile names (in their fixed order), then those in ``$ORIGAMI_PROFILE_DIR``."""
    names = [n for n in SHIPPED if _shipped_text(n) is not None]
    for d in _profile_dirs():
        if d.is_dir():
            names += sorted(p.stem for p in d.glob("*.yaml") if p.stem not in names)
    return names


def load_profile(name_or_path: "str | os.PathLike[str] | HardwareProfile") -> HardwareProfile:
    """Load and validate a profile by shipped name, ``$ORIGAMI_PROFILE_DIR`` name, or file path."""
    if isinstance(name_or_path, HardwareProfile):
        return name_or_path
    s = os.fspath(name_or_path) if isinstance(name_or_path, (str, os.PathLike)) else None
    if not isinstance(s, str):
        raise TypeError(f"profile: expected a profile name, a YAML path or a HardwareProfile, "
                        f"got {type(name_or_path).__name__} {name_or_path!r}")
    path = Path(s)
    if s.endswith((".yaml", ".yml")) or os.sep in s or _is_file(path):
        if not _is_file(path):
            raise ProfileError(f"{s}: no such profile file")
        return _load_text(_read(path, s), path.name)
    for d in _profile_dirs():
        f = d / f"{s}.yaml"
        if _is_file(f):
            return _load_text(_read(f, str(f)), f.name)
    text = _shipped_text(s)
    if text is None:
        raise ProfileError(f"{s}: unknown profile; available: {', '.join(list_profiles())} "
                           "(or pass a path to a YAML file; `python -m tritonblas calibrate` writes one)")
    return _load_text(text, f"{s}.yaml")


def _is_file(path: Path) -> bool:
    """``path.is_file()``, False where the OS refuses the name itself (too long: ENAMETOOLONG)."""
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False


def _read(path: Path, shown: str) -> str:
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise ProfileError(f"{shown}: cannot read: {e}") from None


@lru_cache(maxsize=64)
def _load_text(text: str, where: str) -> HardwareProfile:
    return _build(_parse_yaml(text, where), where)


# ---------------------------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------------------------
def render_profile(raw: Mapping[str, Any], header: Sequence[str] = ()) -> str:
    """Profile YAML text of ``raw`` (``HardwareProfile.to_yaml_dict()``'s shape): ``# header``
    lines, then the fields in ``raw``'s order. :func:`check_profile_text` reads it back."""
    head = "".join(f"# {line}\n" for line in header)
    return head + dump_yaml(dict(raw))


def check_profile_text(text: str, where: str = "profile.yaml") -> HardwareProfile:
    """Load ``text`` exactly as :func:`load_profile` will load it once written to the file ``where``
    (ProfileError naming that file's name)."""
    name = Path(where).name if where.endswith((".yaml", ".yml")) else "profile.yaml"
    return _load_text(text, name)


def as_written(v: float) -> float:
    """``v`` as :func:`render_profile` writes it (6 significant digits), read back."""
    return float(float_text(v))

"""``python -m tritonblas calibrate``: measure a GPU, write its hardware profile, fit the model to a
sweep. (``bench`` is ``tritonblas.bench``; the probe kernels are ``tritonblas.kernels.probes``.)

**calibrate** (DESIGN.md §4 and §5 "Calibration") starts from a base profile (``--base``; default:
the profile the device maps to, ``tritonblas._device``) and replaces what it can measure:

- device properties: SM count, memory size, L2 size, shared memory, registers, warps per SM;
- HBM bandwidth: a device-to-device copy (bytes read + written), ``do_bench`` median;
- L2 bandwidth and the capacity knee: one kernel reads a buffer of 2 MiB … 256 MiB over and over
  (``ld.global.cg``, so L1 does not serve it). Each size is timed at two read volumes and the
  bandwidth taken from the difference, which cancels launch cost and the cold first pass that
  ``do_bench``'s L2 flush causes. The plateau is the L2 bandwidth; the knee is the largest size
  whose bandwidth is still at least half-way between the plateau and the largest size's (HBM) level;
- matrix rates per dtype (bf16, fp16, tf32, fp8 e4m3 where the GPU has it): random 8192³ GEMMs
  through torch (``torch.matmul``; ``torch._scaled_mm`` for fp8) and through our kernels, the
  faster of the two;
- the SM clock: a clock64 spin kernel (``torch.cuda._sleep``) of known cycles against CUDA-event
  time, alone and while bf16 GEMMs run on another stream; reported beside the driver's clocks;
- launch overhead: wall time per launch of back-to-back launches of an empty Triton kernel.

How the matrix rates enter the profile, so that it stays one model: ``matrix.peak_flops`` is the
rate at ``boost_clock_mhz`` and the model computes with ``peak × sustained_clock / boost_clock``.
The measured bf16 rate sets ``sustained_clock_mhz`` (boost × measured / peak: the *effective* clock
of hwprofiles/README.md "Clocks"); every other measured dtype gets the peak that makes
``sustained_peak_flops(dtype)`` equal to its measured rate. So bf16's datasheet peak stays, and the
model's rate of every measured dtype is what this GPU sustained.

Each measured field's source reads ``measured <date> by tritonblas calibrate (<method>)``, then the
base profile's value and source (the datasheet figure stays on record). Unmeasured fields keep the
base value and source. A measurement outside the schema's plausible range is dropped with a
warning (the base value stays). The profile is rendered and validated by ``origami.hardware``
(``render_profile``, ``check_profile_text``: as ``origami.load_profile`` will read it) before it is
published, then written atomically (``tables.AtomicFile``), or printed without ``-o``.

``--fit SWEEP.csv`` (pure CPU; with ``--no-measure`` no GPU is needed) fits the model parameters
(``origami.fit.fit``) on training data only and validates them on the committed held-out split
(DESIGN.md §8, benchmarks/shapes/heldout/, drawn once by benchmarks/heldout_gen.py). A sweep row
whose shape (m, n, k, batch; any dtype) is in the split is refused with an error naming the file and
line (``tritonblas.heldout`` reads training and held-out sweeps). The guard scores
``origami.select()``'s real pick on the held-out sweeps (``benchmarks/data/<base>_heldout/*.csv``,
exhaustive) before and after the fit; a fit that lowers
the held-out geomean or p10, or whose picks are not all in the held-out data, is **rejected**
(``origami.fit.accepts``, the one acceptance rule). With
no held-out sweep recorded the report says so and the fit is rejected (it cannot be validated):
the profile keeps the base parameters and the exit code is still 0 (the measured fields are valid
either way; scripts read the report line ``fit: accepted`` / ``fit: rejected``).

Bad input, a missing GPU or an unreadable file raise :class:`CalibrationError` (the CLI prints one
line and exits 2) before anything is measured or written.
"""

from __future__ import annotations

import datetime as _dt
import math
import os
import shutil
import statistics
import subprocess
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from origami.fit import accepts, fit, heldout_score, selection_efficiency
from origami.hardware import (MODEL_PARAMS, OPTIONAL_MODEL_PARAMS, SCHEMA, HardwareProfile, ProfileError, as_written,
                              check_profile_text, load_profile, render_profile)
from tritonblas import _measure
from tritonblas._measure import CalibrationError
from tritonblas.heldout import (HELDOUT_SWEEP_COMMAND, ROOT, heldout_sweep_dir, read_heldout_sweeps, read_sweep_files,
                                sweep_names)
from tritonblas.log import logger
from tritonblas.settings import ENV_PROFILE_DIR

try:  # the model-only path (--no-measure --fit) needs neither triton nor torch
    import triton
except ImportError:  # pragma: no cover - triton is a dependency of the kernels extra
    triton = None

__all__ = [
    "CalibrationError", "Measurement", "Measurements", "FitOutcome", "STAMP",
    "measure", "build_profile", "write_profile", "fit_model", "apply_fit", "l2_knee", "calibrate_command",
]

STAMP = "by tritonblas calibrate"
MATRIX_SIZE = 8192
L2_SIZES_MIB = (2, 4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 48, 56, 64, 80, 96, 128, 192, 256)
L2_SIZES_MIB_QUICK = (2, 8, 16, 24, 32, 40, 48, 64, 96, 256)
_READ_BLOCK = 4096  # fp32 elements one program reads per step (16 KiB)
_READ_PROGRAMS_PER_SM = 4


# =============================================================================================
# Measurements → profile (pure; CPU)
# =============================================================================================
@dataclass(frozen=True, slots=True)
class Measurement:
    """One measured value. ``path`` is a dotted profile field (``memory.hbm_bytes_per_s``); for
    ``matrix.peak_flops.<key>`` the value is the measured *sustained* rate (FLOP/s), which
    :func:`build_profile` converts (module docstring)."""

    path: str
    value: float
    method: str
    detail: str = ""


@dataclass(frozen=True, slots=True)
class Measurements:
    """What :func:`measure` found on one device: field values, matrix rates, and report-only notes."""

    device: str
    date: str
    values: tuple[Measurement, ...] = ()
    rates: tuple[Measurement, ...] = ()
    clock_detail: str = ""
    notes: tuple[tuple[str, str], ...] = ()
    device_name: str = ""


def _today() -> str:
    return _dt.datetime.now(_dt.timezone.utc).date().isoformat()


def _leaf_spec(path: str):
    node: Any = SCHEMA
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node if isinstance(node, tuple) else None


def _get(raw: dict, path: str) -> Any:
    node = raw
    for part in path.split("."):
        node = node[part]
    return node


def _set(raw: dict, path: str, value: Any) -> None:
    *parents, last = path.split(".")
    node = raw
    for part in parents:
        node = node[part]
    node[last] = value


def _source_of(sources: Mapping[str, str], path: str) -> str:
    """The source text covering ``path``: its own key, else the longest section prefix."""
    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        key = ".".join(parts[:i])
        if key in sources:
            return sources[key]
    return "no source"


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def _sig(v: float, digits: int = 4) -> float:
    return float(f"{v:.{digits}g}")


def _plausible(path: str, value: float) -> str | None:
    """Why ``value`` cannot go into field ``path`` (schema type and range), or None."""
    spec = _leaf_spec(path)
    if spec is None:
        return f"{path} is not a numeric field of the profile schema"
    kind, lo, hi, doc = spec
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
        return f"not a finite number: {value!r}"
    if kind == "int" and int(value) != value:
        return f"not an integer: {value!r}"
    if isinstance(lo, tuple):
        return None if value in lo else f"{value!r} is not one of {lo}"
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        return f"{value:.4g} is outside the schema's plausible range [{lo:g}, {hi:g}] ({doc})"
    return None


def build_profile(base: HardwareProfile, m: Measurements | None, *, name: str | None = None) -> tuple[dict, list[str]]:
    """The raw profile (a dict ``origami.hardware.render_profile`` writes) for ``base`` with ``m``
    applied, and the warnings about measurements that were dropped. Pure: no device, no file."""
    raw = base.to_yaml_dict()
    sources: dict[str, str] = raw["sources"]
    dropped: list[str] = []
    if name:
        raw["name"] = name
    if m is None:
        return raw, dropped
    stamp = f"measured {m.date} {STAMP}"

    def put(path: str, value: Any, method: str, detail: str = "") -> None:
        why = _plausible(path, value)
        if why:
            dropped.append(f"{path}: measured {why}; kept {base.name}'s value")
            return
        old = _get(raw, path)
        spec = _leaf_spec(path)
        value = int(value) if spec and spec[0] == "int" else float(value)
        _set(raw, path, value)
        extra = f"; {detail}" if detail else ""
        sources[path] = (f"{stamp} ({method}){extra}; {base.name} had {_fmt(old)}: "
                         f"{_source_of(base.sources, path)}")

    for meas in m.values:
        put(meas.path, meas.value, meas.method, meas.detail)

    compute = raw["compute"]
    boost = compute["boost_clock_mhz"]
    peaks = base.matrix_peak_flops
    rates = {r.path.rsplit(".", 1)[-1]: r for r in m.rates}
    bf16 = rates.get("bf16")
    if bf16 is not None and peaks.get("bf16", 0) > 0:
        eff = boost * bf16.value / peaks["bf16"]
        detail = (f"effective clock = boost {boost:g} MHz x measured bf16 {bf16.value / 1e12:.0f} TFLOP/s / "
                  f"peak {peaks['bf16'] / 1e12:.1f} TFLOP/s; bf16: {bf16.method}")
        if eff > boost:
            detail += f"; {eff:.0f} MHz capped at the boost clock (the bf16 peak is raised instead)"
            eff = boost
        if m.clock_detail:
            detail += f"; {m.clock_detail}"
        put("compute.sustained_clock_mhz", round(eff, 1), "the bf16 matrix rate this GPU sustains", detail)
    sustained = compute["sustained_clock_mhz"]
    for key, r in rates.items():
        if peaks.get(key, 0) <= 0:
            continue
        implied = _sig(r.value * boost / sustained)
        if key == "bf16" and abs(implied - peaks[key]) <= 1e-3 * peaks[key]:
            continue  # bf16 set the clock: its peak is unchanged by construction
        put(f"matrix.peak_flops.{key}", implied, r.method,
            f"{r.value / 1e12:.0f} TFLOP/s at the sustained clock, x boost/sustained "
            f"{boost:g}/{sustained:g} MHz = the peak at the boost clock")
    for w in dropped:
        logger.warning("calibrate: dropped a measurement: %s", w)
    return raw, dropped


def write_profile(text: str, path: "str | os.PathLike[str]") -> HardwareProfile:
    """Validate ``text`` (``origami.hardware.check_profile_text``) and publish it at ``path``
    atomically (temp file in the same directory, fsync, ``os.replace``): a failure at any point
    leaves the previous file untouched."""
    from tritonblas.tables import AtomicFile

    path = Path(path)
    hw = check_profile_text(text, path.name)
    with AtomicFile(path) as f:
        f.write(text)
    return hw


# =============================================================================================
# Fitting the model parameters to a sweep (pure; CPU)
# =============================================================================================
@dataclass(frozen=True, slots=True)
class FitOutcome:
    """A guarded fit. ``before``/``after`` are held-out (geomean, p10, picks missing from the data)
    scores of ``origami.select()``'s real pick (None when no held-out sweep was recorded);
    ``train_*`` are (geomean, p10, median |log(predicted / measured)|) on the fitted shapes.
    ``after`` is scored on the parameters as written (rounded for YAML)."""

    sweep: str
    shapes: int
    train: int
    held_out: int
    heldout_source: str
    params_before: Mapping[str, float]
    params_after: Mapping[str, float]
    before: "tuple[float, float, int] | None"
    after: "tuple[float, float, int] | None"
    train_before: tuple[float, float, float]
    train_after: tuple[float, float, float]

    @property
    def accepted(self) -> bool:
        """``origami.fit.accepts`` (the one acceptance rule) on the held-out scores."""
        return accepts(self.before, self.after)

    @property
    def changed(self) -> dict[str, tuple[float, float]]:
        return {k: (self.params_before[k], v) for k, v in self.params_after.items()
                if v != self.params_before[k]}

    def lines(self) -> list[str]:
        b, a, tb, ta = self.before, self.after, self.train_before, self.train_after
        out = [f"fit: {self.sweep}: {self.shapes} training shapes fitted; held out: {self.held_out} shapes "
               f"({self.heldout_source})"]
        if b is None or a is None:
            out.append(f"fit: no held-out sweep recorded ({self.heldout_source}): the fit cannot be validated; "
                       f"record it with `{HELDOUT_SWEEP_COMMAND}`")
        else:
            out.append(f"fit: held-out selection efficiency: geomean {b[0]:.3f} -> {a[0]:.3f}, p10 {b[1]:.3f} -> "
                       f"{a[1]:.3f} (select()'s pick; picks missing from the data {b[2]} -> {a[2]})")
        out.append(f"fit: fitted-shape selection efficiency: geomean {tb[0]:.3f} -> {ta[0]:.3f}, p10 {tb[1]:.3f} -> "
                   f"{ta[1]:.3f} (median |log pred/meas| {tb[2]:.3f} -> {ta[2]:.3f})")
        if self.accepted:
            ch = ", ".join(f"{k} {x:.4g} -> {y:.4g}" for k, (x, y) in self.changed.items()) or "none changed"
            out.append(f"fit: accepted: model parameters replaced ({ch})")
        elif b is None or a is None:
            out.append("fit: rejected: no held-out data to validate it; the profile keeps the base model parameters")
        elif a[2]:
            out.append(f"fit: rejected: {a[2]} held-out pick(s) of the fitted model are not in the held-out data "
                       f"(re-sweep: `{HELDOUT_SWEEP_COMMAND}`); the profile keeps the base model parameters")
        else:
            out.append("fit: rejected: held-out selection efficiency would drop; the profile keeps the base "
                       "model parameters")
        return out


def _triple(s) -> tuple[float, float, float]:
    return (s.geomean, s.p10, s.log_error)


def _score(data: Sequence, hw: HardwareProfile) -> tuple[float, float, float]:
    return _triple(selection_efficiency(data, hw))


def fit_model(hw: HardwareProfile, data: Sequence, *, heldout: Sequence = (), heldout_source: str = "none",
              sweep: str = "sweep", rounds: int = 3,
              params: Sequence[str] | None = None) -> tuple[FitOutcome, dict]:
    """Fit ``hw``'s model parameters (all, or only ``params``) on every shape of ``data`` (training
    data: :func:`read_sweep_file` has refused held-out rows) and score ``heldout`` (the held-out
    sweeps, :func:`read_heldout_sweeps`) before and after; returns the outcome and the whole fitted
    model section (rounded as written). Decide with ``outcome.accepted``."""
    names = [p for p in MODEL_PARAMS if not (p == "llc_efficiency" and hw.memory["llc_bytes"] == 0)]
    if params:
        unknown = [p for p in params if p not in MODEL_PARAMS]
        if unknown:
            raise CalibrationError(f"--params: unknown model parameter(s) {', '.join(unknown)} "
                                   f"(known: {', '.join(MODEL_PARAMS)})")
        names = [p for p in names if p in params]
    report = fit(hw, data, [], params=names, rounds=rounds)
    params = {k: as_written(v) for k, v in report.params.items()}
    fitted = hw.replace_model(**params)
    outcome = FitOutcome(
        sweep=sweep, shapes=len(data), train=len(data), held_out=len(heldout), heldout_source=heldout_source,
        params_before=dict(hw.model), params_after=params,
        before=heldout_score(heldout, hw), after=heldout_score(heldout, fitted),
        train_before=_triple(report.train_before), train_after=_score(data, fitted))
    for line in outcome.lines():
        logger.info("calibrate: %s", line)
    return outcome, params


def apply_fit(raw: dict, outcome: FitOutcome, params: Mapping[str, float], date: str, base_name: str) -> dict:
    """``raw`` with the fitted parameters and a ``model`` source that records the evidence."""
    # an optional parameter at its default is left out, as HardwareProfile.to_yaml_dict leaves it
    model = {k: v for k, v in params.items() if OPTIONAL_MODEL_PARAMS.get(k, None) != v}
    raw = {**raw, "model": model, "sources": dict(raw["sources"])}
    old = raw["sources"].get("model", "")
    for key in [k for k in raw["sources"] if k.startswith("model.")]:
        old = old or raw["sources"][key]
        del raw["sources"][key]
    b, a = outcome.before, outcome.after
    raw["sources"]["model"] = (
        f"fitted {date} {STAMP} --fit {outcome.sweep} (origami.fit coordinate descent on {outcome.train} "
        f"training shapes; held out {outcome.held_out} shapes of {outcome.heldout_source}, select()'s pick): "
        f"geomean {b[0]:.3f} -> {a[0]:.3f}, p10 {b[1]:.3f} -> {a[1]:.3f}; before, in {base_name}: {old or 'no source'}")
    return raw


# =============================================================================================
# Microbenchmarks (GPU)
# =============================================================================================
def _log(msg: str) -> None:
    """Calibration progress: stderr (the CLI's channel) and the ``tritonblas`` logger (DEBUG)."""
    logger.debug("calibrate: %s", msg)
    print(msg, file=sys.stderr, flush=True)


def _property_values(props, dev, base: HardwareProfile, index: int) -> list[Measurement]:
    """Fields the driver reports (``torch.cuda.get_device_properties``)."""
    how = f"torch.cuda.get_device_properties({index})"
    out = [Measurement("compute.compute_units", dev.compute_units, f"{how}.multi_processor_count")]
    if dev.memory_bytes:
        out.append(Measurement("memory.hbm_bytes", dev.memory_bytes, f"{how}.total_memory"))
    if dev.vendor != "nvidia":  # AMD reports LDS/registers/L2 per XCD in ways the schema does not use
        return out
    warp = int(getattr(props, "warp_size", 0) or 0)
    pairs = [(path, getattr(props, attr, 0), attr) for path, attr in (
        ("compute.warp_size", "warp_size"),
        ("compute.smem_bytes_per_cu", "shared_memory_per_multiprocessor"),
        ("compute.smem_bytes_per_block", "shared_memory_per_block_optin"),
        ("compute.registers_per_cu", "regs_per_multiprocessor"))]
    threads = int(getattr(props, "max_threads_per_multi_processor", 0) or 0)
    if warp and threads:
        pairs.append(("compute.max_warps_per_cu", threads // warp, "max_threads_per_multi_processor / warp_size"))
    if base.chiplets == 1:
        pairs.append(("memory.l2_bytes_per_chiplet", getattr(props, "L2_cache_size", 0), "L2_cache_size"))
    for path, value, attr in pairs:
        if value:
            out.append(Measurement(path, int(value), f"{how}.{attr}"))
    return out


def _spin_clock_mhz(torch, cycles: int, reps: int = 5) -> float:
    """SM clock from a clock64 spin of ``cycles`` cycles (torch.cuda._sleep) against event time."""
    torch.cuda._sleep(1000)
    torch.cuda.synchronize()
    vals = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        torch.cuda._sleep(cycles)
        e.record()
        e.synchronize()
        vals.append(cycles / (s.elapsed_time(e) * 1e3))
    return statistics.median(vals)


def _loaded_clock_mhz(torch, gemm: Callable[[], Any], gemm_ms: float, cycles: int) -> float:
    """The spin clock while ``gemm`` runs back to back on the current stream (the spin kernel, one
    thread, runs on a side stream beside it)."""
    side = torch.cuda.Stream()
    spin_ms = cycles / 1.5e6  # a lower bound on the spin's duration (clock <= 1.5 GHz would be longer)
    n = max(4, int(math.ceil(3 * spin_ms / max(gemm_ms, 1e-3))))
    torch.cuda.synchronize()
    for _ in range(2):
        gemm()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(n):
        gemm()
    with torch.cuda.stream(side):
        torch.cuda._sleep(1000)  # let the GEMMs take the SMs first
        s.record(side)
        torch.cuda._sleep(cycles)
        e.record(side)
    torch.cuda.synchronize()
    return cycles / (s.elapsed_time(e) * 1e3)


def _driver_clocks(props, torch) -> str:
    parts = []
    rate = getattr(props, "clock_rate", None)
    if rate:
        parts.append(f"device property clock_rate {float(rate) / 1e3:.0f} MHz")
    exe = shutil.which("nvidia-smi") if torch.version.hip is None else None
    uuid = str(getattr(props, "uuid", "") or "")
    if exe and uuid:
        ident = uuid if uuid.startswith("GPU-") else f"GPU-{uuid}"
        try:
            r = subprocess.run([exe, "-i", ident, "--query-gpu=clocks.sm,clocks.max.sm",
                                "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=15)
            if r.returncode == 0 and r.stdout.strip():
                cur, mx = [x.strip() for x in r.stdout.strip().splitlines()[0].split(",")[:2]]
                parts.append(f"nvidia-smi: SM clock {cur} MHz now, max {mx} MHz")
        except (OSError, subprocess.SubprocessError, ValueError):
            pass
    return "; ".join(parts)


def _hbm_copy(torch, device, nbytes: int, rep_ms: int) -> tuple[float, int]:
    free, _ = torch.cuda.mem_get_info(device)
    while nbytes > (64 << 20) and 2 * nbytes > 0.8 * free:
        nbytes //= 2
    src = torch.empty(nbytes, dtype=torch.uint8, device=device).random_()
    dst = torch.empty_like(src)
    ms = _measure.do_bench(lambda: dst.copy_(src), rep_ms)
    del src, dst
    torch.cuda.empty_cache()
    return 2 * nbytes / (ms * 1e-3), nbytes


def _l2_curve(torch, device, sms: int, sizes_mib: Sequence[int], target_bytes: int, rep_ms: int,
              log: Callable[[str], None]) -> list[tuple[int, float]]:
    """(buffer bytes, read bandwidth B/s) per size: bytes(2X) - bytes(X) over t(2X) - t(X)."""
    from tritonblas.kernels.probes import l2_read_kernel

    grid = sms * _READ_PROGRAMS_PER_SM
    step_bytes = grid * _READ_BLOCK * 4
    iters = max(8, target_bytes // step_bytes)
    out = torch.empty(grid * _READ_BLOCK, dtype=torch.float32, device=device)
    big = torch.randn(max(sizes_mib) << 18, dtype=torch.float32, device=device)  # MiB → fp32 elements
    curve = []
    for mib in sizes_mib:
        n_blocks = (mib << 20) // (_READ_BLOCK * 4)
        x = big[: n_blocks * _READ_BLOCK]

        def run(n: int, x=x, n_blocks=n_blocks):
            l2_read_kernel[(grid,)](x, out, n_blocks, n, BLOCK=_READ_BLOCK, num_warps=8)

        t1 = _measure.do_bench(lambda: run(iters), rep_ms)
        t2 = _measure.do_bench(lambda: run(2 * iters), rep_ms)
        bw = iters * step_bytes / ((t2 - t1) * 1e-3) if t2 > t1 else float("nan")
        curve.append((mib << 20, bw))
    del big, out
    torch.cuda.empty_cache()
    log("  L2 read bandwidth: " + ", ".join(f"{s >> 20} MiB {bw / 1e12:.2f}" for s, bw in curve) + " TB/s")
    return curve


def l2_knee(curve: Sequence[tuple[int, float]]) -> tuple[float, float, int | None]:
    """(plateau, floor, knee bytes) of a read-bandwidth curve: the plateau is the highest bandwidth,
    the floor that of the largest size (HBM), the knee the largest size from the plateau on whose
    bandwidth is still at least half-way from floor to plateau (None when the curve shows no step:
    plateau < 1.2 × floor)."""
    pts = sorted((int(s), float(bw)) for s, bw in curve if math.isfinite(bw) and bw > 0)
    if not pts:
        raise ValueError("no valid point in the L2 read-bandwidth curve")
    i_top = max(range(len(pts)), key=lambda i: pts[i][1])
    plateau, floor = pts[i_top][1], pts[-1][1]
    if plateau < 1.2 * floor:
        return plateau, floor, None
    threshold = floor + 0.5 * (plateau - floor)
    knee = pts[i_top][0]
    for s, bw in pts[i_top:]:
        if bw < threshold:
            break
        knee = s
    return plateau, floor, knee


def _gemm_fns(torch, key: str, size: int, device, base: HardwareProfile, ours: bool):
    """(torch fn, our fn or None) for a random size³ GEMM of rate key ``key``."""
    from tritonblas import ops
    from tritonblas import plan as _plan

    gen = torch.Generator(device=device).manual_seed(0)
    if key == "fp8":
        from tritonblas.scaled import native_fnuz

        e4m3 = torch.float8_e4m3fnuz if native_fnuz(device) else torch.float8_e4m3fn  # the GPU's own encoding
        a = torch.randn(size, size, device=device, generator=gen).to(e4m3)
        b = torch.randn(size, size, device=device, generator=gen).to(e4m3).t()  # column-major, as _scaled_mm wants
        one = torch.ones((), dtype=torch.float32, device=device)

        def theirs():
            return torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16, use_fast_accum=True)

        mine = None
        if ours:
            import origami

            out = torch.empty(size, size, dtype=torch.bfloat16, device=device)
            problem = _plan.problem_from_tensors(a, b, out)
            lp = _plan.make_plan(origami.select(problem, base).config, problem, base, tma=True)
            mine = _plan.prepare_launch(lp, a, b, out, fp8_fast_accum=True).run
        return theirs, mine
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "tf32": torch.float32}[key]
    a = torch.randn(size, size, device=device, dtype=dtype, generator=gen)
    b = torch.randn(size, size, device=device, dtype=dtype, generator=gen)
    return (lambda: torch.matmul(a, b)), ((lambda: ops.matmul(a, b, profile=base)) if ours else None)


def _matrix_rates(torch, device, base: HardwareProfile, cc: tuple[int, int], quick: bool, rep_ms: int,
                  log: Callable[[str], None]) -> tuple[list[Measurement], Callable | None, float]:
    """Measured rates per rate key, and the fastest bf16 GEMM (fn, ms) for the loaded-clock probe."""
    size = MATRIX_SIZE
    flops = 2.0 * size ** 3
    rates, bf16_fn, bf16_ms = [], None, 0.0
    for key in ("bf16", "fp16", "tf32", "fp8"):
        if base.matrix_peak_flops.get(key, 0) <= 0:
            continue
        if key == "tf32" and cc < (8, 0) and torch.version.hip is None:
            continue
        if key == "fp8" and (not hasattr(torch, "float8_e4m3fn") or not hasattr(torch, "_scaled_mm")
                             or (torch.version.hip is None and cc < (8, 9))):
            log("  fp8: not measured (this GPU or torch has no fp8 e4m3 matmul)")
            continue
        ours = key == "bf16" or not quick
        try:
            with _measure.with_tf32(torch, key == "tf32"):
                theirs, mine = _gemm_fns(torch, key, size, device, base, ours)
                t_torch = _measure.do_bench(theirs, rep_ms)
                t_ours = _measure.do_bench(mine, rep_ms) if mine is not None else math.inf
        except Exception as e:  # noqa: BLE001 - one dtype failing leaves the others (and the base value)
            log(f"  {key}: not measured ({type(e).__name__}: {' '.join(str(e).split())[:200]})")
            continue
        best = min(t_torch, t_ours)
        tf_t, tf_o = flops / t_torch / 1e9, (flops / t_ours / 1e9 if math.isfinite(t_ours) else None)
        torch_name = "torch._scaled_mm (fast accumulation)" if key == "fp8" else "torch.matmul"
        if tf_o is None:
            method = f"{torch_name} on random {size}^3 {key}: {tf_t:.0f} TFLOP/s, do_bench median"
        else:
            ours_name = "tritonblas kernels (fast accumulation)" if key == "fp8" else "tritonblas.matmul"
            method = (f"max of {torch_name} {tf_t:.0f} and {ours_name} {tf_o:.0f} TFLOP/s on random "
                      f"{size}^3 {key}, do_bench medians")
        log(f"  {key}: torch {tf_t:.0f} TFLOP/s" + (f", tritonblas {tf_o:.0f} TFLOP/s" if tf_o else ""))
        rates.append(Measurement(f"matrix.peak_flops.{key}", _sig(flops / best / 1e-3), method))
        if key == "bf16":
            bf16_fn, bf16_ms = (theirs if t_torch <= t_ours else mine), best
        else:
            del theirs, mine
    torch.cuda.empty_cache()
    return rates, bf16_fn, bf16_ms


def _launch_overhead(torch, device, n: int) -> tuple[float, float]:
    """(ns per kernel on the GPU for back-to-back empty Triton kernels replayed from a CUDA graph of
    ``n`` launches, median of 5; host wall time per Python launch in ns).

    The model's ``launch_overhead_ns`` is the per-kernel cost the GPU itself adds (launch, ramp-up,
    drain), which is what a graph replay — and the sweep's graph timer, the oracle — sees. The host's
    Python launch cost (Triton's ``kernel[grid]``: ~10-15 us on the H200 host, 2026-11-30) is not
    GPU time; it is reported alongside."""
    from tritonblas.kernels.probes import empty_kernel

    x = torch.zeros(1, dtype=torch.float32, device=device)
    empty_kernel[(1,)](x)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        empty_kernel[(1,)](x)
    torch.cuda.synchronize()
    host_ns = (time.perf_counter() - t0) / n * 1e9
    stream = torch.cuda.Stream(device=device)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.stream(stream):
        with torch.cuda.graph(graph, stream=stream):
            for _ in range(n):
                empty_kernel[(1,)](x)
    graph.replay()
    torch.cuda.synchronize()
    per = []
    for _ in range(5):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        per.append(start.elapsed_time(end) * 1e6 / n)
    return statistics.median(per), host_ns


def measure(index: int, base: HardwareProfile, *, quick: bool = False,
            log: Callable[[str], None] = _log) -> Measurements:
    """Run the microbenchmarks on CUDA device ``index`` (module docstring). A step that fails is
    logged and skipped; its fields keep the base values."""
    import torch

    from tritonblas import _device

    if triton is None:  # pragma: no cover
        raise CalibrationError("calibrate: needs triton to run the microbenchmarks")
    props = _device.device_properties(index)
    dev = _device.read_properties(props)
    device = torch.device("cuda", index)
    cc = (int(getattr(props, "major", 0)), int(getattr(props, "minor", 0)))
    rep = 50 if quick else 200
    values: list[Measurement] = []
    notes: list[tuple[str, str]] = []
    clock_parts: list[str] = []
    t_start = time.perf_counter()

    def step(what: str, fn: Callable[[], None]) -> None:
        t = time.perf_counter()
        log(f"{what} ...")
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - a failed step leaves the base values
            log(f"  not measured ({type(e).__name__}: {' '.join(str(e).split())[:200]})")
        log(f"  ({time.perf_counter() - t:.1f} s)")

    with torch.cuda.device(index):
        values += _property_values(props, dev, base, index)
        log(f"device: {dev.describe(index)}; base profile {base.name} ({base.path})")

        def clock():
            if torch.version.hip is not None:
                log("  skipped (the clock64 spin is NVIDIA-only)")
                return
            mhz = _spin_clock_mhz(torch, 20_000_000 if quick else 100_000_000)
            clock_parts.append(f"clock64 spin kernel alone: {mhz:.0f} MHz")
            drv = _driver_clocks(props, torch)
            if drv:
                clock_parts.append(drv)
            log(f"  {'; '.join(clock_parts)}")
        step("SM clock (clock64 spin vs event time)", clock)

        def hbm():
            bw, nbytes = _hbm_copy(torch, device, (1 << 30) if quick else (4 << 30), rep)
            values.append(Measurement("memory.hbm_bytes_per_s", _sig(bw),
                                      f"device-to-device copy of {nbytes >> 20} MiB, bytes read + written "
                                      f"over the do_bench median"))
            log(f"  {bw / 1e12:.2f} TB/s")
        step(f"HBM bandwidth (device-to-device copy of {1 if quick else 4} GiB)", hbm)

        def l2():
            sizes = L2_SIZES_MIB_QUICK if quick else L2_SIZES_MIB
            curve = _l2_curve(torch, device, dev.compute_units, sizes, (1 << 31) if quick else (1 << 32), rep // 2, log)
            plateau, floor, knee = l2_knee(curve)
            knee_text = f"knee at {knee >> 20} MiB" if knee else "no knee in the tested sizes"
            summary = (f"read bandwidth {plateau / 1e12:.2f} TB/s in L2, {floor / 1e12:.2f} TB/s at "
                       f"{curve[-1][0] >> 20} MiB; {knee_text}")
            notes.append(("L2 read bandwidth by buffer size",
                          ", ".join(f"{s >> 20} MiB {bw / 1e12:.2f}" for s, bw in curve) + " TB/s"))
            notes.append(("L2", summary))
            method = (f"plateau of repeated .cg reads of {sizes[0]}-{sizes[-1]} MiB buffers, bandwidth from "
                      f"the difference of two read volumes, do_bench medians")
            values.append(Measurement("memory.l2_bytes_per_s", _sig(plateau), method, summary))
            if knee:
                for i, v in enumerate(values):
                    if v.path == "memory.l2_bytes_per_chiplet":
                        values[i] = Measurement(v.path, v.value, v.method, f"read-bandwidth {knee_text}")
            log(f"  {summary}")
        step("L2 bandwidth and capacity knee", l2)

        rates: list[Measurement] = []
        gemm: dict[str, Any] = {}

        def matrix():
            r, fn, ms = _matrix_rates(torch, device, base, cc, quick, rep, log)
            rates.extend(r)
            gemm.update(fn=fn, ms=ms)
        step(f"matrix rates ({MATRIX_SIZE}^3 GEMMs, torch and tritonblas)", matrix)

        def loaded():
            if torch.version.hip is not None or not gemm.get("fn"):
                log("  skipped")
                return
            mhz = _loaded_clock_mhz(torch, gemm["fn"], gemm["ms"], 20_000_000)
            clock_parts.insert(1, f"during back-to-back bf16 {MATRIX_SIZE}^3 GEMMs: {mhz:.0f} MHz")
            log(f"  {mhz:.0f} MHz")
        step("SM clock under bf16 GEMM load", loaded)
        gemm.clear()

        def launch():
            n = 500 if quick else 2000
            ns, host_ns = _launch_overhead(torch, device, n)
            values.append(Measurement("launch_overhead_ns", _sig(ns),
                                      f"GPU time per kernel of {n} empty Triton kernels replayed from a CUDA graph, "
                                      "median of 5",
                                      f"host: {host_ns / 1e3:.1f} us per Python launch (not GPU time)"))
            log(f"  {ns / 1e3:.2f} us per kernel on the GPU (graph replay); host Python launch {host_ns / 1e3:.1f} us")
        step("launch overhead (empty Triton kernel)", launch)
        torch.cuda.empty_cache()

    if clock_parts:
        notes.insert(0, ("SM clock", "; ".join(clock_parts)))
    log(f"measured in {time.perf_counter() - t_start:.0f} s")
    return Measurements(device=dev.describe(index), date=_today(), values=tuple(values), rates=tuple(rates),
                        clock_detail=("SM clock: " + "; ".join(clock_parts)) if clock_parts else "",
                        notes=tuple(notes), device_name=dev.name)


# =============================================================================================
# The `calibrate` command
# =============================================================================================
def _load_base(name: str) -> HardwareProfile:
    try:
        return load_profile(name)
    except ProfileError as e:
        raise CalibrationError(f"--base: {_measure.one_line(e)}") from None


def _same_file(a: Path, b: "str | None") -> bool:
    if not b:
        return False
    try:
        return a.exists() and Path(b).exists() and os.path.samefile(a, b)
    except OSError:
        return False


def _base_file(base_arg: str | None) -> str | None:
    """The file ``load_profile(base_arg)`` reads (a path, an ``$ORIGAMI_PROFILE_DIR`` file or a
    shipped one), or None."""
    if not base_arg:
        return None
    if base_arg.endswith((".yaml", ".yml")) or os.sep in base_arg or Path(base_arg).is_file():
        return base_arg
    extra = os.environ.get(ENV_PROFILE_DIR)
    if extra and (Path(extra) / f"{base_arg}.yaml").is_file():
        return str(Path(extra) / f"{base_arg}.yaml")
    try:
        from importlib import resources

        f = resources.files("hwprofiles").joinpath(f"{base_arg}.yaml")
        return str(f) if f.is_file() else None
    except (ImportError, OSError, TypeError):
        return None


def _heldout_paths(args, base_name: str) -> tuple[list[Path], str]:
    """(held-out sweep CSVs, how to name them in the report): ``args.heldout_sweeps`` when given,
    else every CSV of :func:`heldout_sweep_dir` of the base profile."""
    given = getattr(args, "heldout_sweeps", None)
    if given:
        paths = [Path(x) for x in given]
        for x in paths:
            if not x.is_file():
                raise CalibrationError(f"--heldout-sweeps {x}: no such file")
        return paths, sweep_names(paths)
    d = heldout_sweep_dir(base_name)
    paths = sorted(x for x in d.glob("*.csv") if ".shard" not in x.name)
    rel = d.relative_to(ROOT) if d.is_relative_to(ROOT) else d
    return paths, (f"{rel}/: {sweep_names(paths)}" if paths else f"{rel}/ has no CSV")


def calibrate_command(args, *, out: Callable[[str], None] | None = None) -> int:
    """The ``calibrate`` subcommand (argparse namespace from ``tritonblas.cli``). Raises
    CalibrationError on bad input before measuring or writing anything."""
    output = Path(args.output) if args.output else None
    if output is not None:
        if output.is_dir():
            raise CalibrationError(f"-o {output}: is a directory; -o names the profile file")
        if not output.parent.is_dir():
            raise CalibrationError(f"-o {output}: the directory {output.parent} does not exist")
        if not os.access(output.parent, os.W_OK):  # fail now, not after minutes of measuring
            raise CalibrationError(f"-o {output}: cannot write to {output.parent}")
        if _same_file(output, _base_file(args.base)) and not args.force:
            raise CalibrationError(f"-o {output}: is the --base profile; pass --force to replace it")
        for opt in ("fit", "heldout_sweeps"):  # a sweep is data, never replaced by a profile (even with --force)
            for src in getattr(args, opt, None) or ():
                if _same_file(output, str(src)):
                    raise CalibrationError(f"-o {output}: is the --{opt.replace('_', '-')} input {src}; "
                                           "name a new profile file")
    if args.no_measure and not args.fit:
        raise CalibrationError("--no-measure: nothing to do without --fit SWEEP.csv")
    if args.rounds < 1:
        raise CalibrationError(f"--rounds: expected >= 1, got {args.rounds}")
    unknown = [p for p in (getattr(args, "params", None) or ()) if p not in MODEL_PARAMS]
    if unknown:  # now, not after minutes of measuring
        raise CalibrationError(f"--params: unknown model parameter(s) {', '.join(unknown)} "
                               f"(known: {', '.join(MODEL_PARAMS)})")
    if args.fit and (getattr(args, "seed", 0) != 0 or getattr(args, "holdout", 0.3) != 0.3):
        raise CalibrationError("--seed/--holdout: the held-out split is committed (benchmarks/shapes/heldout), "
                               "not drawn per fit; drop the option")
    data = read_sweep_files(args.fit) if args.fit else None
    base = _load_base(args.base) if args.base else None

    torch = None
    if not args.no_measure:
        torch = _measure.require_gpu("calibrate", "; to fit the model on CPU: calibrate --no-measure --base NAME "
                                          "--fit SWEEP.csv")
    elif base is None:
        raise CalibrationError("--no-measure: name the profile to fit with --base NAME_OR_PATH")
    index = None
    if torch is not None:
        from tritonblas import _device

        index = torch.cuda.current_device()
        dev = _device.read_properties(_device.device_properties(index))
        if base is None:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    base = _device.match_profile(_device.device_properties(index), index=index).profile
            except _device.DeviceError:
                raise CalibrationError(f"calibrate: {dev.describe(index)} maps to no hardware profile; pass "
                                       "--base with the closest one (a name or a YAML path)") from None
        if base.arch != dev.arch:
            raise CalibrationError(f"--base {base.name} is for {base.arch}, but {dev.describe(index)} is "
                                   f"{dev.arch}; pick a base profile of the same arch")

    say = out or (print if output is not None else _log)
    meas = measure(index, base, quick=args.quick) if torch is not None else None
    raw, dropped = build_profile(base, meas, name=args.name)
    for w in dropped:
        _log(f"warning: {w}")
    if meas is not None and meas.device_name:
        lname = meas.device_name.lower()
        if not any(s.lower() in lname for s in raw["device_names"]):
            raw["device_names"] = [*raw["device_names"], meas.device_name]
    date = meas.date if meas is not None else _today()

    fit_out = None
    if data is not None:
        try:
            hw_measured = check_profile_text(render_profile(raw), "calibrated.yaml")
        except ProfileError as e:
            raise CalibrationError(f"calibrate: the measured profile is invalid: {_measure.one_line(e)}") from None
        held_paths, held_source = _heldout_paths(args, base.name)
        fit_out, params = fit_model(hw_measured, data, heldout=read_heldout_sweeps(held_paths),
                                    heldout_source=held_source, sweep=sweep_names(args.fit), rounds=args.rounds,
                                    params=getattr(args, "params", None))
        if fit_out.accepted:
            raw = apply_fit(raw, fit_out, params, date, base.path)

    header = [f"{raw['name']}: written {date} {STAMP} from base {base.path} ({base.content_hash})"]
    if meas is not None:
        header.append(f"device: {meas.device}; {'quick' if args.quick else 'full'} run; torch "
                      f"{torch.__version__}, triton {getattr(triton, '__version__', '?')}")
        header += [f"{label}: {text}" for label, text in meas.notes]
        measured = [v.path for v in meas.values] + [r.path for r in meas.rates]
        header.append("measured: " + ", ".join(measured) if measured else "measured: nothing (every step failed)")
    if fit_out is not None:
        header += fit_out.lines()
    text = render_profile(raw, header)
    try:
        hw = write_profile(text, output) if output is not None else check_profile_text(text)
    except ProfileError as e:
        raise CalibrationError(f"calibrate: the calibrated profile is invalid: {_measure.one_line(e)}") from None
    except OSError as e:
        raise CalibrationError(f"-o {output}: cannot write: {e.strerror or e}") from None

    if output is None:
        sys.stdout.write(text)
        sys.stdout.flush()
    if meas is not None:
        _summary(base, hw, meas, say)
    if fit_out is not None:
        for line in fit_out.lines():
            say(line)
    if output is not None:
        say(f"wrote {output}: profile {hw.name} ({hw.content_hash}); use it with --profile {output} or "
            f"TRITONBLAS_PROFILE={output}")
    return 0


def _summary(base: HardwareProfile, hw: HardwareProfile, m: Measurements, say: Callable[[str], None]) -> None:
    say(f"calibrated {m.device} on {m.date} (base {base.name}):")
    rows = []
    old, new = base.to_yaml_dict(), hw.to_yaml_dict()
    for v in m.values:
        rows.append((v.path, _fmt(_get(old, v.path)), _fmt(_get(new, v.path))))
    rows.append(("compute.sustained_clock_mhz", _fmt(base.compute["sustained_clock_mhz"]),
                 _fmt(hw.compute["sustained_clock_mhz"])))
    for r in m.rates:
        key = r.path.rsplit(".", 1)[-1]
        rows.append((f"sustained {key} FLOP/s", _fmt(base.sustained_peak_flops(key)),
                     _fmt(hw.sustained_peak_flops(key))))
    width = max(len(r[0]) for r in rows)
    say(f"  {'field':<{width}}  {'base':>12}  {'calibrated':>12}")
    for path, a, b in rows:
        say(f"  {path:<{width}}  {a:>12}  {b:>12}")
    for label, text in m.notes:
        say(f"  {label}: {text}")

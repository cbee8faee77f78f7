"""The warp-specialised Gluon kernel's route (Hopper, :mod:`tritonblas.kernels.gluon_hopper`): where it
can run a call (:func:`gluon_runs`, :func:`ws_reason`), how the dispatcher launches origami's picks of
kind 'ws' (:func:`ws_gemm`), the ``TRITONBLAS_GLUON=1`` experiment that forces it by a grid-fill rule
(:func:`gluon_eligible`, :func:`gluon_gemm`, :func:`gluon_scaled`), and the warm entry of a call it ran
(:class:`GluonEntry`, recorded by :func:`remember` in :mod:`tritonblas.launchcache`'s table).
"""

from __future__ import annotations

from typing import Any

import torch

from origami.space import ws_available
from origami.hardware import HardwareProfile
from tritonblas import _device, settings
from tritonblas._device import DeviceInfo
from tritonblas.counters import COUNTS
from tritonblas.fallback import torch_gemm
from tritonblas.launchcache import cuda_guard, device_key, get_device, hooks_on, raw_stream, store

__all__ = ["GLUON_MIN", "GLUON_FILL", "gluon_runs", "ws_reason", "gluon_eligible", "gluon_gemm", "ws_gemm",
           "gluon_scaled", "GluonEntry", "remember", "gluon_config", "fills", "sm_count", "gluon_bias"]

GLUON_MIN = (128, 128, 64)  # M, N, K: one full 128-row tile, one 128-column tile, one K-step
# The Gluon kernel is persistent without a K split: with fewer output tiles than this fraction of
# the SMs, the idle SMs are lost, where origami's pick can split K (Stream-K, split-K). Measured
# (H200, 2026-12-01, a8a7db8, scaled_mm_h200_gluon_a8a7db8.csv against 36cc947's origami picks):
# fp8 128x4096x4096 (16 tiles of 128x128) 97 us on the Gluon kernel against 19 us; 512x6144x4096
# (48 tiles) 119 against 37; at 160-448 tiles the Gluon kernel was 1.0-1.4x faster. bf16
# 4096x1024xK (128 tiles of 128x256 on 132 SMs) ran within 8% of cuBLAS (gluon_h200_870c48f.log).
GLUON_FILL = 0.9


def gluon_runs(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor) -> str | None:
    """Why the warp-specialised Gluon kernel cannot compute ``out = a @ b``, or None when it can: 2-D
    bf16/fp16 operands of one dtype and a bf16/fp16 output on an sm_90 GPU (not the interpreter), what
    :func:`tritonblas.kernels.gluon_hopper.supports` accepts, and 16-byte-aligned pointers."""
    if a.dim() != 2 or b.dim() != 2 or out.dim() != 2:
        return "not a 2-D GEMM"
    half = (torch.bfloat16, torch.float16)
    if a.dtype != b.dtype or a.dtype not in half or out.dtype not in half:
        return f"dtypes {a.dtype}, {b.dtype} -> {out.dtype}: needs bf16 / fp16"
    if a.device.type != "cuda" or torch.cuda.get_device_capability(a.device) != (9, 0):
        return f"{a.device} is not an sm_90 GPU"
    from tritonblas.kernels import gluon_hopper

    (m, k), n = a.shape, b.shape[1]
    why = gluon_hopper.supports(m, n, k, a.dtype, a.stride(), b.stride(), out.stride(), out.dtype)
    if why is None and (a.data_ptr() | b.data_ptr() | out.data_ptr()) % 16:
        why = "a pointer is not 16-byte aligned"
    return why


def ws_reason(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor, c: torch.Tensor | None = None,
              alpha: float = 1.0, beta: float = 0.0, profile: HardwareProfile | None = None) -> str | None:
    """Why ``out = alpha·(a @ b) + beta·c`` cannot run on the warp-specialised kernel should origami
    pick it (kind 'ws'), or None: ``profile`` (when given) has the kernel (``origami.space.ws_available``),
    not under ``TRITONBLAS_GLUON=0``, alpha 1, ``c`` none or F.linear's bias add (:func:`gluon_bias`),
    and :func:`gluon_runs`. The dispatcher's key carries the answer (``GemmKey.ws``); without it the
    model selects from the space without that kernel."""
    if profile is not None and not ws_available(profile):
        return "no 'ws' kernel"
    if settings.gluon_off():
        return f"{settings.ENV_GLUON}=0"
    if alpha != 1:
        return f"alpha={alpha}: its epilogue does not scale"
    if c is not None and beta != 0 and gluon_bias(c, b.shape[-1], beta) is False:
        return "c: its epilogue adds F.linear's bias (N elements, beta 1) only"
    return gluon_runs(a, b, out)


def gluon_eligible(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor) -> str | None:
    """Why the ``TRITONBLAS_GLUON=1`` experiment does not take ``out = a @ b``, or None when it does:
    :func:`gluon_runs`, at least :data:`GLUON_MIN`, and an output whose tiles give :data:`GLUON_FILL`
    of the SMs one (:func:`gluon_config` not None)."""
    if a.dim() == 2 and b.dim() == 2:
        (m, k), n = a.shape, b.shape[1]
        if m < GLUON_MIN[0] or n < GLUON_MIN[1] or k < GLUON_MIN[2]:
            return f"{m}x{n}x{k} is under {GLUON_MIN}"
    why = gluon_runs(a, b, out)
    (m, k), n = a.shape[-2:], b.shape[-1]
    if why is None:
        sms = sm_count(a.device)
        if gluon_config(m, n, sms) is None:
            why = (f"{m}x{n}: under {GLUON_FILL:.0%} of the {sms} SMs get an output tile of either "
                   "Gluon tile (no K split): origami's pick runs")
    return why


def sm_count(device: torch.device) -> int:
    """SMs of a CUDA device; 0 elsewhere (only the CPU stand-in tests get this far off a GPU)."""
    return torch.cuda.get_device_properties(device).multi_processor_count if device.type == "cuda" else 0


def fills(m: int, n: int, block_n: int, sms: int) -> bool:
    """Whether 128 x block_n tiles of an M x N output give at least GLUON_FILL of ``sms`` SMs one."""
    return -(-m // 128) * -(-n // block_n) >= GLUON_FILL * sms


def gluon_bias(c: torch.Tensor, n: int, beta: float):
    """``c`` as the Gluon kernel's bias vector when ``out = a @ b + beta·c`` is F.linear's bias add
    (beta 1, N contiguous bf16/fp16/fp32 elements: shape (N,) or (1, N)), else False."""
    from tritonblas.kernels import gluon_hopper

    if c.dim() == 0 or beta != 1 or c.dtype not in gluon_hopper.BIAS_DTYPES or c.shape[-1] != n:
        return False
    if c.dim() == 1 or (c.dim() == 2 and c.shape[0] == 1):
        return c.reshape(n) if c.stride(-1) == 1 else False
    return False


def gluon_gemm(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor, c: torch.Tensor | None = None,
                beta: float = 0.0) -> tuple | None:
    """``out = a @ b`` (``+ c`` when ``c`` is F.linear's bias, :func:`gluon_bias`) on the Gluon kernel
    when :func:`gluon_eligible` (the tile of :func:`gluon_config`): what it launched, (bias or None,
    gluon_matmul's tile keywords), for :func:`remember`; None when it does not take the call. The
    ``TRITONBLAS_GLUON=1`` experiment: it forces the kernel by a grid-fill rule whatever origami
    picks (without the variable origami scores the kernel as kind 'ws' and :func:`ws_gemm` runs its
    picks), kept to compare the two inside real models (``benchmarks/models.py --gluon``)."""
    bias = None if c is None else gluon_bias(c, b.shape[-1], beta)
    if bias is False or gluon_eligible(a, b, out) is not None:
        return None
    from tritonblas.kernels import gluon_hopper

    block_n, stages = gluon_config(a.shape[0], b.shape[1], sm_count(a.device))
    tile = dict(block_n=block_n, stages=stages)
    with cuda_guard(a.device):
        gluon_hopper.gluon_matmul(a, b, out=out, bias=bias, **tile)
    return bias, tile


def ws_gemm(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor, c: torch.Tensor | None, beta: float,
             lp) -> tuple:
    """``out = a @ b`` (``+ c``: F.linear's bias) on the warp-specialised kernel with the plan ``lp``'s tile
    and grid (kind 'ws', origami's pick for a key whose ``ws`` held): (bias or None, gluon_matmul's tile
    keywords), as :func:`gluon_gemm` returns them for :func:`remember`."""
    from tritonblas.kernels import gluon_hopper

    cfg = lp.config
    bias = None if c is None else gluon_bias(c, b.shape[-1], beta)
    # the plan's whole tile and its grid (min(cfg.grid, tiles): num_sms caps the kernel's grid so)
    tile = dict(block_m=cfg.block_m, block_n=cfg.block_n, block_k=cfg.block_k, stages=cfg.num_stages,
                group_m=cfg.group_m, num_sms=lp.grid[0])
    with cuda_guard(a.device):
        gluon_hopper.gluon_matmul(a, b, out=out, bias=bias, **tile)
    return bias, tile


class GluonEntry:
    """The warm entry of a fast key whose call ran the Gluon kernel: origami's 'ws' pick (:func:`ws_gemm`)
    or the ``TRITONBLAS_GLUON=1`` experiment (:func:`gluon_gemm`):
    what :class:`~tritonblas.launchcache.FastEntry` offers the warm paths (``out_shape``, ``out_align``, ``call``,
    ``call_ready``, ``raw``/``staged`` for :func:`~tritonblas.launchcache.raw_ready`, the device-cache check of
    :func:`~tritonblas.launchcache.fast_valid`). ``warm`` is the Gluon kernel's bound raw launch for the key
    (:func:`tritonblas.kernels.gluon_hopper.bound_launch`): a warm call goes straight to
    :func:`~tritonblas.kernels.gluon_hopper.raw_launch` with the operands' addresses, as a
    FastEntry's does; without one (or with a Triton launch hook) it runs ``gluon_matmul``'s checked
    launch. Through ``gluon_matmul``'s own warm key every call paid its checks and key (H200,
    2026-12-01, 870c48f: 46 us per ``tritonblas.matmul`` at 256x256x64 against 20 us for the
    origami path; ``benchmarks/gluon_host.py``). The fast key holds ``$TRITONBLAS_GLUON``, so its
    three settings find three sets of entries; a call with ``alpha != 1`` or a ``c`` that is not the
    entry's bias add, which the kernel cannot run, runs torch (:func:`tritonblas.dispatch.gemm` keys such calls apart
    and plans them without the kernel; only a warm path that looks up the plain key gets here)."""

    __slots__ = ("info", "devkey", "out_shape", "out_align", "tile", "raw", "warm", "mnk", "has_bias", "views",
                 "staged", "cuda_index")

    def call(self, a, b, out, c, alpha: float, beta: float, sa=None, sb=None) -> None:
        bias = None if c is None else gluon_bias(c, out.shape[-1], beta)
        if alpha != 1.0 or sa is not None or sb is not None or bias is False or (bias is not None) != self.has_bias:
            torch_gemm(a, b, out, c, alpha, beta)
            return
        if self.warm is not None and not hooks_on():
            self.call_ready(a, b, out, c, alpha, beta)
            return
        from tritonblas.kernels import gluon_hopper

        COUNTS["triton_launches"] += 1
        with cuda_guard(out.device):
            gluon_hopper.gluon_matmul(a, b, out=out, bias=bias, **self.tile)

    def call_ready(self, a, b, out, c, alpha: float, beta: float) -> None:
        """The raw launch over the operands' base addresses (any tensors at the key's operands'
        addresses: an N-D activation for its 2-D view, a Linear's (N, K) weight for its transpose);
        a call that is not the experiment's runs torch on the key's 2-D views at those addresses."""
        if alpha != 1.0 or (c is not None) != self.has_bias or (c is not None and beta != 1.0):
            a, b, out = (t.as_strided(*v) for t, v in zip((a, b, out), self.views))
            self.call(a, b, out, c, alpha, beta)  # not the experiment's call: torch runs it
            return
        from tritonblas.kernels.gluon_hopper import raw_launch

        idx = self.cuda_index
        m, n, k = self.mnk
        pc = None if c is None else c.data_ptr()
        if get_device() != idx:
            with torch.cuda.device(idx):
                raw_launch(self.warm, raw_stream(idx), a.data_ptr(), b.data_ptr(), out.data_ptr(), m, n, k, pc)
        else:
            raw_launch(self.warm, raw_stream(idx), a.data_ptr(), b.data_ptr(), out.data_ptr(), m, n, k, pc)


def gluon_scaled(a, b, out, scale_a, scale_b, bias, fast_accum: bool) -> bool:
    """``scaled_gemm`` on the Gluon kernel (:func:`tritonblas.kernels.gluon_hopper.gluon_scaled_mm`)
    under ``TRITONBLAS_GLUON=1``: a bf16/fp16 ``out``, at least :data:`GLUON_MIN`, what its
    ``supports`` accepts (A row-major, B column-major) with 16-byte-aligned pointers on an sm_90 GPU,
    torch's tensor- or row-wise scales, and an output whose tiles of gluon_scaled_mm's default
    block_n (256 with ``fast_accum``, else 128) give :data:`GLUON_FILL` of the SMs one
    (:func:`fills`); False (origami's pick runs) otherwise."""
    (m, k), n = a.shape, b.shape[1]
    if out.dtype not in (torch.bfloat16, torch.float16) or m < GLUON_MIN[0] or n < GLUON_MIN[1] or k < GLUON_MIN[2]:
        return False
    if b.dtype != a.dtype:  # e4m3 x e5m2: the kernel's ring holds one fp8 format
        return False
    if a.device.type != "cuda" or torch.cuda.get_device_capability(a.device) != (9, 0):
        return False
    if (a.data_ptr() | b.data_ptr() | out.data_ptr()) % 16 or (bias is not None and bias.stride(-1) != 1):
        return False
    from tritonblas.kernels import gluon_hopper

    if bias is not None and bias.dtype not in gluon_hopper.BIAS_DTYPES:
        return False  # scaled_mm takes any floating bias; gluon_scaled_mm raises on fp64 / fp8
    if not fills(m, n, 256 if fast_accum else 128, sm_count(a.device)):  # gluon_scaled_mm's tile
        return False
    row_wise = tuple(scale_a.shape) == (m, 1) and tuple(scale_b.shape) == (1, n)
    if not (scale_a.numel() == 1 and scale_b.numel() == 1) and not row_wise:
        return False
    if gluon_hopper.supports(m, n, k, a.dtype, a.stride(), b.stride(), out.stride(), out.dtype) is not None:
        return False
    with cuda_guard(a.device):
        gluon_hopper.gluon_scaled_mm(a, b, scale_a, scale_b, out_dtype=out.dtype, bias=bias,
                                     use_fast_accum=bool(fast_accum), out=out)
    return True


def gluon_config(m: int, n: int, sms: int) -> tuple[int, int] | None:
    """(block_n, stages) of the experiment for an M x N output on ``sms`` SMs: 128x256x64 with 3
    stages when N >= 256 and its tiles fill the machine (:func:`fills`), else 128x128x64 with 4 when
    those do, else None (origami's pick: :data:`GLUON_FILL`)."""
    if n >= 256 and fills(m, n, 256, sms):
        return 256, 3
    return (128, 4) if fills(m, n, 128, sms) else None


def remember(fkey: tuple, a: torch.Tensor, b: torch.Tensor, out: torch.Tensor, taken: tuple,
             profile: Any, info: DeviceInfo | None) -> None:
    """Store a :class:`GluonEntry` for ``fkey`` after :func:`gluon_gemm` took the call (``taken``: its
    bias and gluon_matmul's tile keywords), under the device mapping a :class:`~tritonblas.launchcache.FastEntry` would be checked
    against (none when it is not cached)."""
    device = out.device
    if info is None:
        return
    devkey = device_key(device, profile)
    if _device.CACHE.get(devkey) is not info:
        return
    from tritonblas.kernels import gluon_hopper

    f = GluonEntry()
    f.info, f.devkey, f.out_shape, f.out_align = info, devkey, tuple(out.shape), out.data_ptr() & 15
    bias, f.tile = taken  # the gluon_matmul keywords of the first launch: every warm launch uses them
    f.has_bias, f.mnk = bias is not None, (a.shape[0], b.shape[1], a.shape[1])
    f.views = tuple((tuple(t.shape), t.stride()) for t in (a, b, out))  # the kernel's operands, for call_ready
    f.warm = None if raw_stream is None else gluon_hopper.bound_launch(a, b, out, bias, **f.tile)
    f.raw = None if f.warm is None else f.warm[0]  # what raw_ready reads
    f.staged, f.cuda_index = False, device.index
    store(fkey, f)



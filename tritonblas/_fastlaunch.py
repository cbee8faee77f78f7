"""Triton's C launcher called directly for warm launches of an already validated key (CUDA only).

Why: measured on the H200 host (Triton 3.6, torch 2.11, 2026-11-30, ``benchmarks/profile_dispatch.py``),
``CompiledKernel.run`` costs 11.4 µs per launch of our TMA kernels and 6.7 µs of the pointer kernels,
against 11.2 µs for a whole ``torch.matmul`` of 64×64×64. Two things in it are redundant for a key the
dispatcher has already checked:

- a Python wrapper walks every argument to expand each host ``TensorDescriptor``, encoding a fresh
  ``CUtensorMap`` (``cuTensorMapEncodeTiled``) per descriptor per launch;
- the C launcher calls ``data_ptr()`` and ``cuPointerGetAttribute`` for every tensor argument.

:func:`bind` takes Triton's ``CompiledKernel`` apart once (the raw ``launch`` entry point, the
descriptor metadata, the launch flags) and :class:`RawLauncher` then launches with

- pointers passed as integers, which the C launcher takes as they are (the dispatcher's fast key
  already fixes each tensor's device, dtype, shape and strides, so the check is the same each time);
- descriptor expansions cached per base address: a descriptor depends only on the address, the
  shape, the strides, the block and the swizzle, and the key fixes all but the address.

Everything is feature-detected against the Triton in use (3.6's ``CudaLauncher`` and its
``wrap_handle_tensordesc`` wrapper); when anything differs — another Triton, a kernel that needs
global or profile scratch, a cooperative launch, fp4 padding — :func:`bind` returns None and the
dispatcher keeps ``CompiledKernel.run``. :func:`bind` also checks its own expansion of the
prepared descriptors against Triton's before it is trusted.
"""

from __future__ import annotations

from typing import Any

__all__ = ["RawLauncher", "bind", "hooked", "launch_hooks_on"]

# Descriptor expansions kept per operand of one compiled kernel and key, oldest evicted first. Every
# layer of a model with the same weight shape shares one key, so the weight operand sees one address
# per layer (BERT-large: q, k, v and o of 24 layers, 96 addresses; a 32-layer 8B decoder's k and v:
# 64); 16 with clear-on-full re-encoded every weight descriptor on every call there. An expansion
# depends only on the address once the key fixes shape, strides and block, so a kept one is never stale.
_CACHE_MAX = 512


def hooked(hook) -> bool:
    """Whether a Triton launch-hook slot holds a hook that would run. Triton 3.6 keeps an empty
    ``HookChain`` (``.calls == []``) in both slots by default, which is none: reading "not None" as
    "a hook" sent every warm Gluon launch through Triton's own (~150 us of host time per call on the
    H200 host, 2026-12-01: 186 us per call with the raw launcher bound, 191 without; the kernel itself
    49 us in a CUDA graph, benchmarks/gluon_ksweep.py)."""
    return hook is not None and bool(getattr(hook, "calls", True))


def launch_hooks_on() -> bool:
    """Whether a Triton launch hook (a profiler's) is installed: then launches go through Triton."""
    from triton import knobs

    rt = knobs.runtime
    return hooked(rt.launch_enter_hook) or hooked(rt.launch_exit_hook)


class RawLauncher:
    """One compiled kernel's raw launch, with the per-address descriptor caches of its operands."""

    __slots__ = ("launch", "function", "packed", "flags", "desc", "fill", "cache")

    def __init__(self, launch, function, packed, flags: tuple, desc: dict[int, tuple], fill) -> None:
        self.launch = launch          # the C entry point: (grid, stream, function, flags, scratch, meta, hooks, *args)
        self.function = function      # the CUfunction handle
        self.packed = packed          # (num_warps, num_ctas, shared)
        self.flags = flags            # (launch_cooperative_grid, launch_pdl)
        self.desc = desc              # operand position → (meta, shape, strides, padding) for TMA operands
        self.fill = fill              # triton's fill_tma_descriptor
        self.cache = {pos: {} for pos in desc}

    def expand(self, pos: int, ptr: int) -> tuple:
        """The launcher arguments of the descriptor at ``pos`` over base address ``ptr``."""
        cache = self.cache[pos]
        hit = cache.get(ptr)
        if hit is None:
            meta, shape, strides, padding, host_dtype = self.desc[pos]
            tmap = self.fill(ptr, meta["swizzle"], meta["elem_size"], host_dtype, meta["block_size"],
                             shape, strides, padding)
            if len(cache) >= _CACHE_MAX:
                del cache[next(iter(cache))]
            hit = cache[ptr] = (tmap, *shape, *strides)
        return hit

    def __call__(self, grid0: int, stream: int, args: tuple) -> None:
        self.launch(grid0, 1, 1, stream, self.function, *self.flags, None, None, self.packed, None, None, None,
                    *args)

    def rebind(self, desc_templates: dict[int, Any]) -> "RawLauncher | None":
        """This compiled kernel's launcher for another key: same descriptor positions, blocks and dtypes
        (the compiled kernel fixes them), the shapes and strides of ``desc_templates``. :func:`bind`'s
        check against Triton's ``make_tensordesc_arg`` needs no repeat: for a descriptor metadata
        without fp4 padding (``bind`` refused that) Triton's expansion is ``(map, *shape, *strides)``
        whatever the shape. None when the positions differ or a descriptor is not unit-stride inside."""
        if set(desc_templates) != set(self.desc):
            return None
        desc = {}
        for pos, d in desc_templates.items():
            meta, _, _, _, host_dtype = self.desc[pos]
            strides = list(d.strides)
            if strides[-1] != 1:
                return None
            desc[pos] = (meta, list(d.shape), strides, 1 if d.padding == "nan" else 0, host_dtype)
        return RawLauncher(self.launch, self.function, self.packed, self.flags, desc, self.fill)


def bind(compiled: Any, desc_templates: dict[int, Any]) -> RawLauncher | None:
    """A :class:`RawLauncher` for ``compiled`` (Triton's CompiledKernel) whose tensor-descriptor
    operands are at the positions of ``desc_templates`` (position → a prepared TensorDescriptor),
    or None when this Triton's launcher is not the one this module knows."""
    try:
        return _bind(compiled, desc_templates)
    except Exception:  # noqa: BLE001 - an optimisation: any surprise keeps Triton's own launch
        return None


def _bind(compiled: Any, desc_templates: dict[int, Any]) -> RawLauncher | None:
    launcher = getattr(compiled, "run", None)
    if type(launcher).__name__ != "CudaLauncher":
        return None
    if launcher.global_scratch_size or launcher.profile_scratch_size or launcher.launch_cooperative_grid:
        return None
    if getattr(launcher, "num_ctas", 1) != 1:
        return None
    fn = launcher.launch
    if not desc_templates:
        if getattr(fn, "__closure__", None):  # a wrapper we would not see through
            return None
        return RawLauncher(fn, compiled.function, compiled.packed_metadata,
                           (launcher.launch_cooperative_grid, launcher.launch_pdl), {}, None)
    code = getattr(fn, "__code__", None)
    if code is None or not fn.__closure__:
        return None
    cells = dict(zip(code.co_freevars, (c.cell_contents for c in fn.__closure__)))
    raw, indices, metas = cells.get("launcher"), cells.get("tensordesc_indices"), cells.get("tensordesc_meta")
    if raw is None or indices is None or metas is None or set(indices) != set(desc_templates):
        return None
    from triton.backends.nvidia import driver as nvdriver
    from triton.runtime import driver as rt_driver

    host_dtypes = nvdriver.TMA_DTYPE_DEVICE_TO_HOST
    fill = rt_driver.active.utils.fill_tma_descriptor
    desc = {}
    for pos, meta in zip(sorted(indices), metas):
        d = desc_templates[pos]
        if meta is None or meta.get("fp4_padded") or list(d.strides)[-1] != 1:
            return None
        desc[pos] = (meta, list(d.shape), list(d.strides), 1 if d.padding == "nan" else 0,
                     host_dtypes[meta["elem_type"]])
        theirs = nvdriver.make_tensordesc_arg(d, meta)  # Triton's expansion; only the map itself differs
        if len(theirs) != 1 + 2 * len(d.shape) or tuple(theirs[1:]) != (*desc[pos][1], *desc[pos][2]):
            return None
    return RawLauncher(raw, compiled.function, compiled.packed_metadata,
                       (launcher.launch_cooperative_grid, launcher.launch_pdl), desc, fill)

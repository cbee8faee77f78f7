"""Workarounds for Triton's CPU interpreter, applied only when ``TRITON_INTERPRET=1``.

- **bf16 ``tl.dot``**: the interpreter stores bf16 as raw uint16 and calls ``np.matmul`` on the bits
  (relative error ~1e10, Triton 3.6 and 3.9). We widen bf16 operands to fp32 first, which is exact.
- **fp32 → bf16 casts truncate** (``cast_impl`` calls its converter with no rounding mode), where
  the GPU rounds to nearest even: results were off by up to one bf16 ulp. We round to nearest even.
- **bf16 → fp32 casts lose subnormals** (the same bit-level converter: 0x0001 became 0, 0x0003
  became 2⁻¹²⁷, so a bf16 C or bias of 9.2e-41 read 0). We widen by the 16-bit shift (exact).
- **fp8 special values**: the interpreter converts fp8 bit by bit with no NaN/inf cases (an e4m3fn
  NaN read as 480, so a NaN input gave a finite ``scaled_mm`` result). fp8 ``tl.dot`` operands and
  fp8 casts go through a 256-entry table of torch's own conversion instead (exact).
- **casts to fp8** (``x.to(tl.float8e4nv)``, an fp8 output's store): the same bit-level converter
  clamps the exponent, drops the rounding carry and knows no NaN: an fp32 NaN became 384, inf and
  1000 became 256 in e4m3fn, 480 became 256 in e5m2. Round-to-nearest-even casts from fp32, fp16
  and bf16 to fp8 now do what sm_90 does (``cvt.rn.satfinite.e4m3x2.f32`` / ``.e5m2x2``, seen in
  the PTX): round to nearest even, saturate to ±max finite (inf included), keep NaN. That is
  torch's conversion for e4m3fn; torch's e5m2 overflows to ±inf instead, which the kernels' own
  output cast (``kernels._epilogue.to_out``) adds on top. Triton's ``.to()`` from fp8 to a wider float also takes this route (not
  ``cast_impl``): an fp8 C or bias read NaN as 480 (e4m3fn) or 114688 and inf as 65536 (e5m2); it
  goes through the table too.
- **AMD's fnuz fp8 types** (``tl.float8e4b8`` / ``float8e5b16``, torch's ``float8_e4m3fnuz`` / ``e5m2fnuz``): the
  interpreter's ``dtype.to_ir`` names no fnuz type ("fail to convert fp8e4b8 to ir type") though its builder has
  them; the patched ``to_ir`` asks the builder for them (the values then go through the fp8 tables above).
- **numpy ≥ 2.4 with Triton 3.6**: ``int(handle.data)`` on a 1-element array raises
  ``TypeError: only 0-dimensional arrays can be converted to Python scalars`` (every loop with a
  runtime bound fails). Backport of Triton 3.9's fix: convert the single element explicitly.

:func:`apply` is called lazily by the launch code (never at import) and is idempotent. It patches
``triton.runtime.interpreter`` in place, so it also fixes user kernels run in the same process.

:func:`program_order` is a test hook: the interpreter runs a launch's programs one at a time in id
order, so a Stream-K/split-K fix-up would only ever see one arrival order (the highest contributor
last). Inside ``with program_order("reversed" | "even_odd" | seed):`` the programs of every launch
run in that order instead (``tl.program_id`` returns the permuted id). Interpreter only, zero cost
on GPU (nothing in the kernels changes); outside the block the order is the interpreter's own.
"""

from __future__ import annotations

import contextlib
import random
import sys
import threading

from tritonblas import settings

__all__ = ["apply", "interpreting", "tensor_index", "serial", "program_order", "permutation"]

_APPLIED = False
_ORDER = threading.local()
_ORDER_HOOK = False
_LAUNCH_LOCK = threading.RLock()


class _NoLock:
    __slots__ = ()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None


_NO_LOCK = _NoLock()


class _InterpretedLaunch:
    """The lock, and a profiler range (``INTERPRETER_RANGE``) around the interpreter's own tensor
    copies (it copies every argument to host and back per launch), so tests can tell them apart
    from the library's."""

    __slots__ = ("_range",)

    def __enter__(self):
        import torch

        _LAUNCH_LOCK.acquire()
        self._range = torch.profiler.record_function(INTERPRETER_RANGE)
        self._range.__enter__()
        return self

    def __exit__(self, *exc):
        try:
            self._range.__exit__(*exc)
        finally:
            _LAUNCH_LOCK.release()


INTERPRETER_RANGE = "tritonblas.interpreter_launch"


def serial():
    """A context manager that serialises kernel launches under the interpreter (one process-wide
    re-entrant lock, inside a profiler range named ``INTERPRETER_RANGE``) and does nothing otherwise.
    Triton 3.6's interpreter keeps per-launch state in module globals (the grid index, the patched
    builtins); two threads launching at once failed with ``InterpreterError`` in ~15% of calls
    (2 threads, 2026-12-01). GPU launches are not serialised."""
    return _InterpretedLaunch() if interpreting() else _NO_LOCK


# whether tritonblas's kernels were decorated under the interpreter; None until they are
_DECORATED: list = [None]


def kernels_interpreted() -> bool:
    """Whether tritonblas's kernels run under the interpreter. Triton reads ``TRITON_INTERPRET`` when a
    kernel is decorated (``tritonblas.kernels``' first import), not at launch: once the kernels exist,
    their type decides; before, the environment now does (they will be decorated under it)."""
    known = _DECORATED[0]
    if known is None:
        gemm = sys.modules.get("tritonblas.kernels.gemm")
        if gemm is None:
            return settings.interpret()
        known = _DECORATED[0] = type(gemm.gemm_kernel).__name__ == "InterpretedFunction"
    return known


def interpreting() -> bool:
    """``TRITON_INTERPRET`` is on now and the kernels were decorated under it: only then can CPU tensors
    run. Set after the kernels were compiled for a GPU, it would send CPU pointers to GPU launches
    (Triton: "Pointer argument ... cannot be accessed from Triton"), so it counts as off."""
    return settings.interpret() and kernels_interpreted()


def cpu_refusal() -> str:
    """Why CPU tensors cannot run the kernels now (:func:`interpreting` is False): the message the
    direct calls raise and the drop-in's fall-through reason."""
    if settings.interpret():
        return ("TRITON_INTERPRET=1 was set after tritonblas's kernels were compiled for the GPU (Triton reads it "
                "when tritonblas.kernels is first imported): set it before importing tritonblas")
    return "set TRITON_INTERPRET=1 to run the kernels on CPU tensors"


def _fp32_to_bf16_rne(x):
    """fp32 array → bf16 bits (uint16), round to nearest even, NaN kept quiet, overflow → ±inf."""
    import numpy as np

    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    rounded = ((u + np.uint32(0x7FFF) + ((u >> 16) & np.uint32(1))) >> 16).astype(np.uint16)
    nan = np.isnan(x)
    return np.where(nan, ((u >> 16) | np.uint32(0x40)).astype(np.uint16), rounded)


def _fp8_tables(tl) -> dict:
    """Triton fp8 dtype -> its 256 values as fp32 (numpy), from torch's own conversion: exact, with
    NaN (and e5m2's inf) where the format has them. The interpreter's bit-level converter knows no
    special values: an e4m3fn NaN (0x7F) became 480, an e5m2 inf 65536 in a cast."""
    import torch

    pairs = ((tl.float8e4nv, torch.float8_e4m3fn), (tl.float8e5, torch.float8_e5m2),
             (getattr(tl, "float8e4b8", None), getattr(torch, "float8_e4m3fnuz", None)),
             (getattr(tl, "float8e5b16", None), getattr(torch, "float8_e5m2fnuz", None)))
    codes = torch.arange(256, dtype=torch.int32).to(torch.uint8)
    return {t: codes.view(d).float().numpy() for t, d in pairs if t is not None and d is not None}


def _to_fp8_dtypes(tl) -> dict:
    """Triton fp8 dtype -> the torch dtype whose conversion a cast to it follows under the interpreter."""
    import torch

    pairs = ((tl.float8e4nv, torch.float8_e4m3fn), (tl.float8e5, torch.float8_e5m2),
             (getattr(tl, "float8e4b8", None), getattr(torch, "float8_e4m3fnuz", None)),
             (getattr(tl, "float8e5b16", None), getattr(torch, "float8_e5m2fnuz", None)))
    return {t: d for t, d in pairs if t is not None and d is not None}


def tensor_index(self) -> int:
    """``tl.tensor.__index__`` under the interpreter: the scalar of a 1-element handle (Triton 3.9's
    fix; Triton 3.6's ``int(handle.data)`` fails on 1-element arrays with numpy >= 2.4)."""
    import numpy as np

    data = np.asarray(self.handle.data)
    return int(data.reshape(-1)[0]) if data.size == 1 else int(data)


def apply() -> bool:
    """Install the workarounds if the interpreter is active; returns whether they are installed."""
    global _APPLIED
    if _APPLIED:
        return True
    if not interpreting():
        return False
    import numpy as np
    import triton.language as tl
    from triton.runtime import interpreter as interp

    original_dot = interp.InterpreterBuilder.create_dot

    fp8 = _fp8_tables(tl)

    def _widen(h):
        if h.dtype == tl.bfloat16:
            data = (h.data.astype(np.uint32) << 16).view(np.float32)
            return interp.TensorHandle(data, tl.float32)
        table = fp8.get(h.dtype)
        if table is not None:
            return interp.TensorHandle(table[h.data.view(np.uint8)], tl.float32)
        return h

    def create_dot(self, a, b, d, input_precision, max_num_imprecise_acc):
        return original_dot(self, _widen(a), _widen(b), d, input_precision, max_num_imprecise_acc)

    interp.InterpreterBuilder.create_dot = create_dot

    original_cast = interp.InterpreterBuilder.cast_impl

    def cast_impl(self, src, dst_type):
        if src.dtype.scalar == tl.float32 and dst_type.scalar == tl.bfloat16:
            return interp.TensorHandle(_fp32_to_bf16_rne(src.data), tl.bfloat16)
        if src.dtype.scalar == tl.bfloat16 and dst_type.scalar.is_floating() and dst_type.scalar != tl.bfloat16:
            src = _widen(src)  # exact (the bit-level converter zeroed or halved bf16 subnormals)
            if dst_type.scalar == tl.float32:
                return src
        if src.dtype.scalar in fp8 and dst_type.scalar.is_floating() and dst_type.scalar.primitive_bitwidth > 8:
            src = _widen(src)  # exact, specials kept; then fp32 to the target as usual
            if dst_type.scalar == tl.float32:
                return src
            return cast_impl(self, src, dst_type)
        return original_cast(self, src, dst_type)

    interp.InterpreterBuilder.cast_impl = cast_impl

    original_fp_to_fp = interp.InterpreterBuilder.create_fp_to_fp
    to_fp8 = _to_fp8_dtypes(tl)
    rtne = getattr(getattr(interp, "_ir", None), "ROUNDING_MODE", None)
    rtne = getattr(rtne, "RTNE", None)

    def create_fp_to_fp(self, src, dst_type, rounding_mode):
        target = to_fp8.get(dst_type.scalar)
        if (target is not None and src.dtype.scalar in (tl.float32, tl.float16, tl.bfloat16)
                and (rounding_mode is None or rounding_mode == rtne)):
            import torch

            wide = np.array(_widen(src).data, copy=True)
            out = torch.from_numpy(wide).to(target)
            bits = out.view(torch.uint8).clone()
            inf = torch.isinf(out.float())
            if bool(inf.any()):  # satfinite: overflow (and ±inf itself) gives ±max finite
                big = torch.finfo(target).max
                sat = torch.tensor([big, -big]).to(target).view(torch.uint8)
                neg = torch.from_numpy(wide) < 0
                bits[inf & ~neg] = sat[0]
                bits[inf & neg] = sat[1]
            return interp.TensorHandle(bits.numpy().reshape(wide.shape), dst_type.scalar)
        if (src.dtype.scalar in fp8 and dst_type.scalar.is_floating()
                and dst_type.scalar.primitive_bitwidth > 8):
            return cast_impl(self, src, dst_type)  # the exact table, specials kept
        return original_fp_to_fp(self, src, dst_type, rounding_mode)

    interp.InterpreterBuilder.create_fp_to_fp = create_fp_to_fp

    original_patch = interp._patch_lang_tensor

    def _patch_lang_tensor(tensor, scope):
        original_patch(tensor, scope)
        scope.set_attr(tensor, "__index__", tensor_index)

    interp._patch_lang_tensor = _patch_lang_tensor

    original_core = interp._patch_lang_core
    fnuz_ty = {"fp8e4b8": "get_fp8e4b8_ty", "fp8e5b16": "get_fp8e5b16_ty"}

    def _patch_lang_core(lang, scope):
        original_core(lang, scope)
        to_ir = lang.dtype.to_ir  # the interpreter's, which names no fnuz fp8 type

        def fnuz_to_ir(self, builder):
            getter = fnuz_ty.get(self.name)
            return getattr(builder, getter)() if getter is not None else to_ir(self, builder)

        scope.set_attr(lang.dtype, "to_ir", fnuz_to_ir)

    interp._patch_lang_core = _patch_lang_core
    _APPLIED = True
    return True


def permutation(order: "str | int", n: int) -> list[int]:
    """The run order of ``n`` programs: ``"forward"``, ``"reversed"``, ``"even_odd"`` (even ids, then
    odd) or an int seed (a random permutation)."""
    if order == "forward":
        return list(range(n))
    if order == "reversed":
        return list(range(n - 1, -1, -1))
    if order == "even_odd":
        return list(range(0, n, 2)) + list(range(1, n, 2))
    if isinstance(order, int) and not isinstance(order, bool):
        perm = list(range(n))
        random.Random(order).shuffle(perm)
        return perm
    raise ValueError(f"program_order: expected 'forward', 'reversed', 'even_odd' or an int seed, got {order!r}")


@contextlib.contextmanager
def program_order(order: "str | int"):
    """Run the programs of every interpreted launch in this thread, inside the block, in ``order``
    (see :func:`permutation`; axis 0 only, which is every tritonblas kernel's grid). Raises
    RuntimeError when the interpreter is not active: on a GPU the order is the hardware's."""
    global _ORDER_HOOK
    if not interpreting():
        raise RuntimeError("program_order: needs TRITON_INTERPRET=1 (the GPU picks its own order)")
    permutation(order, 1)  # validate now
    from triton.runtime import interpreter as interp

    if not _ORDER_HOOK:
        original = interp.InterpreterBuilder.set_grid_idx

        def set_grid_idx(self, x, y, z):
            active = getattr(_ORDER, "value", None)
            if active is not None:
                n = self.grid_dim[0]
                perm = active[1].get(n)
                if perm is None:
                    perm = active[1][n] = permutation(active[0], n)
                x = perm[x]
            original(self, x, y, z)

        interp.InterpreterBuilder.set_grid_idx = set_grid_idx
        _ORDER_HOOK = True
    outer = getattr(_ORDER, "value", None)
    _ORDER.value = (order, {})
    try:
        yield
    finally:
        _ORDER.value = outer

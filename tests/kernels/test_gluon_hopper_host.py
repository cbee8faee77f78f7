"""Host side of the Gluon kernel on CPU, with the kernel, its descriptors and the raw launcher stood in."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from tritonblas.kernels import gluon_hopper

pytestmark = pytest.mark.skipif(not gluon_hopper.HAS_GLUON, reason="this Triton has no Gluon")


def test_an_unaligned_bias_does_not_take_the_warm_key_of_an_aligned_one(monkeypatch):
    """Triton specialises bias_ptr on 16-byte alignment (``native_specialize_impl``: 'D'), so the
    kernel compiled for an aligned bias must not be raw-launched with an unaligned one."""
    from tritonblas import _fastlaunch

    cold, warm = [], []
    names = ["a_desc", "b_desc", "c_desc", "bias_ptr", "sa_ptr", "sb_ptr", "M", "N", "K", "BLOCK_M", "BLOCK_N",
             "BLOCK_K", "STAGES", "GROUP_M", "A_MMAJOR", "B_KMAJOR", "HAS_BIAS", "SCALE", "MAX_IMPRECISE",
             "PRODUCER_REGS", "num_warps"]

    class Kernel:
        params = [SimpleNamespace(name=n) for n in names]

        def __getitem__(self, grid):
            def launch(*args, **kw):
                cold.append(args[3].data_ptr() & 15)
                return SimpleNamespace(packed_metadata=())
            return launch

    class Raw:
        def expand(self, i, ptr):
            return (ptr,)

        def __call__(self, grid0, stream, args):
            warm.append(args[3] & 15)

    monkeypatch.setattr(gluon_hopper, "gluon_gemm_ws_kernel", Kernel(), raising=False)
    monkeypatch.setattr(gluon_hopper, "make_descriptors", lambda *a: (None, None, None, False, False))
    monkeypatch.setattr(gluon_hopper, "_launch_hooks_on", lambda: False)
    monkeypatch.setattr(_fastlaunch, "bind", lambda compiled, descs: Raw())
    monkeypatch.setattr(gluon_hopper, "_current_stream", lambda index: 0)  # no CUDA device here
    monkeypatch.setattr(gluon_hopper, "_WARM", {})
    a, b, out = torch.zeros(128, 64, dtype=torch.bfloat16), torch.zeros(64, 128, dtype=torch.bfloat16), \
        torch.zeros(128, 128, dtype=torch.bfloat16)
    buf = torch.zeros(256)
    aligned, unaligned = buf[:128], buf[1:129]
    assert aligned.data_ptr() % 16 == 0 and unaligned.data_ptr() % 16 == 4

    def go(bias):
        gluon_hopper._launch(a, b, out, bias, None, None, 0, 0, 128, 128, 64, 4, 8, 132)

    go(aligned)
    go(aligned)
    assert (cold, warm) == ([0], [0])
    go(unaligned)
    assert cold == [0, 4], f"an unaligned bias was raw-launched on the aligned bias's kernel: {cold}, {warm}"

"""benchmarks/shapes/kmajor.yaml (training): every shape is in the register-read regime as tf32 and
as fp8 on the h200 profile, none is a held-out shape, and the file is what shapes_gen.py writes."""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import origami  # noqa: E402
from benchmarks import shapes_gen  # noqa: E402
from origami.kmajor import mma_reads_through_registers  # noqa: E402
from tritonblas.heldout import heldout_dims  # noqa: E402

FILE = ROOT / "benchmarks" / "shapes" / "kmajor.yaml"


def test_kmajor_shapes_are_in_the_register_read_regime_and_not_held_out():
    hw = origami.load_profile("h200")
    entries = yaml.safe_load(FILE.read_text())
    assert entries == shapes_gen.kmajor() and len(entries) == sum(shapes_gen.KMAJOR_PER_SET.values())
    held = {d[:3] for d in heldout_dims()}
    for e in entries:
        assert (e["m"], e["n"], e["k"]) not in held, e
        for dtype, out in (("tf32", "fp32"), ("fp8_e4m3", "bf16")):
            p = origami.GemmProblem(e["m"], e["n"], e["k"], dtype, dtype, out)
            assert p.align_bytes == 16 and mma_reads_through_registers(p, hw), (e, dtype)


def test_unaligned_shapes_read_b_through_registers_without_tma_and_are_not_held_out():
    """benchmarks/shapes/unaligned.yaml (training): what shapes_gen.unaligned() draws; as tf32 and as fp8
    every shape is under 16 bytes aligned (no TMA, so no K-major staging of B) and in the register-read
    regime on the h200 profile, fp8 also register-staged (under 4 bytes); none is a held-out shape."""
    from origami.space import register_staged

    hw = origami.load_profile("h200")
    entries = yaml.safe_load((ROOT / "benchmarks" / "shapes" / "unaligned.yaml").read_text())
    assert entries == shapes_gen.unaligned() and len(entries) == sum(shapes_gen.UNALIGNED_PER_SET.values())
    held = {d[:3] for d in heldout_dims()}
    for e in entries:
        assert (e["m"], e["n"], e["k"]) not in held, e
        for dtype, out in (("tf32", "fp32"), ("fp8_e4m3", "bf16")):
            p = _contiguous(e, dtype, out)
            assert p.align_bytes < 16 and mma_reads_through_registers(p, hw), (e, dtype)
        assert register_staged(_contiguous(e, "fp8_e4m3", "bf16"), hw), e


def _contiguous(e: dict, dtype: str, out: str) -> origami.GemmProblem:
    """The problem of contiguous row-major operands of entry ``e``: its alignment from the row strides."""
    align = origami.GemmProblem.contiguous_align_bytes(e["m"], e["n"], e["k"], dtype, dtype, out)
    return origami.GemmProblem(e["m"], e["n"], e["k"], dtype, dtype, out, align_bytes=align)

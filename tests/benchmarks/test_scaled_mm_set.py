"""benchmarks/shapes/scaled_mm.yaml (fp8 training in scaled_mm's layout): what shapes_gen.py writes, every shape an
e4m3 -> bf16 problem with a column-major B and N, K multiples of 16 (torch._scaled_mm's rule), none held out and
none of fp8_ceiling.yaml's (swept exhaustively there). CPU."""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from benchmarks import shapes_gen  # noqa: E402
from origami import Layout  # noqa: E402
from origami.shapes import load_shapes  # noqa: E402
from tritonblas.heldout import heldout_dims  # noqa: E402

SHAPES = ROOT / "benchmarks" / "shapes"


def test_the_file_is_the_generators_output():
    assert yaml.safe_load((SHAPES / "scaled_mm.yaml").read_text()) == shapes_gen.sets()["scaled_mm"]


def test_every_shape_is_scaled_mms_problem_and_none_is_held_out_or_swept_in_the_ceiling_set():
    probs = load_shapes(SHAPES / "scaled_mm.yaml")
    ceiling = {(p.m, p.n, p.k) for p in load_shapes(SHAPES / "fp8_ceiling.yaml")}
    held = {d[:3] for d in heldout_dims()}
    assert len(probs) == 43
    for p in probs:
        assert (p.a_dtype.value, p.b_dtype.value, p.c_dtype.value) == ("fp8_e4m3", "fp8_e4m3", "bf16"), p
        assert (p.a_layout, p.b_layout) == (Layout.N, Layout.T), p
        assert p.n % 16 == 0 and p.k % 16 == 0 and p.align_bytes == 16, p
        assert (p.m, p.n, p.k) not in held | ceiling, p
    assert len({(p.m, p.n, p.k) for p in probs}) == len(probs)

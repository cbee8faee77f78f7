"""``GemmProblem.contiguous_align_bytes``: the alignment class contiguous operands really have.

The shapes loader, the sweep reader and the CLI use it for shapes that do not say ``align_bytes``,
so the model sees what ``tritonblas.matmul`` sees for freshly allocated tensors (before 2026-11-30
2048x511x4099 was modelled as 16-byte aligned while the sweep timed it on the pointer kernels).
"""

from __future__ import annotations

import csv

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from origami import GemmProblem
from origami.fit import read_sweep
from origami.shapes import parse_shapes

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("m, n, k, dtype, layouts, batch, want", [
    (4096, 1000, 7000, "bf16", "NN", 1, 16),
    (2048, 511, 4099, "bf16", "NN", 1, 2),
    (32768, 1056, 479, "bf16", "NN", 1, 2),   # K = 479: A's rows are 958 bytes apart
    (32768, 1056, 479, "bf16", "TN", 1, 16),  # A stored K x M: its rows are M = 32768 elements apart
    (1, 8192, 8191, "bf16", "NN", 1, 16),     # M = 1: A's and C's row strides are never stepped over
    (1, 8191, 8192, "bf16", "NN", 1, 2),      # N = 8191 is B's row stride
    (1, 8192, 8191, "bf16", "NT", 1, 2),
    (333, 333, 333, "fp32", "NN", 1, 4),
    (4096, 4096, 4099, "fp8_e4m3", "NN", 1, 1),
    (64, 64, 64, "bf16", "NN", 3, 16),
    (3, 5, 8, "bf16", "NN", 2, 2),           # batch strides M*K*2 = 48, K*N*2 = 80, M*N*2 = 30 bytes
])
def test_examples(m, n, k, dtype, layouts, batch, want):
    c = "bf16" if dtype == "fp8_e4m3" else dtype
    got = GemmProblem.contiguous_align_bytes(m, n, k, dtype, dtype, c, layouts[0], layouts[1], batch)
    assert got == want


@settings(max_examples=150, deadline=None)
@given(m=st.integers(1, 70), n=st.integers(1, 70), k=st.integers(1, 70), batch=st.integers(1, 3),
       dtype=st.sampled_from(["bf16", "fp32"]), la=st.sampled_from("NT"), lb=st.sampled_from("NT"))
def test_matches_the_dispatchers_alignment_of_real_contiguous_tensors(m, n, k, batch, dtype, la, lb):
    """What the kernels' launcher computes from real tensors (tritonblas.plan.alignment_bytes, minimum
    over a, b and out) for freshly allocated contiguous operands of these layouts."""
    from tritonblas import plan

    tdt = {"bf16": torch.bfloat16, "fp32": torch.float32}[dtype]

    def make(rows, cols, layout):
        shape = (batch, rows, cols) if batch > 1 else (rows, cols)
        if layout == "T":
            t = torch.empty(*shape[:-2], cols, rows, dtype=tdt)
            return t.transpose(-1, -2)
        return torch.empty(*shape, dtype=tdt)

    a, b, out = make(m, k, la), make(k, n, lb), make(m, n, "N")
    real = min(plan.alignment_bytes(t) for t in (a, b, out))
    real = min(real, 16)
    got = GemmProblem.contiguous_align_bytes(m, n, k, dtype, dtype, dtype, la, lb, batch)
    # the allocator's base addresses are 16-byte aligned or more; strides decide the rest
    assert got == real, (got, real)


def test_shapes_without_align_bytes_get_the_contiguous_alignment():
    probs = parse_shapes([{"m": 2048, "n": 511, "k": 4099}, {"m": 2048, "n": 511, "k": 4099, "align_bytes": 16},
                          {"m": 4096, "n": 1000, "k": 7000}])
    assert [p.align_bytes for p in probs] == [2, 16, 16]


def test_sweeps_without_the_column_are_read_at_the_contiguous_alignment(tmp_path):
    from dataclasses import fields

    from origami import TileConfig

    cfg_cols = [f.name for f in fields(TileConfig)]
    cols = ["m", "n", "k", "batch", "a_dtype", "b_dtype", "c_dtype", "a_layout", "b_layout", *cfg_cols, "median_ms"]
    path = tmp_path / "s.csv"
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(cols)
        for bm, ms in ((64, 0.2), (128, 0.1)):
            cfg = TileConfig("dp", bm, 64, 32, 4, 3)
            vals = [getattr(cfg, c) for c in cfg_cols]
            vals = ["" if v is None else getattr(v, "value", v) for v in vals]
            w.writerow([2048, 511, 4099, 1, "bf16", "bf16", "bf16", "N", "N", *vals, ms])
    (meas,) = read_sweep(path)
    assert meas.problem.align_bytes == 2

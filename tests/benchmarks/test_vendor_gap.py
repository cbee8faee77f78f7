"""benchmarks/vendor_gap.py --max-m: the decode-sized listing reads the recorded h200 data (CPU). Every row's
ratios are its own times' (best never above the pick: the pick is one of the recorded configs), only shapes
with at most M rows appear, and the summary counts the rows it lists."""

from __future__ import annotations

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import vendor_gap  # noqa: E402


def test_max_m_lists_skinny_shapes_with_their_own_ratios(capsys):
    assert vendor_gap.main(["--max-m", "16"]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = [ln.split() for ln in lines[1:] if re.match(r"h200", ln)]
    assert len(rows) >= 40  # the llm, skinny and calib sets' decode shapes
    for f in rows:
        m = int(f[1].split("x")[0])
        torch_us, pick_us, best_us, t_pick, t_best = map(float, f[5:10])
        assert m <= 16, f
        assert best_us <= pick_us, f
        assert abs(t_pick - torch_us / pick_us) < 2e-3 and abs(t_best - torch_us / best_us) < 2e-3, f
    summary = {ln.split(":")[0]: int(ln.split()[1]) for ln in lines if ln.startswith(("training:", "heldout:"))}
    assert sum(summary.values()) == len(rows)
    assert summary["training"] == sum(1 for f in rows if not f[0].startswith("h200_heldout"))


def test_aligned_class_is_the_rules():
    """``aligned_class`` splits as :func:`tritonblas.handover.vendor_aligned` decides: 2-byte, 16-byte-aligned,
    decode-sized (min(M, N) <= 16) or not; anything else is "other"."""
    from origami.problem import DType, GemmProblem

    def p(m, n, k, dt=DType.BF16, align=16):
        return GemmProblem(m=m, n=n, k=k, a_dtype=dt, align_bytes=align)

    assert vendor_gap.aligned_class(p(17, 4096, 4096)) == "aligned, min(M,N) > 16"
    assert vendor_gap.aligned_class(p(16, 4096, 4096)) == "aligned, min(M,N) <= 16"
    assert vendor_gap.aligned_class(p(4096, 16, 4096, DType.FP16)) == "aligned, min(M,N) <= 16"
    assert vendor_gap.aligned_class(p(4096, 4096, 4095, align=2)).startswith("other")
    assert vendor_gap.aligned_class(p(4096, 4096, 4096, DType.TF32, align=16)).startswith("other")


def test_classes_table_counts_every_shape_once(capsys):
    """--classes: one row per (split, class, GFLOP bucket); the rows' counts add up to the shapes the listing
    reads, and each ratio is the geometric mean of that group's torch/pick."""
    import math

    rows = vendor_gap.rows_of("h200")
    assert vendor_gap.main(["--classes"]) == 0
    lines = capsys.readouterr().out.splitlines()[1:]  # fixed-width fields: split 0-9, class 10-44, GFLOP 45-58,
    # n 59-63, torch/pick 64-74
    assert lines and sum(int(ln[59:63]) for ln in lines) == len(rows)
    first = lines[0]
    split, cls, bucket = first[:9].strip(), first[10:44].strip(), first[45:58].strip()
    group = [r["torch"] / r["pick"] for r in rows if r["split"] == split and vendor_gap.aligned_class(r["p"]) == cls
             and ((2 * r["p"].m * r["p"].n * r["p"].k * r["p"].batch / 1e9 < 100) == (bucket == "< 100 GFLOP"))]
    assert len(group) == int(first[59:63])
    assert abs(float(first[64:74]) - math.exp(sum(map(math.log, group)) / len(group))) < 1e-3

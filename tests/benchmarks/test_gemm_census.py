"""benchmarks/gemm_census.py on tiny twins (meta device, CPU): one row per projection of the model, each row's
FLOP from its own shapes, and the table's cumulative counts."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import gemm_census  # noqa: E402
import models  # noqa: E402

pytest.importorskip("transformers")


@pytest.mark.parametrize("name", ["gpt2-medium", "llama3-8b"])
def test_every_projection_is_counted_with_its_flop(name):
    import torch

    rows = gemm_census.gemm_flops(name, "train", tiny=True)
    model, inputs, _ = models.build(name, torch.bfloat16, "meta", tiny=True)
    projections = [m for m in model.modules() if type(m).__name__ in ("Linear", "Conv1D")]
    assert len(rows) >= len(projections) > 0
    tokens = inputs("train")["input_ids"].numel()
    want = sorted(2 * tokens * (m.in_features * m.out_features if type(m).__name__ == "Linear" else m.weight.numel())
                  for m in projections)
    got = sorted(f for op, f in rows if op in ("linear", "addmm"))
    assert got == want


def test_the_table_counts_calls_under_each_edge():
    rows = [("linear", 4e9), ("linear", 12e9), ("addmm", 30e9)]
    lines = gemm_census.table("m", rows, [5, 20, 50])
    assert lines[0] == "m: 3 forward GEMM calls, 46.0 GFLOP"
    assert [int(line.split(":")[1].split()[0]) for line in lines[1:]] == [1, 2, 3]

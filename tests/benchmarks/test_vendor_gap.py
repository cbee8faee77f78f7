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

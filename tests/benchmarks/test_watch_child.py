"""_harness.watch_child: a child's JSON progress lines, and a hang or a crash turned into a result."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from _harness import watch_child  # noqa: E402

CHILD = """
import json, sys, time
for i in range(3):
    print(json.dumps({"start": i}), flush=True)
    print("not json", flush=True)
    if i == int(sys.argv[1]):
        if sys.argv[2] == "hang":
            time.sleep(60)
        raise SystemExit(7)
    print(json.dumps({"item": i, "ok": True}), flush=True)
"""


def _events(tmp_path, at, how, **kw):
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    return list(watch_child([sys.executable, str(script), str(at), how], **kw))


def test_rows_then_exit(tmp_path):
    ev = _events(tmp_path, -1, "", timeout_s=30)
    assert [e[0] for e in ev] == ["start", "row"] * 3 + ["exit"]
    assert [e[1]["item"] for e in ev if e[0] == "row"] == [0, 1, 2]
    assert ev[-1][1] == 0


def test_hang_is_killed_and_names_the_item(tmp_path):
    ev = _events(tmp_path, 1, "hang", timeout_s=2, first_timeout_s=30)
    assert [e[0] for e in ev] == ["start", "row", "start", "hang"]
    assert ev[-1][1] == 1


def test_crash_reports_the_return_code(tmp_path):
    ev = _events(tmp_path, 2, "crash", timeout_s=30)
    assert ev[-1][0] == "exit" and ev[-1][1] == 7
    assert [e[1] for e in ev if e[0] == "start"] == [{"start": 0}, {"start": 1}, {"start": 2}]

"""origami.shapes: the one shapes-file reader (its json and line fast paths against the YAML parser)."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest
from yaml import safe_load as yaml_load

from origami import shapes
from origami.shapes import load_shapes, parse_shapes, parse_shapes_text


def _yaml_only(path: Path):
    """The file through the YAML parser alone (what load_shapes' fast paths must agree with)."""
    return parse_shapes(parse_shapes_text(path.read_text(), str(path)), str(path))


def test_fast_readers_agree_with_the_yaml_parser(tmp_path):
    """load_shapes' json and line readers give what the YAML parser gives, errors included."""
    rng = random.Random(13)
    lines = []
    for _ in range(500):
        e = {"m": rng.randint(0, 9000), "n": rng.randint(0, 9000), "k": rng.randint(0, 9000)}
        for key, values in (("a_dtype", ["fp16", "bf16", "fp8_e4m3", "tf32"]), ("b_layout", ["N", "T"]),
                            ("batch", [1, 3, 8]), ("align_bytes", [1, 2, 4, 16])):
            if rng.random() < 0.3:
                e[key] = rng.choice(values)
        lines.append("- {" + ", ".join(f"{k}: {v}" for k, v in e.items()) + "}")
    flow = tmp_path / "flow.yaml"
    flow.write_text("\n".join(lines) + "\n")
    assert shapes._flow_lines(flow.read_text()) is not None  # the line reader took it
    assert load_shapes(flow) == _yaml_only(flow)
    as_json = tmp_path / "s.json"
    as_json.write_text(json.dumps(yaml_load(flow.read_text())))
    assert load_shapes(as_json) == _yaml_only(flow)
    # values whose meaning depends on the YAML version, comments, block style: the YAML parser decides
    for text in ("- {m: 012, n: 1, k: 1}\n", "- {m: 1_000, n: 1, k: 1}\n", "- {m: 1, n: 1, k: 1}  # c\n",
                 "- {m: 0x10, n: 1, k: 1}\n", "- m: 1\n  n: 2\n  k: 3\n", "- {m: 64, n: 64, k: 64, a_dtype: fp8}\n"):
        assert shapes._flow_lines(text) is None, text
        f = tmp_path / "x.yaml"
        f.write_text(text)
        try:
            expected = _yaml_only(f)
        except ValueError as e:
            with pytest.raises(ValueError, match=re.escape(str(e))):
                load_shapes(f)
        else:
            assert load_shapes(f) == expected

"""benchmarks/shapes/decode.yaml (training): the per-token GEMMs of models.py's decoder LLMs in F.linear's
layout, none a held-out shape, the file what shapes_gen.py writes, and its model dimensions those models.py builds."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
for _p in (ROOT, ROOT / "benchmarks"):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

from benchmarks import shapes_gen  # noqa: E402
from origami.shapes import load_shapes  # noqa: E402
from tritonblas.heldout import heldout_dims  # noqa: E402

FILE = ROOT / "benchmarks" / "shapes" / "decode.yaml"


def test_decode_file_is_what_shapes_gen_writes_and_holds_no_held_out_shape():
    entries = yaml.safe_load(FILE.read_text())
    assert entries == shapes_gen.decode()
    held = {d[:3] for d in heldout_dims()}
    problems = load_shapes(FILE)
    assert len(problems) == len(entries) == len({(p.m, p.n, p.k) for p in problems})
    for p in problems:
        assert (p.m, p.n, p.k) not in held, p.describe()
        assert p.b_layout.value == "T" and p.a_layout.value == "N", p.describe()  # x @ W.T, W row-major [N, K]
    assert {p.m for p in problems} == set(shapes_gen.DECODE_ROWS)
    # batch-1 rows first: a sweep its budget stops keeps batch-1 decode whole
    rows = [p.m for p in problems]
    assert rows == sorted(rows)


def test_decode_dimensions_are_the_models_models_py_builds():
    pytest.importorskip("transformers")
    import models

    assert set(shapes_gen.DECODE_MODELS) == {m for m in models.LLMS if m != "gpt2-medium"}  # gpt2: Conv1D addmm
    got = {(e["m"], e["n"], e["k"]) for e in shapes_gen.decode()}
    for name, dims in shapes_gen.DECODE_MODELS.items():
        cfg = models.llm_config(name, tiny=False)
        head = cfg.hidden_size // cfg.num_attention_heads
        assert dims == (cfg.hidden_size, cfg.num_key_value_heads * head, cfg.intermediate_size, cfg.vocab_size), name
        h, kv, mlp, vocab = dims
        for m in shapes_gen.DECODE_ROWS:  # q/o, k/v, gate/up, down, lm_head: each a row of the file
            assert {(m, h, h), (m, kv, h), (m, mlp, h), (m, h, mlp), (m, vocab, h)} <= got, (name, m)

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


# --- the problems of a step (gemm_problems): what the aten layer runs, forward and backward


def _linears(model):
    return [m for m in model.modules() if type(m).__name__ in ("Linear", "Conv1D")]


@pytest.mark.parametrize("name", ["llama3-8b", "gpt2-medium"])
def test_a_training_step_runs_three_gemms_per_projection_in_their_layouts(name):
    """Forward x·Wᵀ (F.linear: W K-major, b_layout T; GPT-2's Conv1D: W (in, out), N), then dX = dY·W and
    dW = dYᵀ·X per projection, each a problem of its own sizes; the meta device's math attention adds none."""
    import torch

    from origami.problem import Layout

    every = gemm_census.gemm_problems(name, "train", tiny=True)
    model, inputs, _ = models.build(name, torch.bfloat16, "meta", tiny=True)
    tokens = inputs("train")["input_ids"].numel()
    projections = _linears(model)
    # some transformers versions (5.17) compute Llama's rotary angles as an fp32 bmm with K = 1 (inv_freq times
    # positions, forward only); it is a GEMM the model runs, so the census keeps it, but it is no projection's
    rows = [r for r in every if r[2] is None or r[2].a_dtype.value != "fp32"]
    rotary = [r for r in every if r not in rows]
    assert len(rotary) <= 1 and all(ph == "forward" and p.k == 1 for ph, _, p in rotary), rotary
    assert len(rows) == 3 * len(projections)
    assert all(p is not None and p.batch == 1 and p.a_dtype.value == "bf16" for _, _, p in rows)
    got = {}
    for phase, _, p in rows:
        got.setdefault(phase, []).append((p.m, p.n, p.k, p.a_layout, p.b_layout))
    want_f, want_b = [], []
    for m in projections:
        conv = type(m).__name__ == "Conv1D"
        n_in, n_out = (m.weight.shape[0], m.weight.shape[1]) if conv else (m.in_features, m.out_features)
        want_f.append((tokens, n_out, n_in, Layout.N, Layout.N if conv else Layout.T))
        want_b.append((tokens, n_in, n_out, Layout.N, Layout.T if conv else Layout.N))  # dX = dY·Wᵀ / dY·W
        # dW: Linear's (out, in) = dYᵀ·X; Conv1D's (in, out) = Xᵀ·dY
        want_b.append((n_out, n_in, tokens, Layout.T, Layout.N) if not conv else (n_in, n_out, tokens, Layout.T, Layout.N))
    assert sorted(got["forward"]) == sorted(want_f)
    assert sorted(got["backward"]) == sorted(want_b)


def test_problem_table_merges_calls_and_shares_the_flop():
    from origami import GemmProblem

    p, q = GemmProblem(64, 32, 16), GemmProblem(64, 32, 16, b_layout="T")
    rows = [("forward", "mm", p), ("backward", "mm", p), ("forward", "addmm", q), ("forward", "mm", None)]
    table = gemm_census.problem_table(rows)
    assert [(r[0], r[1], r[2]) for r in table] == [(p, 2, "forward+backward"), (q, 1, "forward")]
    assert abs(table[0][3] - 2 / 3) < 1e-12 and abs(table[1][3] - 1 / 3) < 1e-12


def test_written_problems_read_back_and_leave_out_held_out_shapes(tmp_path):
    from origami import GemmProblem
    from origami.shapes import load_shapes
    from tritonblas.heldout import heldout_split

    held = next(iter(heldout_split().values()))[0]
    mine = [GemmProblem(64, 32, 16, b_layout="T"), GemmProblem(50, 30, 17, a_layout="T", align_bytes=2),
            GemmProblem(8, 16, 32, batch=3)]
    tables = {"a": [(p, 1, "forward", 0.5) for p in mine], "b": [(held, 1, "forward", 0.5), (mine[0], 1, "x", 0.5)]}
    path = tmp_path / "t.yaml"
    gemm_census.write_problems(path, tables, "train")
    assert load_shapes(path) == mine
    assert path.read_text().startswith("# t: written by benchmarks/gemm_census.py a b --mode train --problems")


def test_the_train_set_is_what_the_census_writes_for_its_models():
    """benchmarks/shapes/train.yaml holds bert-large's problems (one of the three models its header names,
    recomputed here: ~6 s on the meta device) and nothing of the held-out split."""
    from origami.shapes import load_shapes
    from tritonblas.heldout import heldout_dims

    path = Path(gemm_census.__file__).parent / "shapes" / "train.yaml"
    head = path.read_text().splitlines()[0]
    assert head.startswith("# train: written by benchmarks/gemm_census.py gpt2-medium bert-large llama3.2-1b")
    shapes = load_shapes(path)
    assert len(shapes) == len(set(shapes))
    held = {d[:3] for d in heldout_dims()}
    assert not [p for p in shapes if (p.m, p.n, p.k) in held]
    bert = {p for p, _, _, _ in gemm_census.problem_table(gemm_census.gemm_problems("bert-large", "train"))}
    assert bert <= set(shapes)


@pytest.mark.parametrize("argv,named", [(["nosuch", "--problems"], "MODEL: unknown nosuch"),
                                        (["gpt2-medium", "--write", "x.yaml"], "--write needs --problems"),
                                        (["gpt2-medium", "--problems", "--write", "/nonexistent/d/x.yaml"],
                                         "--write /nonexistent/d/x.yaml: no such directory")])
def test_bad_arguments_are_refused_naming_them(argv, named, capsys):
    with pytest.raises(SystemExit):
        gemm_census.main(argv)
    assert named in capsys.readouterr().err

"""benchmarks/models.py's CPU parts: CSV rows with provenance, the merge of several runs, the summary."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import models  # noqa: E402


def _write(path: Path, sha: str, rows: list) -> None:
    models.write_rows(path, rows, {"git_sha": sha, "gpu": "test", "date": "2026-12-01"})


def test_merge_keeps_the_newest_measured_row_and_names_its_run(tmp_path):
    old, new = tmp_path / "a.csv", tmp_path / "b.csv"
    _write(old, "aaa", [models.Row("m1", "prefill", "bf16", torch_ms=2.0, ours_ms=1.0, speedup=2.0),
                        models.Row("m2", "train", "bf16", torch_ms=3.0, ours_ms=4.0, speedup=0.75)])
    _write(new, "bbb", [models.Row("m1", "prefill", "bf16", torch_ms=2.0, ours_ms=2.5, speedup=0.8),
                        models.Row("m2", "train", "bf16", error="timeout after 48 s")])
    out = tmp_path / "merged.csv"
    models.merge([old, new], out)
    rows = {(r["model"], r["mode"]): r for r in models.read_rows(out)}
    assert rows[("m1", "prefill")]["git_sha"] == "bbb" and float(rows[("m1", "prefill")]["speedup"]) == 0.8
    # an error row never replaces a measured one
    assert rows[("m2", "train")]["git_sha"] == "aaa" and not rows[("m2", "train")]["error"]
    text = models.summary(models.read_rows(out))
    assert "geomean speedup over 2 workloads" in text
    assert f"{(0.8 * 0.75) ** 0.5:.3f}" in text


def test_merging_a_merge_keeps_each_rows_own_run(tmp_path):
    """A merged CSV merged again with a newer run: its older rows keep their runs' git_sha, not "unknown"."""
    a, b, c = tmp_path / "a.csv", tmp_path / "b.csv", tmp_path / "c.csv"
    _write(a, "aaa", [models.Row("m1", "prefill", "bf16", torch_ms=2.0, ours_ms=1.0, speedup=2.0)])
    _write(b, "bbb", [models.Row("m2", "train", "bf16", torch_ms=3.0, ours_ms=4.0, speedup=0.75)])
    _write(c, "ccc", [models.Row("m2", "train", "bf16", torch_ms=3.0, ours_ms=2.0, speedup=1.5)])
    first, second = tmp_path / "merged.csv", tmp_path / "merged2.csv"
    models.merge([a, b], first)
    models.merge([first, c], second)
    rows = {(r["model"], r["mode"]): r for r in models.read_rows(second)}
    assert rows[("m1", "prefill")]["git_sha"] == "aaa"
    assert rows[("m2", "train")]["git_sha"] == "ccc" and float(rows[("m2", "train")]["speedup"]) == 1.5


def test_rows_round_trip_with_provenance(tmp_path):
    p = tmp_path / "r.csv"
    _write(p, "ccc", [models.Row("m", "decode", "fp16", torch_ms=1.5, ours_ms=1.0, speedup=1.5, parity="ok")])
    assert p.read_text().startswith("# git_sha: ccc\n")
    (r,) = models.read_rows(p)
    assert (r["model"], r["mode"], r["dtype"], r["parity"]) == ("m", "decode", "fp16", "ok")
    assert float(r["speedup"]) == 1.5


def test_backward_host_ms_sums_the_autograd_nodes_of_a_real_profile():
    """On a CPU profile of a real backward: every evaluate_function event counts, nothing else."""
    from types import SimpleNamespace

    import torch
    from torch.profiler import ProfilerActivity, profile

    fake = [SimpleNamespace(name="autograd::engine::evaluate_function: AddmmBackward0", cpu_time_total=1500.0),
            SimpleNamespace(name="autograd::engine::evaluate_function: _LinearBackward", cpu_time_total=500.0),
            SimpleNamespace(name="aten::mm", cpu_time_total=9000.0)]
    assert models.backward_host_ms(fake) == 2.0
    lin = torch.nn.Sequential(torch.nn.Linear(16, 24), torch.nn.ReLU(), torch.nn.Linear(24, 8))
    x = torch.randn(5, 16)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        lin(x).pow(2).mean().backward()
    nodes = [e for e in prof.events() if e.name.startswith("autograd::engine::evaluate_function:")]
    assert any("AddmmBackward0" in e.name for e in nodes)
    assert models.backward_host_ms(prof.events()) == sum(e.cpu_time_total for e in nodes) / 1e3 > 0


def _merged_and_summary(tmp_path, row) -> tuple[dict, str]:
    """``row`` written as one run's CSV, merged into a second, read back: (its merged row, the summary text)."""
    p = tmp_path / "run.csv"
    _write(p, "ddd", [row])
    out = tmp_path / "merged.csv"
    models.merge([p], out)
    rows = models.read_rows(out)
    (m,) = rows
    return m, models.summary(rows)


def _isolated_command(monkeypatch, **side) -> tuple[list, "models.Row"]:
    """The command ``run_isolated`` starts for a workload with the side option ``side`` (its subprocess stubbed to
    time out at once), and the row it returns for that."""
    seen = {}

    def fake_run(cmd, **kw):
        seen["cmd"] = cmd
        raise models.subprocess.TimeoutExpired(cmd, 1)

    monkeypatch.setattr(models.subprocess, "run", fake_run)
    row = models.run_isolated("m", "train", "bf16", 3, 1.0, **side)
    return seen["cmd"], row


# Each side besides torch and ours: (make_sides' option, the side, its variable, the variable's value inside the side,
# the process's value around it (None: unset), a row with the side's columns, what the summary prints for it, the
# flag run_isolated hands the workload's process)
SIDES = [
    ({"gluon": True}, "gluon", "TRITONBLAS_GLUON", "1", "0",
     {"gluon_ms": 1.6, "gluon_speedup": 1.25, "gluon_gemm_gpu_ms": 1.0, "gluon_host_us_per_gemm": 20.0},
     ["gluon 1.600 ms x1.250", "with TRITONBLAS_GLUON=1: geomean 1.250 over 1"], "--gluon"),
    ({"aten": True}, "aten", "TRITONBLAS_AUTOGRAD", "aten", None,
     {"aten_ms": 2.2, "aten_speedup": 2.0 / 2.2, "aten_host_us_per_gemm": 30.0, "aten_bwd_host_ms": 1.5},
     ["aten 2.200 ms x0.909 host us 30.0 backward host ms 1.50", "with TRITONBLAS_AUTOGRAD=aten: geomean 0.909 over 1"],
     "--aten"),
    ({"eager": 20.0}, "eager", "TRITONBLAS_EAGER_MIN_GFLOP", "20", None,
     {"eager_ms": 2.05, "eager_speedup": 2.0 / 2.05, "eager_host_us_per_gemm": 31.0, "eager_gflop": 20.0},
     ["eager<20GF 2.050 ms x0.976 host us 31.0", "with TRITONBLAS_EAGER_MIN_GFLOP: geomean 0.976 over 1"],
     "--eager 20"),
    ({"grad": 0.0}, "grad", "TRITONBLAS_GRAD_MIN_GFLOP", "0", "7",
     {"grad_ms": 2.5, "grad_speedup": 0.8, "grad_host_us_per_gemm": 55.0, "grad_gflop": 0.0},
     ["grad<0GF 2.500 ms x0.800 host us 55.0", "with the grad side's TRITONBLAS_GRAD_MIN_GFLOP: geomean 0.800 over 1"],
     "--grad 0"),
    ({"aligned": True}, "aligned", "TRITONBLAS_VENDOR_ALIGNED", "1", None,
     {"aligned_ms": 1.6, "aligned_speedup": 1.25, "aligned_gemm_gpu_ms": 0.9, "aligned_host_us_per_gemm": 30.0},
     ["aligned 1.600 ms x1.250 gemm 0.90 host us 30.0", "with TRITONBLAS_VENDOR_ALIGNED=1: geomean 1.250 over 1"],
     "--aligned"),
    ({"front": True}, "front", "TRITONBLAS_LINEAR_FORWARD", "0", None,
     {"front_ms": 2.1, "front_speedup": 2.0 / 2.1, "front_gemm_gpu_ms": 1.0, "front_host_us_per_gemm": 33.0},
     ["front 2.100 ms x0.952 host us 33.0", "with TRITONBLAS_LINEAR_FORWARD=0: geomean 0.952 over 1"], "--front"),
]


@pytest.mark.parametrize("option,name,var,inside,around,columns,printed,flag", SIDES, ids=[s[1] for s in SIDES])
def test_a_side_sets_its_variable_only_inside_and_its_columns_round_trip(tmp_path, monkeypatch, option, name, var,
                                                                         inside, around, columns, printed, flag):
    """A side's variable holds its value inside the side's ``ctx()`` (enable() on; for ``aten``, the kernels below
    autograd armed there and only there) and the process's value before and after, ``ours`` included; its columns
    are written, merged and summarised beside the others; the per-workload subprocess gets its flag."""
    import os

    import torch

    from tritonblas import below_autograd, routing

    if around is None:
        monkeypatch.delenv(var, raising=False)
    else:
        monkeypatch.setenv(var, around)
    sides = models.make_sides(**{"gluon": False, **option})
    assert list(sides) == ["torch", "ours", name] and list(models.make_sides(gluon=False)) == ["torch", "ours"]
    with sides[name].ctx():
        assert os.environ[var] == inside and routing.active() and below_autograd.armed() == (name == "aten")
        # (the front side: enable() without its nn.Linear forward)
        assert getattr(torch.nn.Linear.forward, "_tritonblas_route", False) == (name != "front")
    assert os.environ.get(var) == around and not routing.active() and not below_autograd.armed()
    with sides["ours"].ctx():
        assert os.environ.get(var) == around and routing.active() and not below_autograd.armed()
        assert getattr(torch.nn.Linear.forward, "_tritonblas_route", False)

    m, text = _merged_and_summary(tmp_path, models.Row("m", "train", "bf16", torch_ms=2.0, ours_ms=2.5, speedup=0.8,
                                                       **columns))
    for column, value in columns.items():
        assert float(m[column]) == pytest.approx(value, rel=1e-3), column  # (the CSV keeps 4 significant digits)
    for line in printed:
        assert line in text, (line, text)

    cmd, row = _isolated_command(monkeypatch, **option)
    assert f" {flag} " in f" {' '.join(cmd)} " and row.error.startswith("timeout"), cmd


def test_the_versus_side_takes_a_table_file_as_is_and_refuses_a_bad_one(tmp_path, monkeypatch):
    """``--versus-table``: the versus side is the file's table, active inside its ``ctx()`` only, counted in
    ``versus_problems`` / ``vendor_entries``; a file that is not an intact table is an error, never an empty side
    (an empty one would time origami's picks under the table's name); the subprocess gets the flag."""
    import json

    import origami
    from origami.config import Kind, TileConfig
    from origami.problem import GemmProblem, Layout
    from tritonblas import tables

    hw = origami.load_profile("h100")
    p1, p2 = GemmProblem(1, 2048, 2048, b_layout=Layout.T), GemmProblem(1, 512, 2048, b_layout=Layout.T)
    cfg = TileConfig(Kind.DP, 16, 32, 256, 2, 4, 1)
    path = tmp_path / "best.json"
    tables.write_table(tables.table_of({p1: cfg, p2: tables.VENDOR}, hw), path)
    row = models.Row("m", "decode_graph", "bf16")
    side = models._versus_side(row, str(path))
    assert (row.versus_problems, row.vendor_entries) == (2, 1)
    assert tables.explicit_table() is None
    with side.ctx():
        assert tables.lookup(p1, hw) == cfg and tables.lookup(p2, hw) is tables.VENDOR
    assert tables.explicit_table() is None

    bad = tmp_path / "bad.json"
    doc = json.loads(path.read_text())
    next(iter(doc["entries"].values()))["block_k"] = 128  # an edit the checksum no longer covers
    bad.write_text(json.dumps(doc))
    with pytest.raises(tables.TableError, match="bad.json"):
        models._versus_side(models.Row("m", "decode_graph", "bf16"), str(bad))

    cmd, _ = _isolated_command(monkeypatch, versus_table=str(path))
    assert cmd[cmd.index("--versus-table") + 1] == str(path)


def test_parity_fails_when_the_gluon_side_gives_nan(monkeypatch):
    """``--gluon``'s parity covers every non-torch side: a NaN output on the Gluon side (a broken
    kernel) is a FAIL, not hidden by ``max()`` keeping the finite ``ours_err`` before it."""
    import torch

    ref = torch.ones(4, 4)
    outs = {"torch": ref * 1.001, "ours": ref.clone(), "gluon": torch.full((4, 4), float("nan"))}
    monkeypatch.setattr(models, "build", lambda name, dtype, device: (None, lambda mode: {}, None))
    monkeypatch.setattr(models, "_infer_steps", lambda model, inputs, sides, compiled: (
        {k: (s, lambda: None) for k, s in sides.items()}, ref, outs))
    monkeypatch.setattr(models, "timeit_sides", lambda steps, reps: {k: (1.0, 0.0, [1.0] * reps) for k in steps})
    monkeypatch.setattr(models, "_profile_side", lambda side, step: (0.0, 0.0, 1.0, 1, 1, 0, 0))
    monkeypatch.setattr(torch._dynamo, "reset", lambda: None)
    row = models.run_workload("m", "prefill", "bf16", 2, device="cpu", gluon=True)
    assert row.error == "" and row.ours_err == 0.0 and row.gluon_err != row.gluon_err  # NaN
    assert row.parity == "FAIL"
    outs["gluon"] = ref.clone()
    assert models.run_workload("m", "prefill", "bf16", 2, device="cpu", gluon=True).parity == "ok"



def test_gradient_error_is_the_whole_vector_and_parity_catches_one_wrong_parameter():
    """A training row's error is the relative Frobenius error of all gradients together: a gradient that is
    zero in exact arithmetic (BERT's attention key bias: roundoff in the fp32 reference, bf16 roundoff on both
    sides) neither explodes the error nor fails parity. Parity also holds each parameter to 2 x torch's error,
    so one small parameter's gradient scaled by 1.05, sign-flipped or zeroed fails the row though it barely
    moves the whole vector's error; a NaN fails."""
    import torch

    g = torch.Generator().manual_seed(7)
    ref = [torch.randn(256, 64, generator=g, dtype=torch.float64), torch.randn(64, generator=g, dtype=torch.float64) * 1e-2,
           torch.randn(64, generator=g, dtype=torch.float64) * 1e-19]  # the structural zero

    def bf16_like(t, seed):  # a bf16-sized perturbation of every entry, different per side
        gg = torch.Generator().manual_seed(seed)
        noise = torch.randn(t.shape, generator=gg, dtype=torch.float64) * 2.0 ** -9
        return t * (1 + noise) + (1e-10 * noise if t.abs().max() < 1e-15 else 0)

    base = [bf16_like(r, 1) for r in ref]
    ours = [bf16_like(r, 2) for r in ref]
    e = models._err(ours, ref)
    assert 1e-4 < e < 1e-2  # not max(per-parameter): that is ~1e8 on the structural zero
    assert max(models._rel(o.float(), r.float()) for o, r in zip(ours, ref)) > 1e6
    assert models._parity(ours, base, ref)
    for fault in (lambda t: t * 1.05, lambda t: -t, torch.zeros_like, lambda t: t.flip(0),
                  lambda t: torch.full_like(t, float("nan"))):
        bad = [ours[0], fault(ours[1]), ours[2]]
        if not bad[1].isnan().any():  # the whole vector's error alone would pass...
            assert models._err(bad, ref) <= 2 * models._err(base, ref) + 1e-4
        assert not models._parity(bad, base, ref)  # ...but parity fails on the one parameter
    assert not models._parity([o * 1.05 for o in ours], base, ref)  # and on the whole output scaled
    # a single tensor (prefill outputs): the relative error and the same 2x rule
    assert models._parity(ours[0], base[0], ref[0]) and not models._parity(ours[0] * 1.05, base[0], ref[0])


def test_timing_puts_every_side_in_every_position(monkeypatch):
    """timeit_sides rotates the sides' order by one each repetition: with three sides each runs first,
    second and third equally often (the ABAB/BABA reversal kept the middle side in the middle), with
    two it alternates as before."""
    import torch

    class Quiet:  # the torch side's context: nothing entered
        def ctx(self):
            import contextlib
            return contextlib.nullcontext()

    monkeypatch.setattr(models, "_sync", lambda: None)
    monkeypatch.setattr(torch.cuda, "reset_peak_memory_stats", lambda *a, **k: None)
    monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda *a, **k: 0)
    for names, reps in ((("torch", "ours", "gluon"), 6), (("torch", "ours"), 4)):
        ran = []
        steps = {n: (Quiet(), (lambda n=n: ran.append(n))) for n in names}
        models.timeit_sides(steps, reps)
        rounds = [tuple(ran[i:i + len(names)]) for i in range(0, len(ran), len(names))]
        assert len(rounds) == reps and all(sorted(r) == sorted(names) for r in rounds)
        for n in names:
            positions = [r.index(n) for r in rounds]
            assert sorted(positions) == sorted(list(range(len(names))) * (reps // len(names))), (n, rounds)


def test_paired_spread_is_the_quartiles_of_the_round_by_round_ratios():
    """A row's ``speedup_q1``/``speedup_q3`` are the quartiles of torch's time over ours, round by round: a drift
    that slows both sides alike (the host-bound rows' run-to-run spread) leaves them where the ratio is, while
    the two sides' own medians would not pair the rounds. Under 4 rounds there are no quartiles; unequal
    lists are an error, not a silently truncated pairing."""
    import math

    drift = [10.0, 20.0, 40.0, 80.0, 160.0]  # each round twice as slow as the last, both sides
    q1, q3 = models.paired_spread(drift, [t / 1.25 for t in drift])
    assert q1 == pytest.approx(1.25) and q3 == pytest.approx(1.25)
    q1, q3 = models.paired_spread([1.0, 1.0, 1.0, 1.0, 1.0], [1.0, 2.0, 4.0, 0.5, 0.25])
    assert (q1, q3) == (pytest.approx(0.5), pytest.approx(2.0))  # ratios 1, .5, .25, 2, 4: inclusive quartiles
    assert all(math.isnan(q) for q in models.paired_spread([1.0, 2.0, 3.0], [1.0, 2.0, 3.0]))
    with pytest.raises(ValueError, match="4 base times against 5"):
        models.paired_spread([1.0] * 4, [1.0] * 5)


def test_run_workload_records_the_paired_quartiles(monkeypatch):
    """run_workload pairs torch's and ours' samples from timeit_sides round by round into the row's quartile
    columns, and the summary prints them beside the ratio of medians."""
    import torch

    ref = torch.ones(2, 2)
    outs = {"torch": ref.clone(), "ours": ref.clone()}
    monkeypatch.setattr(models, "build", lambda name, dtype, device: (None, lambda mode: {}, None))
    monkeypatch.setattr(models, "_infer_steps", lambda model, inputs, sides, compiled: (
        {k: (s, lambda: None) for k, s in sides.items()}, ref, outs))
    times = {"torch": [10.0, 11.0, 12.0, 13.0, 14.0, 15.0], "ours": [5.0, 11.0, 6.0, 13.0, 7.0, 7.5]}
    monkeypatch.setattr(models, "timeit_sides", lambda steps, reps: {
        k: (sorted(times[k])[len(times[k]) // 2], 0.0, times[k]) for k in steps})
    monkeypatch.setattr(models, "_profile_side", lambda side, step: (0.0, 0.0, 1.0, 1, 1, 0, 0))
    monkeypatch.setattr(torch._dynamo, "reset", lambda: None)
    row = models.run_workload("m", "prefill", "bf16", 6, device="cpu")
    assert row.error == ""
    assert (row.speedup_q1, row.speedup_q3) == (pytest.approx(1.25), pytest.approx(2.0))  # ratios 2 1 2 1 2 2
    line = models.summary([{k: str(v) for k, v in models.asdict(row).items()}]).splitlines()[1]
    assert "1.250-2.000" in line


def test_jobs_are_checked_before_any_gpu_work():
    """A misspelt ``--jobs`` entry (session 29 passed ``llama3.2-1b:graph:bf16``) exits with argparse's status 2
    naming the job and the allowed values, on a machine with or without a GPU; a good one parses."""
    assert models.parse_job("llama3.2-1b:decode_graph:bf16") == ("llama3.2-1b", "decode_graph", "bf16")
    for bad, words in (("llama3.2-1b:graph:bf16", "unknown mode 'graph'"), ("llama3.2-1b:decode", "MODEL:MODE:DTYPE"),
                       ("gpt3:prefill:bf16", "unknown model 'gpt3'"), ("bert-large:prefill:fp8", "unknown dtype"),
                       ("bert-large:decode:bf16", "decoder LLMs")):
        with pytest.raises(ValueError, match=words):
            models.parse_job(bad)
        with pytest.raises(SystemExit) as e:
            models.main(["--jobs", bad])
        assert e.value.code == 2
    with pytest.raises(SystemExit) as e:
        models.main(["--jobs", "bert-large:prefill:bf16", "--versus-table", "/nonexistent/t.json"])
    assert e.value.code == 2


def test_the_plot_title_names_the_gpu_the_csv_recorded(tmp_path):
    """models.py --plot titles the chart with the CSV's own provenance GPU (an H100 run once said H200)."""
    from benchmarks import models

    with_gpu = tmp_path / "a.csv"
    with_gpu.write_text("# git_sha: abc\n# gpu: NVIDIA H100 80GB HBM3\nmodel,mode\n")
    assert models.recorded_gpu(with_gpu) == "NVIDIA H100 80GB HBM3"
    without = tmp_path / "b.csv"
    without.write_text("# git_sha: abc\nmodel,mode\n# gpu: not provenance\n")
    assert models.recorded_gpu(without) == "an unnamed GPU"


def test_the_ours_profile_names_the_problems_it_routed(device, monkeypatch, capsys):
    """The profile of a side prints the routed count and the problems planned, so a routed call in a model that
    should have gone to torch is named in the log, not deduced from a count (session 39's rotary matmul). The GPU
    split stubbed; on the CPU through the interpreter (a GPU machine's kernels are not the interpreter's, whatever
    the variable says once Triton is loaded: the GPU suite at 1a7087f routed nothing on CPU tensors there)."""
    import torch

    import tritonblas

    if device == "cpu":
        monkeypatch.setenv("TRITON_INTERPRET", "1")
        monkeypatch.setenv("TRITONBLAS_PROFILE", "h200")
    monkeypatch.setattr(models, "_gpu_split", lambda step: (0.0, 0.0))
    monkeypatch.setattr(models, "_sync", lambda: None)
    a, b = torch.randn(5, 7, device=device), torch.randn(7, 3, device=device)
    tritonblas.clear_caches()  # (planned problems are listed since the last clear)
    got = models._profile_side(models.Side("ours"), lambda: torch.matmul(a, b))
    out = capsys.readouterr().out
    assert got[3] == 1 and got[4] == 1, got  # one GEMM call, routed
    assert "routed 1 calls (0 served warm); problems planned so far" in out and "5x3x7" in out.replace(" ", ""), out

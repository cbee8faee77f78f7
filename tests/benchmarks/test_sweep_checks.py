"""benchmarks/sweep.py's result check: a timed config whose output is wrong (or was never written,
so still NaN) must be recorded as an error, never as a time (CPU)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks import sweep  # noqa: E402
from benchmarks.sweep import _REL_TOL, check_result  # noqa: E402
from origami import GemmProblem  # noqa: E402


@pytest.mark.parametrize("dtype", ["bf16", "fp16", "tf32", "fp8_e4m3"])
def test_check_result_accepts_the_product_rounded_to_the_output(dtype):
    p = GemmProblem(64, 48, 96, a_dtype=dtype, b_dtype=dtype, c_dtype="fp32" if dtype == "tf32" else "bf16")
    a, b = torch.randn(64, 96), torch.randn(96, 48)
    ref = a @ b
    out = ref.to(torch.bfloat16 if dtype != "tf32" else torch.float32)
    check_result(out, ref, p)


def test_check_result_rejects_unwritten_partial_and_wrong_outputs():
    p = GemmProblem(64, 48, 96)
    ref = torch.randn(64, 96) @ torch.randn(96, 48)
    nan = torch.full((64, 48), float("nan"))
    half = ref.clone()
    half[32:] = float("nan")  # a kernel that wrote only some tiles
    off = ref * (1 + 3 * _REL_TOL["bf16"])  # every element wrong by three tolerances
    for bad in (nan, half, off, torch.zeros_like(ref)):
        with pytest.raises(RuntimeError, match="wrong result"):
            check_result(bad.to(torch.bfloat16), ref, p)


def test_same_bits_compares_fp8_and_fp32_bit_for_bit():
    import torch

    x = torch.randn(5, 7)
    for t in (x, x.to(torch.float8_e4m3fn), x.T):
        assert sweep.same_bits(t, t.clone())
        y = t.contiguous().clone()
        y.view(torch.uint8).view(-1)[3] ^= 1  # one flipped bit
        assert not sweep.same_bits(t, y)


def test_check_counters_rejects_and_rearms_counters_left_non_zero():
    import torch

    from tritonblas import plan as planmod

    planmod.clear_workspaces()
    _, counters = planmod.workspace(torch.device("cpu"), 1, 4)
    sweep.check_counters("cpu")  # fresh: zero
    counters[3] = 2
    with pytest.raises(RuntimeError, match="1 Stream-K/split-K counters left non-zero"):
        sweep.check_counters("cpu")
    assert int(torch.count_nonzero(counters)) == 0
    sweep.check_counters("cpu")
    planmod.clear_workspaces()


# --- sampling modes, the held-out mode and the --rows job file (CPU: no timing) -----------------
def _h200():
    import origami

    return origami.load_profile("h200")


def test_uniform_sample_holds_the_pick_and_is_not_the_top_k():
    import origami

    hw = _h200()
    p = GemmProblem(3000, 1000, 7000)
    cands = sweep._scored(p, hw)
    got = sweep.configs_for(p, hw, 32, 0, "uniform")
    assert len(got) == 32 and len({c for c, _ in got}) == 32
    assert got[0][0] == origami.select(p, hw).config
    top = {c for c, _ in cands[:32]}
    assert len({c for c, _ in got} - top) >= 16, "a uniform sample must reach beyond the model's top configs"
    legacy = sweep.configs_for(p, hw, 32, 0, "top16")
    assert [c for c, _ in legacy[:16]] == [c for c, _ in cands[:16]]


def test_also_pick_adds_each_variants_pick_to_the_same_uniform_sample():
    """--also-pick: a candidate term's picks are timed in the same sampled sweep (tf32 76x6144x4096: the
    register-read regime, where model.mn_major_tile_cost 2 moves the pick), the sample keeps its length and
    its uniform draw, and a bad spec is refused naming it."""
    import origami
    from origami.problem import DType

    hw = origami.load_profile("h100").replace_model(mn_major_tile_cost=0.0)  # the term off, as before session 32
    p = GemmProblem(76, 6144, 4096, a_dtype=DType.TF32, b_dtype=DType.TF32, c_dtype=DType.FP32)
    variant = sweep.also_profiles(hw, ["mn_major_tile_cost=2"])
    own, moved = origami.select(p, hw).config, origami.select(p, variant[0]).config
    assert own != moved  # the case must exercise a moved pick
    plain = [c for c, _ in sweep.configs_for(p, hw, 32, 0, "uniform")]
    got = [c for c, _ in sweep.configs_for(p, hw, 32, 0, "uniform", variant)]
    assert len(got) == 32 and len(set(got)) == 32
    assert got[:2] == [own, moved]
    assert moved not in plain
    assert set(plain) - set(got) <= {plain[-1]}  # the uniform draw is kept, less its last config
    with pytest.raises(SystemExit, match="mn_major_tile_kost"):
        sweep.also_profiles(hw, ["mn_major_tile_kost=2"])


def test_exhaustive_configs_are_every_candidate_plus_extras():
    import origami

    hw = _h200()
    p = GemmProblem(1000, 1000, 1000)
    cands = origami.candidates(p, hw)
    got = [c for c, _ in sweep.exhaustive_configs(p, hw)]
    assert got == list(dict.fromkeys(cands))
    extra = cands[0].__class__(**{**cands[0].to_dict(), "group_m": 3})
    assert [c for c, _ in sweep.exhaustive_configs(p, hw, (extra,))][-1] == extra


def test_rows_job_file_round_trip_and_bad_row(tmp_path):
    import csv

    from benchmarks.missing_picks import JOB_COLS

    hw = _h200()
    p = GemmProblem(2048, 511, 4099, align_bytes=2)
    cfgs = [c for c, _ in sweep._scored(p, hw)[:3]]
    rows = []
    for c in cfgs:
        r = {k: sweep.cell(getattr(p, k)) for k in sweep.PROBLEM_COLS}
        r.update({k: sweep.cell(getattr(c, k)) for k in sweep.CONFIG_COLS}, out="benchmarks/data/x_repick/y.csv")
        rows.append(r)
    job = tmp_path / "jobs.csv"
    with job.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=JOB_COLS)
        w.writeheader()
        w.writerows(rows)
    [(shapes, out, configs_of)] = sweep.row_jobs(job)
    assert shapes == [p] and out.name == "y.csv" and [c for c, _ in configs_of(p, hw)] == cfgs
    bad = tmp_path / "bad.csv"
    bad.write_text(job.read_text().replace(",bf16,bf16,bf16,", ",bf16,bf17,bf16,", 1))
    with pytest.raises(SystemExit, match="data row 2"):
        sweep.row_jobs(bad)


def test_heldout_mode_refuses_sampling_and_estimates_without_a_gpu(capsys):
    with pytest.raises(SystemExit):
        sweep.main(["--heldout", "--max-configs", "32"])
    assert "exhaustive" in capsys.readouterr().err
    assert sweep.main(["--heldout", "--jobs", "square", "--estimate"]) == 0
    out = capsys.readouterr().out
    assert "h200_heldout/square.csv: 12 shapes" in out and "GPU-minutes" in out
    with pytest.raises(SystemExit, match="--heldout"):
        sweep.main(["--shapes", "benchmarks/shapes/heldout/square.yaml", "--estimate"])

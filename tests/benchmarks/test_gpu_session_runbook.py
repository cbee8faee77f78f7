"""benchmarks/gpu_session.sh, the H200 runbook, and benchmarks/profile_candidate.sh stay runnable: every script a step runs exists, and every
option a step passes to one of our scripts is one the script defines (its source, or the shared
benchmarks/_harness.py, _dist.py or sweep.py's ``add_shape_args``, names it). Device time is the scarcest thing a session has; a step
that dies on "unrecognized arguments" after a rename wastes a call. Static (no import, no subprocess)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# the device runbooks: the H200 session script and the profile-candidate check (session 20)
RUNBOOKS = [ROOT / "benchmarks" / "gpu_session.sh", ROOT / "benchmarks" / "profile_candidate.sh",
            ROOT / "benchmarks" / "device_plan.sh"]  # one call on whatever GPU comes (session 21)
SHARED = [ROOT / "benchmarks" / n for n in ("_harness.py", "_dist.py", "sweep.py")]  # sweep.add_shape_args


_CALL = re.compile(r"(?:python3|gpu)\s+((?:benchmarks|tests)/[\w/]+\.py)([^;|&>]*)")


def _commands() -> list[tuple[str, list[str]]]:
    """(script path, the --options after it) for each call of one of our Python scripts in the runbook."""
    text = "\n".join(r.read_text() for r in RUNBOOKS).replace("\\\n", " ")
    out = []
    for line in text.splitlines():
        line = line.split(" #", 1)[0]
        # a script run by python3 (or torchrun's --nproc-per-node gpu); test files handed to pytest are not
        for m in _CALL.finditer(line):
            out.append((m.group(1), re.findall(r"--([a-z][\w-]*)", m.group(2))))
    return out


def test_the_runbook_calls_scripts_that_exist_with_options_they_define():
    calls = _commands()
    assert len(calls) > 20, calls  # the parser found the steps
    shared = "".join(p.read_text() for p in SHARED if p.exists())
    problems = []
    for script, opts in calls:
        path = ROOT / script
        if not path.is_file():
            problems.append(f"{script}: no such file")
            continue
        src = path.read_text() + shared
        problems += [f"{script}: --{o} is not defined there" for o in opts if f'"--{o}"' not in src]
    assert not problems, problems


def test_the_parser_sees_a_renamed_option():
    text = 'python3 benchmarks/sweep.py --rows x.csv --no-such-option 1 > log\n'
    found = [(m.group(1), re.findall(r"--([a-z][\w-]*)", m.group(2))) for m in _CALL.finditer(text)]
    assert found == [("benchmarks/sweep.py", ["rows", "no-such-option"])]
    assert '"--no-such-option"' not in (ROOT / "benchmarks" / "sweep.py").read_text()


def test_the_device_plan_runs_steps_the_session_script_has():
    """benchmarks/device_plan.sh calls gpu_session.sh with STEPS=<step>: each must be one of its case labels
    (an unknown step would run ``python3 <step>`` and fail on the device)."""
    plan = (ROOT / "benchmarks" / "device_plan.sh").read_text()
    session = (ROOT / "benchmarks" / "gpu_session.sh").read_text()
    steps = set(re.findall(r"STEPS=(\w+)", plan))
    labels = set(re.findall(r"^\s+(\w+)\)\s", session, re.M))
    assert steps >= {"repick", "sweep", "heldout", "tests", "models"}, steps
    assert steps <= labels, steps - labels
    assert "bash benchmarks/gpu_session.sh" in plan


def test_the_repick_step_times_the_profile_it_read_the_picks_of():
    """gpu_session.sh's repick step lists the missing picks of $REPICK_PROFILE and must time them as that profile's:
    sweep.py defaults to h200 and refuses h200 rows on another GPU (session 30 lost a call to that)."""
    session = (ROOT / "benchmarks" / "gpu_session.sh").read_text().replace("\\\n", " ")
    block = session[session.index("    repick)"):]
    block = block[:block.index(";;")]
    calls = [line for line in block.splitlines() if re.search(r"benchmarks/(missing_picks|sweep)\.py", line)]
    assert len(calls) == 2, calls
    assert all("--profile ${REPICK_PROFILE:-h200}" in line for line in calls), calls


def test_every_candidate_in_the_device_plan_is_a_valid_variant_of_both_nvidia_profiles():
    """device_plan.sh's CAND_* strings become missing_picks.py --variant specs on the device: a typo in a key or a
    value out of its range would cost a device call before failing. Each (with $CAND_* references expanded, as
    the shell does) must load as a model override of h200 and of h100, and change what it names."""
    from benchmarks.missing_picks import variant_profiles

    plan = (ROOT / "benchmarks" / "device_plan.sh").read_text()
    assigned = re.findall(r"^(CAND_\w+)=(\S+)$", plan, re.M)
    names = [name for name, _ in assigned]
    # a second assignment would silently replace the first in the shell (session 31's CAND_H did session 42's)
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)
    cands = dict(assigned)
    assert {"CAND_D", "CAND_E", "CAND_G", "CAND_H", "CAND_I", "CAND_M"} <= set(cands), sorted(cands)
    for name in list(cands):
        while "$CAND_" in cands[name]:
            cands[name] = re.sub(r"\$(CAND_\w+)", lambda m: cands[m.group(1)], cands[name])
    for name, spec in cands.items():
        kv = dict(item.split("=", 1) for item in spec.split(","))
        for profile in ("h200", "h100"):
            (hw,) = variant_profiles(profile, [spec])
            assert all(hw.model[k] == float(v) for k, v in kv.items()), (name, profile)
    # the branches' defaults name candidates that exist
    for used in re.findall(r":-\$(CAND_\w+)\}", plan):
        assert used in cands, used

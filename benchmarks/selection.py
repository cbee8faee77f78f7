"""Selection efficiency of ``origami.select()``'s real pick: the held-out table beside the training one.

    python benchmarks/selection.py [--profile h200]
    python benchmarks/selection.py --misses 0.88     # each held-out miss, predicted vs measured
    python benchmarks/selection.py --common h200 h100  # the shapes both GPUs recorded, each with its own pick

Held-out (DESIGN.md §8): per file of the committed split (benchmarks/shapes/heldout/: bf16 one file
per set, fp16/tf32/fp8_e4m3 one file per dtype) its exhaustive sweep benchmarks/data/<profile>_heldout/
<file>.csv; per file and dtype: shapes scored, geomean and p10 of best measured / pick's time, the
worst shape, how often our pick beat nvMatmulHeuristics' top-1 (where the sweep has the
``nvmmh_rank`` column), and picks missing from the data. A file not recorded says so, with the
command that records it. Training split (fitted data): the same for every sweep the floors file
names under ``training`` (h200 was fitted on these; their oracle is the best of a sample biased to
the model's own top 16, so these numbers flatter the model).

Also the one home of the floors file (benchmarks/data/floors.yaml): :func:`load_floors`,
:func:`file_sha256`, and the re-sweep commands the guards print.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from origami.fit import PickScore, efficiency_summary, read_sweep, pick_efficiency  # noqa: E402

DATA = ROOT / "benchmarks" / "data"
FLOORS_FILE = DATA / "floors.yaml"
SECTIONS = ("training", "pooled", "heldout")
_KEYS = {"training": {"geomean", "p10", "min_shapes", "max_missing", "sha256"},
         "heldout": {"geomean", "p10", "min_shapes", "max_missing", "sha256"},
         "pooled": {"geomean", "p10", "min_shapes", "max_missing", "files", "sha256"}}
HELDOUT_SWEEP = "torchrun --nproc-per-node gpu benchmarks/sweep.py --heldout --jobs {stems}"


def heldout_command(stems: str, profile: str = "h200") -> str:
    """The command that records (or resumes) the held-out sweeps of ``stems`` for ``profile``."""
    return HELDOUT_SWEEP.format(stems=stems) + ("" if profile == "h200" else f" --profile {profile}")
MISSING_SWEEP = ("python benchmarks/missing_picks.py -o benchmarks/data/missing_picks.csv && "
                 "torchrun --nproc-per-node gpu benchmarks/sweep.py --rows benchmarks/data/missing_picks.csv")


class FloorsError(ValueError):
    """The floors file is unreadable or malformed (the message names the file and the entry)."""


def file_sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def pooled_sha256(paths) -> str:
    """One hash for a pooled entry: sha256 over its files' names and hashes, in sorted order."""
    text = "\n".join(f"{Path(p).relative_to(DATA)} {file_sha256(p)}" for p in sorted(map(Path, paths)))
    return hashlib.sha256(text.encode()).hexdigest()


def load_floors(text: str | None = None, where: str = "benchmarks/data/floors.yaml") -> dict:
    """{section: {entry: floors}} of the floors file (or of ``text``, an older version of it).
    Entries are paths relative to benchmarks/data (pooled: a label with a ``files`` list)."""
    try:
        raw = yaml.safe_load(FLOORS_FILE.read_text() if text is None else text)
    except (OSError, yaml.YAMLError) as e:
        raise FloorsError(f"{where}: cannot read: {' '.join(str(e).split())}") from None
    if not isinstance(raw, dict) or set(raw) - set(SECTIONS):
        raise FloorsError(f"{where}: expected a mapping with sections {', '.join(SECTIONS)}")
    out = {}
    for sec in SECTIONS:
        entries = raw.get(sec) or {}
        if not isinstance(entries, dict):
            raise FloorsError(f"{where}: {sec}: expected a mapping of entries")
        for name, e in entries.items():
            if not isinstance(e, dict) or set(e) != _KEYS[sec]:
                raise FloorsError(f"{where}: {sec}.{name}: expected keys {', '.join(sorted(_KEYS[sec]))}")
        out[sec] = entries
    return out


def heldout_stems() -> list[str]:
    from tritonblas.heldout import heldout_split

    return list(heldout_split())


def heldout_path(stem: str, profile: str = "h200") -> Path:
    return DATA / f"{profile}_heldout" / f"{stem}.csv"


def nvmmh_top1_ms(path: Path) -> dict:
    """{(m, n, k, batch, a_dtype): time of the row the sweep marked nvMMH's top-1}; empty without the column."""
    out = {}
    with open(path) as f:
        rows = csv.DictReader(line for line in f if not line.startswith("#"))
        if "nvmmh_rank" not in (rows.fieldnames or ()):
            return out
        for r in rows:
            if r.get("nvmmh_rank") == "1" and r.get("median_ms"):
                out[(int(r["m"]), int(r["n"]), int(r["k"]), int(r["batch"]), r["a_dtype"])] = float(r["median_ms"])
    return out


def score(paths, profile: str = "h200") -> tuple[list, PickScore]:
    data = read_sweep(paths)
    return data, pick_efficiency(data, profile)


def _row(label: str, paths: list[Path], profile: str) -> list[str]:
    import numpy as np

    data, s = score(paths, profile)
    out = []
    for dtype in sorted({m.problem.a_dtype.value for m in data}):
        sub = [m for m in data if m.problem.a_dtype.value == dtype]
        sd = pick_efficiency(sub, profile) if len({m.problem.a_dtype.value for m in data}) > 1 else s
        worst = sd.worst(1)
        nv = {}
        for p in paths:
            nv.update(nvmmh_top1_ms(p))
        beats = []
        if nv:
            times = {m.problem: dict(zip(m.configs, m.ms)) for m in sub}
            for prob in sd.problems:
                key = (prob.m, prob.n, prob.k, prob.batch, prob.a_dtype.value)
                if key in nv:
                    from origami import select

                    beats.append(times[prob][select(prob, profile).config] < nv[key])
        out.append(
            f"{label:<28} {dtype:<9} {len(sd.per_shape):>4} {sd.geomean:>7.3f} {sd.p10:>6.3f}  "
            f"{(f'{100 * np.mean(beats):.0f}% of {len(beats)}' if beats else '-'):>10}  {len(sd.missing):>7}  "
            + (f"{worst[0][0]:.2f} {worst[0][1].describe()}" if worst else "-"))
    return out


HEADER = f"{'file':<28} {'dtype':<9} {'n':>4} {'geomean':>7} {'p10':>6}  {'>nvMMH-1':>10}  {'missing':>7}  worst"


def heldout_table(profile: str = "h200") -> list[str]:
    lines = [f"held-out split ({profile}, exhaustive sweeps, benchmarks/data/{profile}_heldout/): "
             "select()'s pick / best measured", HEADER]
    absent, recorded = [], []
    stems = heldout_stems()
    for stem in stems:
        path = heldout_path(stem, profile)
        if path.exists():
            recorded.append(path)
            lines += _row(f"{profile}_heldout/{stem}.csv", [path], profile)
        else:
            absent.append(stem)
            lines.append(f"{f'{profile}_heldout/{stem}.csv':<28} not recorded")
    if len(recorded) > 1:  # every recorded shape of a dtype together (the issue-19 targets are pooled per dtype)
        lines += _row("pooled (recorded files)", recorded, profile)
    if absent:
        lines.append(f"held-out data missing for {len(absent)} of {len(stems)} files; "
                     f"record with: {heldout_command(' '.join(absent), profile)}")
    return lines


def entry_profile(name: str) -> str:
    """The profile whose picks a floors entry's data scores: its folder's name less ``_cold`` / ``_heldout``
    (h200/llm.csv, h200_cold/bf16 and h200_heldout/llm.csv: h200; h100/llm.csv: h100)."""
    return name.split("/")[0].removesuffix("_cold").removesuffix("_heldout")


def training_table(profile: str = "h200") -> list[str]:
    """The training entries of ``profile``'s own sweeps (another GPU's data scored with these picks says nothing)."""
    floors = load_floors()
    lines = ["training split (fitted data; sampled sweeps, oracle biased to the model's top 16): "
             "select()'s pick where it was measured", HEADER]
    for name in floors["training"]:
        if entry_profile(name) == profile:
            lines += _row(name, [DATA / name], profile)
    for name, e in floors["pooled"].items():
        if entry_profile(name) == profile:
            lines += _row(f"pooled {name}", [DATA / f for f in e["files"]], profile)
    return lines


def misses(profile: str = "h200", below: float = 0.88) -> list[str]:
    """Each held-out shape whose pick scores under ``below``, with what explains it: the pick's and the
    best measured config's predicted and measured times (the model ranked the pick first, so either
    the pick ran slower than predicted, or the best config faster), and the operands' alignment class
    (under 4 bytes: register-staged loads, no cp.async/TMA); ``R`` after it marks a tf32/fp8 shape whose
    wide MMA reads an operand through registers (origami.kmajor.mma_reads_through_registers, a regime the
    shipped h200 does not price: model.mn_major_tile_cost 0, benchmarks/kmajor_residuals.py)."""
    from origami import load_profile, predict, select
    from origami.kmajor import mma_reads_through_registers

    hw = load_profile(profile)

    lines = [f"held-out shapes under {below} ({profile}): the pick and the best config, predicted -> measured us",
             f"{'shape':<30} {'align':>5} {'eff':>5}  {'pick':<40} {'pred':>7} {'meas':>7} {'x':>5}   "
             f"{'best':<40} {'pred':>7} {'meas':>7} {'x':>5}"]
    for stem in heldout_stems():
        path = heldout_path(stem, profile)
        if not path.exists():
            continue
        for m in read_sweep(path):
            times = dict(zip(m.configs, m.ms))
            pick = select(m.problem, profile)
            if pick.config not in times:
                continue  # missing: the table above counts it
            best = min(times, key=times.get)
            eff = times[best] / times[pick.config]
            if eff >= below:
                continue
            bp = predict(m.problem, profile, best).latency_ns / 1e3
            pp, pm, bm = pick.latency_ns / 1e3, times[pick.config] * 1e3, times[best] * 1e3
            p = m.problem
            align = f"{p.align_bytes}{'R' if mma_reads_through_registers(p, hw) else ''}"
            lines.append(f"{f'{stem}: {p.m}x{p.n}x{p.k} {p.a_dtype.value}':<30} {align:>5} {eff:>5.3f}  "
                         f"{pick.config.short():<40} {pp:>7.1f} {pm:>7.1f} {pm / pp:>5.2f}   "
                         f"{best.short():<40} {bp:>7.1f} {bm:>7.1f} {bm / bp:>5.2f}")
    return lines


def common_table(profiles: list[str]) -> list[str]:
    """Each profile's pick on its own GPU's held-out sweeps, restricted to the shapes every one of ``profiles``
    has recorded, per dtype: the same shapes scored on two GPUs (how a profile retargeted by its YAML alone
    compares with the one fitted there)."""
    effs: dict = {}
    for prof in profiles:
        paths = [heldout_path(s, prof) for s in heldout_stems() if heldout_path(s, prof).exists()]
        if not paths:
            raise SystemExit(f"--common: no held-out data recorded for {prof} (benchmarks/data/{prof}_heldout/)")
        _, s = score(paths, prof)
        effs[prof] = dict(zip(s.problems, s.per_shape))
    shared = set.intersection(*(set(e) for e in effs.values()))
    lines = [f"held-out shapes recorded for every one of {', '.join(profiles)}: each profile's pick / best on its GPU",
             f"{'dtype':<9} {'n':>4}  " + "  ".join(f"{p + ' geomean':>14} {'p10':>6} {'<0.75':>5}" for p in profiles)]
    for dtype in sorted({p.a_dtype.value for p in shared}):
        probs = sorted((p for p in shared if p.a_dtype.value == dtype), key=lambda p: (p.m, p.n, p.k))
        cells = []
        for prof in profiles:
            e = [float(effs[prof][p]) for p in probs]
            geo, p10 = efficiency_summary(e)
            cells.append(f"{geo:>14.3f} {p10:>6.3f} {sum(x < 0.75 for x in e):>5}")
        lines.append(f"{dtype:<9} {len(probs):>4}  " + "  ".join(cells))
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", default="h200")
    ap.add_argument("--training-only", action="store_true")
    ap.add_argument("--misses", type=float, default=None, metavar="EFF",
                    help="only the held-out shapes whose pick scores under EFF, each with its pick's and the best "
                         "config's predicted and measured times (what explains the miss)")
    ap.add_argument("--common", nargs="+", default=None, metavar="PROFILE",
                    help="only the held-out shapes every PROFILE has recorded, each scored with its own pick")
    args = ap.parse_args(argv)
    if args.common is not None:
        print("\n".join(common_table(args.common)))
        return 0
    if args.misses is not None:
        if not 0 < args.misses <= 1:
            ap.error(f"--misses: {args.misses} is not an efficiency in (0, 1]")
        print("\n".join(misses(args.profile, args.misses)))
        return 0
    if not args.training_only:
        print("\n".join(heldout_table(args.profile)))
        print()
    if not (DATA / args.profile).is_dir():  # no training sweeps of its own: another GPU's data scored with its picks
        print(f"training split: no sweeps recorded for {args.profile} (benchmarks/data/{args.profile}/); its "
              "terms were not fitted on its GPU's sweeps")  # scored on them would say nothing
        return 0
    print("\n".join(training_table(args.profile)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

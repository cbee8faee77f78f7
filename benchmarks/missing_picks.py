"""Which shapes of the recorded sweeps lack a time for ``origami.select()``'s current pick (CPU).

    python benchmarks/missing_picks.py [--profile h200] [-o benchmarks/data/missing_picks.csv]
        [--cold-output benchmarks/data/missing_picks_cold.csv] [--variant splitk_range_reads=1 ...]
    torchrun --nproc-per-node gpu benchmarks/sweep.py --rows benchmarks/data/missing_picks.csv   # on the GPUs
    python benchmarks/missing_picks.py --apply                                          # CPU, after it
    python benchmarks/missing_picks.py --lean 8 -o ...      # a lean job: each pick with its shape's 8 fastest

Prints, per sweep CSV under benchmarks/data/<profile>/, <profile>_cold/ and <profile>_heldout/,
the shapes, how many picks are missing, and each missing (shape, pick). With ``-o`` it writes a job
file for ``sweep.py --rows``: per missing shape, the pick AND every config the file already timed
for that shape, all into benchmarks/data/<dir>_repick/<file>.csv, so that the pick and the oracle it
is compared with are timed in one run (times from different days differ by several percent,
H200.md). Cold files' rows go to ``--cold-output`` (sweep.py --rows times with its --timer: run that job with
--timer cold). ``--variant`` adds the picks of the profile with some model parameters changed (a term
fitted but not switched on: the guards fail on its untimed picks, so they are timed first). ``--apply`` replaces, in each original file, the rows
of the shapes a repick file holds with the repick rows (atomic write; provenance lines kept and the
repick's appended); the file's hash then changes, so its floors entry must be re-scored. A shape the repick
did not finish (its budget ran out: some of the original's configs have no row) is not merged; the repick
file keeps just those shapes, for the resumed job.
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.sweep import (COLS, CONFIG_COLS, JOB_COLS, PROBLEM_COLS, REQUIRED_COLS, job_row, read_rows,  # noqa: E402
                              write_rows)
from origami.fit import read_sweep, pick_efficiency  # noqa: E402

DATA = ROOT / "benchmarks" / "data"


def sweeps(profile: str) -> list[Path]:
    return sorted(p for d in (profile, f"{profile}_cold", f"{profile}_heldout") for p in (DATA / d).glob("*.csv")
                  if ".shard" not in p.name)


def repick_path(path: Path) -> Path:
    return path.parent.parent / f"{path.parent.name}_repick" / path.name


def lean_path(path: Path) -> Path:
    return path.parent.parent / f"{path.parent.name}_lean" / path.name


def missing(path: Path, profile, variants=()):
    """(the sweep, its missing (problem, pick) pairs): the picks of ``profile`` and of each variant of it
    (``variants``: model-parameter overrides, e.g. a term not yet switched on), each pair once."""
    data = read_sweep(path)
    miss = dict.fromkeys(pick_efficiency(data, profile).missing)
    for v in variants:
        miss.update(dict.fromkeys(pick_efficiency(data, v).missing))
    return data, list(miss)


def variant_profiles(profile, specs, flag: str = "--variant") -> list:
    """The profile (a name, a YAML path or a HardwareProfile) with each ``KEY=VALUE[,KEY=VALUE]`` spec's model
    parameters replaced (a bad key or value is a SystemExit naming it): the one parser of such specs
    (term_eval's --set, sweep.py's --also-pick, splitk_residuals)."""
    import origami

    base, out = origami.load_profile(profile), []
    for spec in specs or ():
        try:
            kv = dict(item.split("=", 1) for item in spec.split(","))
            out.append(base.replace_model(**{k.strip(): float(v) for k, v in kv.items()}))
        except (ValueError, TypeError) as e:
            raise SystemExit(f"{flag} {spec!r}: {e} (want KEY=VALUE[,KEY=VALUE], model parameters of {base.name})")
    return out


def job_rows(path: Path, data, miss, lean: int = 0) -> list[dict]:
    """Per missing (shape, pick): the pick and every config the shape timed, into the repick file; with ``lean``
    K, the pick and the shape's K fastest timed configs, fastest first, into the lean file (:func:`apply_lean`)."""
    out = (lean_path(path) if lean else repick_path(path)).relative_to(ROOT).as_posix()
    timed = {m.problem: (m.configs if not lean else [c for _, c in sorted(zip(m.ms, m.configs),
                                                                        key=lambda t: t[0])][:lean]) for m in data}
    rows = []
    for prob, pick in miss:
        rows += [job_row(prob, cfg, out) for cfg in dict.fromkeys((pick, *timed[prob]))]
    return rows


def _key(r: dict) -> tuple:
    return tuple(r.get(c) or "" for c in PROBLEM_COLS[:-1])  # the shape (align_bytes may be absent in old files)


def _sweep_rows(path: Path) -> list[dict]:
    """:func:`read_rows` of a sweep CSV that ``--apply`` merges: a file without the sweep's columns,
    or a row cut short or too long (a killed or edited run), is a SystemExit naming the file and the
    row, before anything is written."""
    rows = read_rows(path)
    with path.open(newline="") as f:
        header = next(csv.reader(line for line in f if not line.startswith("#")), None) or []
    missing = [c for c in REQUIRED_COLS if c not in header]
    if missing:
        raise SystemExit(f"--apply: {path}: not a sweep CSV (missing column(s) {', '.join(missing)})")
    for i, r in enumerate(rows, start=1):
        if None in r or None in r.values():
            raise SystemExit(f"--apply: {path}: data row {i} has {len(header) - sum(v is None for v in r.values())}"
                             f" cells for {len(header)} columns (a cut or edited row); re-time it with sweep.py --rows")
    return rows


def _cfg_key(r: dict) -> tuple:
    return tuple(r.get(c) or "" for c in CONFIG_COLS)  # the config (its CONFIG_COLS cells)


def _header(path: Path) -> list[str]:
    """The ``#`` provenance lines of a sweep CSV."""
    with path.open() as f:
        return [line.rstrip("\n") for line in f if line.startswith("#")]


def _configs_by_shape(rows: list[dict]) -> dict:
    """shape key -> the set of configs (their CONFIG_COLS cells) ``rows`` hold for it."""
    out: dict = {}
    for r in rows:
        out.setdefault(_key(r), set()).add(_cfg_key(r))
    return out


def _columns(rows: list[dict]) -> list[str]:
    """The sweep's columns, then any others the rows carry."""
    return list(dict.fromkeys(COLS + [c for r in rows[:1] for c in r]))


def apply(profile: str) -> list[str]:
    """Replace each original file's rows of the shapes its repick file holds completely; returns what it did.

    A shape is complete when the repick file has a row for every config the original recorded for it (the job
    re-times them all beside the pick). A repick cut by its budget leaves its last shape incomplete: merging it
    would drop the oracle's configs it did not reach, so such shapes stay out of the original and the repick
    file is rewritten (atomically) to hold just them: resume the job with sweep.py --rows, then apply again. A
    repick file merged whole is removed (after the original's atomic write), so a second --apply cannot append its
    provenance and rows again; one whose provenance lines and rows the original already holds (merged before this
    rule) is removed without a write."""
    done = []
    for rp in sorted(p for d in (f"{profile}_repick", f"{profile}_cold_repick") for p in (DATA / d).glob("*.csv")):
        orig = DATA / rp.parent.name[: -len("_repick")] / rp.name
        if not orig.exists():
            raise SystemExit(f"--apply: {rp} has no original {orig}")
        new = _sweep_rows(rp)
        old = _sweep_rows(orig)
        recorded, timed = _configs_by_shape(old), _configs_by_shape(new)
        shapes = {k for k, cfgs in timed.items() if recorded.get(k, set()) <= cfgs}
        short = set(timed) - shapes
        header, rp_header = _header(orig), _header(rp)
        provenance = [f"# repick {rp.relative_to(ROOT)}: {line[1:].strip()}" for line in rp_header]
        merged = [r for r in new if _key(r) in shapes]
        if not short and set(provenance) <= set(header) and all(r in old for r in merged):
            rp.unlink()
            done.append(f"{orig.relative_to(ROOT)}: already holds {rp.relative_to(ROOT)} (its provenance and "
                        f"{len(merged)} rows); the repick file is removed, nothing written")
            continue
        if merged:
            kept = [r for r in old if _key(r) not in shapes]
            write_rows(orig, header + provenance, _columns(kept), kept + merged)
        if short:
            rest = [r for r in new if _key(r) in short]
            write_rows(rp, rp_header, _columns(rest), rest)
        elif merged:
            rp.unlink()
        done.append(f"{orig.relative_to(ROOT)}: {len(shapes)} shapes replaced by {rp.relative_to(ROOT)} "
                    f"({len(merged)} rows); re-score its floors entry: python benchmarks/floors_rescore.py"
                    + (f"; {len(short)} shapes incomplete (a cut repick) stay in {rp.relative_to(ROOT)}: resume "
                       f"it (sweep.py --rows with the job missing_picks.py -o writes), then apply again"
                       if short else ""))
    return done


def apply_lean(profile: str) -> list[str]:
    """Merge each lean repick file (``--lean K``: the pick and the shape's K fastest recorded configs, re-timed in one
    run) into its original: per shape, the re-timed configs' rows replace theirs, new configs (the picks) are added,
    and every other recorded row stays. A shape is merged when its rows re-time the original's fastest configs
    in order (the job lists them fastest first; sweep.py writes a shape's rows once it has timed them all), so
    the pick and the oracle it is scored against come from one run. A shape whose fastest row after the merge is
    one that was not re-timed (the re-timed ones all ran slower this time) is counted in the report: its oracle
    is from another run. The lean file is removed once merged (atomic writes)."""
    done = []
    for lp in sorted(p for d in (f"{profile}_lean", f"{profile}_cold_lean") for p in (DATA / d).glob("*.csv")):
        orig = DATA / lp.parent.name[: -len("_lean")] / lp.name
        if not orig.exists():
            raise SystemExit(f"--apply: {lp} has no original {orig}")
        new, old = _sweep_rows(lp), _sweep_rows(orig)
        old_by: dict = {}
        for r in old:
            old_by.setdefault(_key(r), []).append(r)
        new_by: dict = {}
        for r in new:
            new_by.setdefault(_key(r), []).append(r)
        merged, stale, skipped = [], 0, []
        for key, rows in new_by.items():
            before = old_by.get(key, [])
            fastest = [_cfg_key(r) for r in sorted((r for r in before if r.get("median_ms")),
                                                   key=lambda r: float(r["median_ms"]))]
            timed = {_cfg_key(r) for r in rows}
            again = timed & set(fastest)
            if not before or not again or set(fastest[: len(again)]) != again:
                skipped.append(key)
                continue
            kept = [r for r in before if _cfg_key(r) not in timed]
            best_kept = min((float(r["median_ms"]) for r in kept if r.get("median_ms")), default=float("inf"))
            best_new = min((float(r["median_ms"]) for r in rows if r.get("median_ms")), default=float("inf"))
            stale += best_kept < best_new
            merged.append(key)
        if merged:
            header = _header(orig) + [f"# lean repick {lp.relative_to(ROOT)}: {line[1:].strip()}"
                                      for line in _header(lp)]
            # the original's order: a re-timed row in its place, a shape's new configs after its last row
            fresh = {k: {_cfg_key(r): r for r in new_by[k]} for k in merged}
            last = {_key(r): i for i, r in enumerate(old) if _key(r) in fresh}
            out = []
            for i, r in enumerate(old):
                k = _key(r)
                out.append(fresh[k].pop(_cfg_key(r), r) if k in fresh else r)
                if k in fresh and last[k] == i:
                    out += list(fresh[k].values())
            write_rows(orig, header, _columns(out), out)
        if skipped:
            rest = [r for r in new if _key(r) in set(skipped)]
            write_rows(lp, _header(lp), _columns(rest), rest)
        else:
            lp.unlink()
        done.append(f"{orig.relative_to(ROOT)}: {len(merged)} shapes merged from {lp.relative_to(ROOT)} (lean)"
                    + (f"; {stale} of them keep a faster row from an earlier run than any re-timed one" if stale else "")
                    + (f"; {len(skipped)} shapes not merged (their rows do not re-time the original's fastest "
                       f"configs), left in {lp.relative_to(ROOT)}" if skipped else "")
                    + "; re-score its floors entry: python benchmarks/floors_rescore.py")
    return done


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", default="h200")
    ap.add_argument("-o", "--output", default=None, help="job file for sweep.py --rows")
    ap.add_argument("--apply", action="store_true", help="merge recorded repick files into their originals")
    ap.add_argument("--cold-output", default=None, help="job file for the cold-L2 sweeps' missing picks "
                    "(sweep.py --rows ... --timer cold)")
    ap.add_argument("--variant", action="append", default=[], metavar="KEY=VALUE[,KEY=VALUE]",
                    help="also the picks of the profile with these model parameters (a term not switched on yet: "
                         "its picks must be timed before it can ship); repeatable")
    ap.add_argument("--lean", type=int, default=0, metavar="K",
                    help="job rows: each missing pick with its shape's K fastest timed configs only, into "
                         "benchmarks/data/<dir>_lean/ (--apply merges them row by row); 0: every timed config")
    ap.add_argument("-v", "--verbose", action="store_true", help="list every missing (shape, pick)")
    args = ap.parse_args(argv)
    if args.apply:
        print("\n".join(apply(args.profile) + apply_lean(args.profile)) or "nothing to apply")
        return 0
    if args.lean < 0:
        raise SystemExit(f"--lean {args.lean}: want a count of configs (0: every timed config)")
    variants = variant_profiles(args.profile, args.variant)
    jobs, cold, total = [], [], 0
    for path in sweeps(args.profile):
        data, miss = missing(path, args.profile, variants)
        total += len(miss)
        print(f"{path.relative_to(DATA)}: {len(data)} shapes, {len(miss)} picks missing")
        for prob, pick in miss if args.verbose else ():
            print(f"  {prob.describe()}: pick {pick.short()}")
        if miss:
            (cold if path.parent.name.endswith("_cold") else jobs).extend(job_rows(path, data, miss, args.lean))
    print(f"total: {total} picks missing; job: {len(jobs)} (shape, config) rows, cold job: {len(cold)}")
    for name, rows, timer in ((args.output, jobs, ""), (args.cold_output, cold, " --timer cold")):
        if name:
            out = Path(name)
            rows = [dict(t) for t in dict.fromkeys(tuple(r.items()) for r in rows)]  # a shape two variants moved: once
            write_rows(out, [], JOB_COLS, rows)
            print(f"wrote {out} ({len(rows)} rows); time them with: torchrun --nproc-per-node gpu benchmarks/sweep.py "
                  f"--rows {out} --rep-ms 3{timer}, then python benchmarks/missing_picks.py --apply")
    return 0


if __name__ == "__main__":
    sys.exit(main())

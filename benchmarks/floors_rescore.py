"""Re-score entries of benchmarks/data/floors.yaml after their data (or the shipped profile) changed,
by the file's own rules, instead of by hand.

    python benchmarks/floors_rescore.py [--profile P]                    # the entries whose data changed
    python benchmarks/floors_rescore.py h200/llm.csv h200/bf16 ...      # these entries
    python benchmarks/floors_rescore.py --write --reason "repick of session 18"

Per entry: ``origami.select()``'s real pick scored on its data (benchmarks.selection.score), then

- **data changed** (its sha256 is not the entry's): floor = achieved − 0.02, but not below the old floor
  where the achieved value reaches it (the file's rule: a floor set 2 points under what the model
  achieved, never below an earlier floor the model still meets); min_shapes = picks scored,
  max_missing = picks not in the data; the new sha256;
- **data unchanged**: floors only go up (to achieved − 0.02 where that is higher), and the entry is
  refused when fewer picks are scored or more are missing than it allows (the guards would fail:
  re-sweep first, benchmarks/missing_picks.py).

Prints each proposal (old -> new); ``--write`` rewrites only those entries' lines (comments and every
other line kept) atomically, after checking that the new file still loads. tests/benchmarks/
test_floors_history.py then holds the result against the file's history. CPU only.
"""

from __future__ import annotations

import argparse
import datetime
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.selection import (DATA, FLOORS_FILE, SECTIONS, FloorsError, entry_profile,  # noqa: E402
                                  file_sha256, load_floors, pooled_sha256, score)

MARGIN = 0.02  # floors sit this far under what the model achieved


@dataclass(frozen=True)
class Proposal:
    section: str
    name: str
    old: dict
    new: dict
    achieved: tuple[float, float, int, int]  # geomean, p10, picks scored, picks missing
    changed: bool  # the data's hash differs from the entry's
    refused: str | None  # why the entry cannot be re-scored as it stands (None: it can)


def _paths(section: str, name: str, entry: dict) -> list[Path]:
    return [DATA / f for f in entry["files"]] if section == "pooled" else [DATA / name]


def _sha(section: str, paths: list[Path]) -> str:
    return pooled_sha256(paths) if section == "pooled" else file_sha256(paths[0])


def propose(section: str, name: str, entry: dict, profile: str = "h200") -> Proposal:
    """The re-scored entry for ``entry`` (as floors.yaml holds it) by the rules of the module docstring."""
    paths = _paths(section, name, entry)
    missing_files = [str(p.relative_to(DATA)) for p in paths if not p.exists()]
    if missing_files:
        return Proposal(section, name, entry, entry, (0.0, 0.0, 0, 0), True,
                        f"data file(s) missing: {', '.join(missing_files)}")
    sha = _sha(section, paths)
    _, s = score(paths, profile)
    got = (s.geomean, s.p10, len(s.per_shape), len(s.missing))
    changed = sha != entry["sha256"]
    new = dict(entry)
    refused = None
    for key, value in (("geomean", got[0]), ("p10", got[1])):
        target = round(value - MARGIN, 3)
        if changed:
            new[key] = max(target, entry[key]) if value >= entry[key] else target
        else:
            new[key] = max(target, entry[key])
    if changed:
        new["min_shapes"], new["max_missing"], new["sha256"] = got[2], got[3], sha
    elif got[2] < entry["min_shapes"] or got[3] > entry["max_missing"]:
        refused = (f"unchanged data, but {got[2]} picks scored (min {entry['min_shapes']}) and {got[3]} missing "
                   f"(max {entry['max_missing']}): time the missing picks first (benchmarks/missing_picks.py)")
    return Proposal(section, name, entry, new, got, changed, refused)


def proposals(names: list[str] | None = None, profile: str | None = None) -> list[Proposal]:
    """Proposals for the named entries (any section), or else for every entry whose data changed; each
    scored with ``profile``, or by default with its folder's (``selection.entry_profile``)."""
    floors = load_floors()
    known = {n for sec in SECTIONS for n in floors[sec]}
    unknown = [n for n in names or () if n not in known]
    if unknown:
        raise FloorsError(f"benchmarks/data/floors.yaml: no entry {', '.join(unknown)}")
    out = []
    for sec in SECTIONS:
        for name, entry in floors[sec].items():
            if names:
                if name in names:
                    out.append(propose(sec, name, entry, profile or entry_profile(name)))
                continue
            paths = _paths(sec, name, entry)
            if not all(p.exists() for p in paths) or _sha(sec, paths) != entry["sha256"]:
                out.append(propose(sec, name, entry, profile or entry_profile(name)))
    return out


def _value(v) -> str:
    if isinstance(v, list):
        return "[" + ", ".join(map(str, v)) + "]"
    return f"{v:g}" if isinstance(v, float) else str(v)


def render(name: str, entry: dict, comment: str) -> str:
    """One floors.yaml entry line, in the file's flow style, keys in ``entry``'s order."""
    body = ", ".join(f"{k}: {_value(v)}" for k, v in entry.items())
    return f"  {name}: {{{body}}}  # {comment}"


def comment_of(text: str, name: str) -> str:
    """The comment of ``name``'s entry line in ``text`` ('' when it has none)."""
    for t in text.splitlines():
        if t.startswith(f"  {name}: {{"):
            return t.split("}  # ", 1)[1] if "}  # " in t else ""
    return ""


def replace_entries(text: str, lines: dict[str, str]) -> str:
    """``text`` with the line of each entry of ``lines`` (name -> new line) replaced; every other line kept.
    Each entry's line must occur exactly once."""
    out = text.splitlines(keepends=True)
    for name, line in lines.items():
        hits = [i for i, t in enumerate(out) if t.startswith(f"  {name}: {{")]
        if len(hits) != 1:
            raise FloorsError(f"benchmarks/data/floors.yaml: expected one line for {name}, found {len(hits)}")
        out[hits[0]] = line + "\n"
    return "".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help="entries to re-score (default: those whose data changed)")
    ap.add_argument("--profile", default=None, help="score every entry with this profile (default: each its folder's)")
    ap.add_argument("--write", action="store_true", help="rewrite those entries' lines in floors.yaml (atomic)")
    ap.add_argument("--reason", default="", help="why, for the entries' comments")
    args = ap.parse_args(argv)
    try:
        props = proposals(args.names or None, args.profile)
    except FloorsError as e:
        print(f"floors_rescore: {e}", file=sys.stderr)
        return 2
    if not props:
        print("every entry's data is unchanged (name entries to raise their floors)")
        return 0
    today = datetime.date.today().isoformat()
    text = FLOORS_FILE.read_text()
    lines, refused = {}, 0
    for p in props:
        g, q, n, miss = p.achieved
        if p.refused:
            refused += 1
            print(f"{p.section}.{p.name}: REFUSED: {p.refused}")
            continue
        diff = ", ".join(f"{k} {p.old[k]} -> {p.new[k]}" for k in p.new if p.new[k] != p.old[k] and k != "sha256")
        print(f"{p.section}.{p.name}: achieved {g:.3f} / {q:.3f}, {n} scored, {miss} missing; "
              f"{'data changed' if p.changed else 'data unchanged'}: {diff or 'no change'}")
        if p.new == p.old:
            continue  # nothing to write: the entry (and its comment's history) stays as it is
        why = f" ({args.reason})" if args.reason else ""
        before = comment_of(text, p.name)
        lines[p.name] = render(p.name, p.new, f"achieved {g:.3f} / {q:.3f}, {n} of {n + miss} picks measured; "
                                              f"re-scored {today}{why}" + (f"; before: {before}" if before else ""))
    if args.write and lines:
        from tritonblas.tables import AtomicFile

        text = replace_entries(text, lines)
        load_floors(text, "the rewritten floors.yaml")  # still loads, every entry well-formed
        with AtomicFile(FLOORS_FILE) as f:
            f.write(text)
        print(f"wrote {FLOORS_FILE.relative_to(ROOT)} ({len(lines)} entries)")
    return 1 if refused else 0


if __name__ == "__main__":
    raise SystemExit(main())

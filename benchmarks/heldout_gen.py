"""Draw the held-out split once: benchmarks/shapes/heldout/*.yaml (DESIGN.md §8 "Held-out discipline").

    python benchmarks/heldout_gen.py    # refuses to overwrite an existing split

Shapes come from the distributions of the standard sets (benchmarks/shapes_gen.py and DESIGN.md §8:
LLM projections, DLRM-style irregular, squares, skinny, long K, the 128-step grid), drawn by
``random.Random(SEED)``, stratified per set and per alignment class (16-byte aligned as contiguous
tensors of the shape's dtype, or not; the llm and grid distributions hold aligned shapes only), and
rejected when their (m, n, k) occurs in any recorded sweep or shape set (``known_dims``): no fit has
read them. bf16: 12 shapes per set, one file per set; fp16, tf32, fp8_e4m3: 3 per set, one file per
dtype. The split is committed and never re-drawn (a fresh draw would differ once new sweeps are
recorded, since their shapes are then excluded): adding a training shape does not move it, and a
shape of the split must never enter a fitted file (tests/benchmarks/test_heldout_split.py).
"""

from __future__ import annotations

import argparse
import csv
import math
import random
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.shapes_gen import LLAMA  # noqa: E402
from origami.problem import DType, GemmProblem  # noqa: E402
from tritonblas.tables import AtomicFile  # noqa: E402

SEED = 20261201
OUT = ROOT / "benchmarks" / "shapes" / "heldout"
SETS = ("llm", "dlrm", "square", "skinny", "longk", "grid")
ALIGNED_ONLY = {"llm", "grid"}  # their distributions have 16-byte aligned dims only
PER_SET = {"bf16": 12, "fp16": 3, "tf32": 3, "fp8_e4m3": 3}


def known_dims(root: Path = ROOT) -> set[tuple[int, int, int, int]]:
    """(m, n, k, batch) of every shape in a recorded CSV (benchmarks/data but its ``*_heldout``
    sweeps, benchmarks/results) or a training shape set (benchmarks/shapes/*.yaml), in any dtype."""
    from origami.shapes import load_shapes

    out = set()
    for path in sorted((root / "benchmarks").glob("shapes/*.yaml")):
        out |= {(p.m, p.n, p.k, p.batch) for p in load_shapes(path)}
    for path in sorted((root / "benchmarks").glob("data/**/*.csv")) + sorted((root / "benchmarks").glob("results/**/*.csv")):
        if any(part.endswith("_heldout") for part in path.parts):
            continue  # the held-out split's own sweeps
        with path.open() as f:
            rows = csv.DictReader(line for line in f if not line.startswith("#"))
            if not {"m", "n", "k"} <= set(rows.fieldnames or ()):
                continue
            for r in rows:
                try:
                    out.add((int(r["m"]), int(r["n"]), int(r["k"]), int(r.get("batch") or 1)))
                except (TypeError, ValueError):
                    continue
    return out


def _logint(rng: random.Random, lo: int, hi: int) -> int:
    return int(round(math.exp(rng.uniform(math.log(lo), math.log(hi)))))


def _fit(rng: random.Random, v: int, aligned: bool) -> int:
    """``v`` moved to a multiple of 16 (aligned for every dtype here) or to an odd value."""
    if aligned:
        return max(16, v - v % 16)
    return v | 1


def _draw(rng: random.Random, name: str, aligned: bool) -> tuple[int, int, int]:
    if name == "llm":  # Llama-3 8B/70B projections at a new token count M
        n, k = rng.choice(LLAMA["8b"] + LLAMA["70b"])
        m = _logint(rng, 1, 8192)
        while m in (1, 16, 128, 512, 2048, 8192):
            m = _logint(rng, 1, 8192)
        return m, n, k
    if name == "dlrm":  # large batch M, irregular N and K
        m = rng.choice((2048, 4096, 8192, 16384, 32768, 65536))
        n, k = rng.randint(200, 4200), rng.randint(200, 7200)
        if aligned:
            return m, _fit(rng, n, True), _fit(rng, k, True)
        return (m, n | 1, k) if rng.random() < 0.5 else (m, n, k | 1)
    if name == "square":
        s = _fit(rng, _logint(rng, 200, 12288), aligned)
        return s, s, s
    if name == "skinny":  # one of M or N at most 64
        small = rng.randint(1, 64)
        big = lambda: _fit(rng, rng.randint(1024, 12288), aligned)  # noqa: E731
        if rng.random() < 0.6:  # small M: alignment from N and K
            return small, big(), big()
        small = _fit(rng, small, True) if aligned else small | 1  # small N: N itself sets the alignment
        return big(), min(small, 64), big()
    if name == "longk":
        m, n = _logint(rng, 32, 4096), _logint(rng, 32, 4096)
        k = rng.randint(16384, 98304)
        return m, _fit(rng, n, aligned), _fit(rng, k, aligned)
    if name == "grid":
        g = range(128, 8193, 128)
        return rng.choice(g), rng.choice(g), rng.choice(g)
    raise ValueError(name)


def _entry(dims, dtype: str) -> dict:
    m, n, k = dims
    e = {"m": m, "n": n, "k": k}
    if dtype != "bf16":
        c = DType.parse(dtype).default_output.value
        e.update(a_dtype=dtype, b_dtype=dtype, c_dtype=c)
    return e


def _aligned(dims, dtype: str) -> bool:
    c = DType.parse(dtype).default_output
    return GemmProblem.contiguous_align_bytes(*dims, dtype, dtype, c) == 16


def draw(known: set) -> dict[str, dict[str, list[dict]]]:
    """{file stem: {set: entries}}: bf16 files per set, then one file per other dtype."""
    rng = random.Random(SEED)
    taken = set(known)
    out: dict[str, dict[str, list[dict]]] = {}
    for dtype, per_set in PER_SET.items():
        for name in SETS:
            n_unaligned = 0 if name in ALIGNED_ONLY else per_set // 2 if per_set % 2 == 0 else \
                (per_set // 2 + (SETS.index(name) % 2))  # odd counts: alternate the extra one across sets
            want = [False] * n_unaligned + [True] * (per_set - n_unaligned)
            got = []
            for aligned in want:
                for _ in range(10000):
                    dims = _draw(rng, name, aligned)
                    if (*dims, 1) not in taken and _aligned(dims, dtype) == aligned:
                        break
                else:
                    raise SystemExit(f"could not draw a new {'aligned' if aligned else 'unaligned'} {name} shape")
                taken.add((*dims, 1))
                got.append(_entry(dims, dtype))
            stem = name if dtype == "bf16" else dtype
            out.setdefault(stem, {})[name] = got
    return out


def render(stem: str, by_set: dict[str, list[dict]]) -> str:
    n = sum(map(len, by_set.values()))
    head = [f"# held-out split, {stem}: {n} shapes, drawn once by benchmarks/heldout_gen.py (seed {SEED});",
            "# no fit may read these shapes (tritonblas.heldout refuses them); sweep them exhaustively:",
            "# python benchmarks/sweep.py --heldout (see benchmarks/sweep.py)"]
    body = []
    for name, entries in by_set.items():
        if len(by_set) > 1:
            body.append(f"# {name}")
        body += ["- " + yaml.safe_dump(e, default_flow_style=True, sort_keys=False).strip() for e in entries]
    return "\n".join(head + body) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--force", action="store_true", help="overwrite an existing split (never for a committed one)")
    args = ap.parse_args(argv)
    texts = {stem: render(stem, by) for stem, by in draw(known_dims()).items()}
    if any(OUT.glob("*.yaml")) and not args.force:
        raise SystemExit(f"{OUT} already holds the split; it is drawn once and never re-drawn")
    OUT.mkdir(parents=True, exist_ok=True)
    for stem, text in texts.items():
        with AtomicFile(OUT / f"{stem}.yaml") as f:
            f.write(text)
        print(f"wrote {OUT / f'{stem}.yaml'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

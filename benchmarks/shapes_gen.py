"""Regenerate benchmarks/shapes/*.yaml (the standard shape sets; DESIGN.md §8). Deterministic."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import yaml

HERE = Path(__file__).parent / "shapes"

# Llama-3 projections (N, K): q/k/v fused, attention out, MLP gate/up fused halves, MLP down.
LLAMA = {"8b": [(6144, 4096), (4096, 4096), (14336, 4096), (4096, 14336)],
         "70b": [(10240, 8192), (8192, 8192), (28672, 8192), (8192, 28672)]}


def sets() -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    out["llm"] = [dict(m=m, n=n, k=k) for (nk) in (LLAMA["8b"] + LLAMA["70b"]) for n, k in [nk]
                  for m in (1, 16, 128, 512, 2048, 8192)]
    odd = (479, 1000, 1057, 2051, 3333)
    out["dlrm"] = ([dict(m=m, n=n, k=k) for m in (4096, 32768) for n in odd for k in (479, 1024, 3333)][:24]
                   + [dict(m=4096, n=1000, k=7000), dict(m=2048, n=511, k=4099), dict(m=32768, n=1056, k=479),
                      dict(m=65536, n=256, k=1024), dict(m=8192, n=1000, k=1000), dict(m=3000, n=1000, k=7000)])
    out["square"] = ([dict(m=s, n=s, k=s) for s in (256, 512, 1024, 2048, 4096, 8192, 16384)]
                     + [dict(m=s, n=s, k=s) for s in (255, 257, 511, 1000, 1023, 1025, 1999, 3001, 4097, 6007)])
    out["skinny"] = ([dict(m=m, n=n, k=k) for m in (1, 8, 16, 32, 64) for n, k in ((4096, 4096), (8192, 8192), (1024, 8192))]
                     + [dict(m=m, n=n, k=k) for n in (1, 16, 64) for m, k in ((4096, 4096), (8192, 8192))])
    out["longk"] = [dict(m=m, n=n, k=k) for m, n in ((64, 64), (128, 128), (256, 256), (512, 512), (64, 4096), (1024, 1024))
                    for k in (32768, 65536)]
    rng = random.Random(20261130)
    grid = [s for s in range(128, 8193, 128)]
    out["grid"] = [dict(m=rng.choice(grid), n=rng.choice(grid), k=rng.choice(grid)) for _ in range(100)]
    out["ragged"] = ragged()
    out["kmajor"] = kmajor()
    out["unaligned"] = unaligned()
    out["decode"] = decode()
    out["scaled_mm"] = scaled_mm(out["llm"])
    return out


def scaled_mm(llm: list[dict]) -> list[dict]:
    """Training shapes of fp8 in ``tritonblas.scaled_mm``'s layout (``torch._scaled_mm``'s: A row-major, B
    column-major, ``b_layout: T``; e4m3 in, bf16 out): the llm set's sizes (their N and K are multiples of 16, as
    torch's kernel needs), less the five of benchmarks/shapes/fp8_ceiling.yaml, swept exhaustively there. Every
    earlier fp8 training row was N-major (B read through registers or staged), so no fitted term had seen this
    layout (session 44: its picks on fp8_ceiling scored 0.824 of the space's best on an H100)."""
    ceiling = {(8192, 8192, 8192), (8192, 14336, 4096), (2048, 10240, 8192), (512, 28672, 8192), (128, 10240, 8192)}
    return [dict(m=d["m"], n=d["n"], k=d["k"], a_dtype="fp8_e4m3", b_dtype="fp8_e4m3", c_dtype="bf16", b_layout="T")
            for d in llm if (d["m"], d["n"], d["k"]) not in ceiling]


# benchmarks/models.py's decoder LLMs: (hidden, k/v projection width, MLP width, vocabulary)
DECODE_MODELS = {"llama3-8b": (4096, 1024, 14336, 128256), "qwen2.5-7b": (3584, 512, 18944, 152064),
                 "llama3.2-1b": (2048, 512, 8192, 128256)}
DECODE_ROWS = (1, 8)


def decode() -> list[dict]:
    """Training shapes of greedy decoding as models.py runs it: each decoder LLM's per-token GEMMs (q and o,
    k and v, gate and up, down, lm_head) at ``DECODE_ROWS`` rows, in ``F.linear``'s layout (``x @ W.T``: B is
    the K-major weight, ``b_layout: T``), never a shape of the held-out split. Swept cold (``--timer cold``:
    a decode step reads each weight once, from HBM), they give the ceiling and the pick of the GEMMs where
    our decode step's GEMM time ran 1.11-1.12x cuBLAS's on the H100 (benchmarks/results/models_h100_eager_6368e34.csv)."""
    from tritonblas.heldout import heldout_dims

    held = {d[:3] for d in heldout_dims()}
    out, seen = [], set()
    for m in DECODE_ROWS:  # one row first: a sweep cut short by its budget has batch-1 decode whole
        for hidden, kv, mlp, vocab in DECODE_MODELS.values():
            for n, k in ((hidden, hidden), (kv, hidden), (mlp, hidden), (hidden, mlp), (vocab, hidden)):
                if (m, n, k) in held or (m, n, k) in seen:
                    continue
                seen.add((m, n, k))
                out.append(dict(m=m, n=n, k=k, b_layout="T"))
    return out


RAGGED_SEED = 20261202
RAGGED_PER_SET = {"skinny": 20, "longk": 12}


def ragged() -> list[dict]:
    """Training shapes from the held-out split's skinny and long-K distributions
    (``benchmarks.heldout_gen._draw``), unaligned only (odd dims: 2-byte rows in bf16, below cp.async's
    4 bytes, so the pointer kernels' loads are register-staged: origami.space.register_staged), drawn by ``random.Random(RAGGED_SEED)`` and never a
    shape of the held-out split. The other training sets hold aligned skinny and long-K shapes only,
    so without these no fit sees that regime."""
    from benchmarks.heldout_gen import _aligned  # lazy: heldout_gen imports this module

    return _draw_training(RAGGED_SEED, RAGGED_PER_SET, False, lambda dims: not _aligned(dims, "bf16"))


KMAJOR_SEED = 20261205
KMAJOR_PER_SET = {"llm": 12, "skinny": 8, "grid": 4}


def kmajor() -> list[dict]:
    """Training shapes for the register-read regime (``origami.kmajor.mma_reads_through_registers``):
    M under ``STAGING_MIN_DIM`` with N and K multiples of 16 (TMA-aligned for tf32 and fp8, so the launch
    keeps its TMA kernel and does not stage the N-major B), from the held-out split's llm, skinny and grid
    distributions (``benchmarks.heldout_gen._draw``), drawn by ``random.Random(KMAJOR_SEED)`` and never a
    shape of the held-out split. Swept as tf32 and fp8 (``--jobs kmajor:tf32 kmajor:fp8_e4m3``): before
    it, one training shape per dtype (128x7296x5504) held that regime, where the held-out tf32 pick of
    76x6144x4096 ran 3.3x its prediction (benchmarks/kmajor_residuals.py)."""
    from benchmarks.heldout_gen import _aligned  # lazy: heldout_gen imports this module
    from origami.kmajor import STAGING_MIN_DIM

    return _draw_training(KMAJOR_SEED, KMAJOR_PER_SET, True,
                          lambda dims: dims[0] < STAGING_MIN_DIM and _aligned(dims, "fp8_e4m3"))


UNALIGNED_SEED = 20261206
UNALIGNED_PER_SET = {"dlrm": 8, "square": 6, "skinny": 5, "longk": 5}


def unaligned() -> list[dict]:
    """Training shapes for tf32 and fp8 without TMA: operands under 16 bytes aligned (an odd N or K), so a
    launch cannot stage an N-major B K-major (``origami.kmajor.kmajor_staging`` needs a TMA problem) and
    the wide MMA reads it through registers at any M; fp8's are also register-staged (1-byte rows, under
    cp.async's 4 bytes). From the held-out split's dlrm, square, skinny and long-K distributions
    (``benchmarks.heldout_gen._draw``, the unaligned draws), by ``random.Random(UNALIGNED_SEED)``, never a
    shape of the held-out split. Swept as tf32 and fp8 (``--jobs unaligned:fp8_e4m3 unaligned:tf32``): the
    kmajor set is 16-byte aligned with M under STAGING_MIN_DIM, so before this set no training row held
    the regime of the H100's held-out fp8 misses (16384x2045x4325, 32768x3185x4841, 8051^3: each pick ran
    about 4x its prediction)."""
    from benchmarks.heldout_gen import _aligned  # lazy: heldout_gen imports this module

    return _draw_training(UNALIGNED_SEED, UNALIGNED_PER_SET, False, lambda dims: not _aligned(dims, "fp8_e4m3"))


def _draw_training(seed: int, per_set: dict[str, int], aligned: bool, keep) -> list[dict]:
    """``per_set[name]`` shapes per held-out distribution (``benchmarks.heldout_gen._draw(rng, name,
    aligned)``, ``rng = random.Random(seed)``), each one ``keep(dims)`` accepts, never a held-out shape
    and never twice."""
    from benchmarks.heldout_gen import _draw  # lazy: heldout_gen imports this module
    from tritonblas.heldout import heldout_dims

    taken = {d[:3] for d in heldout_dims()}
    rng = random.Random(seed)
    out = []
    for name, count in per_set.items():
        got = 0
        while got < count:
            dims = _draw(rng, name, aligned)
            if dims in taken or not keep(dims):
                continue
            taken.add(dims)
            got += 1
            out.append(dict(m=dims[0], n=dims[1], k=dims[2]))
    return out


def main() -> None:
    root = str(HERE.parent.parent)
    if root not in sys.path:  # run as a script: ragged() imports benchmarks.heldout_gen and origami
        sys.path.insert(0, root)
    from tritonblas.tables import AtomicFile

    HERE.mkdir(exist_ok=True)
    total = 0
    for name, shapes in sets().items():
        with AtomicFile(HERE / f"{name}.yaml") as f:
            f.write(f"# {name}: generated by benchmarks/shapes_gen.py ({len(shapes)} shapes, bf16 row-major unless "
                    "stated)\n" + yaml.safe_dump(shapes, default_flow_style=None, sort_keys=False))
        total += len(shapes)
    print(f"{total} shapes")


if __name__ == "__main__":
    main()

"""Shapes files (DESIGN.md §7): a YAML list of mappings with keys m, n, k and optional batch (1),
a_dtype/b_dtype/c_dtype (bf16), a_layout/b_layout (N), align_bytes (16). Used by `table`, `bench`
and `sweep`. An invalid entry raises ShapesError naming the file and the entry."""

from __future__ import annotations

import os
from pathlib import Path

import yaml

from origami.problem import GemmProblem

__all__ = ["ShapesError", "load_shapes", "parse_shapes"]

_KEYS = {"m", "n", "k", "batch", "a_dtype", "b_dtype", "c_dtype", "a_layout", "b_layout", "align_bytes"}
_ALIGN_FROM = ("a_dtype", "b_dtype", "c_dtype", "a_layout", "b_layout", "batch")


class ShapesError(ValueError):
    """A shapes file is unreadable or holds an invalid entry (the message names both)."""


def parse_shapes(data, where: str = "<shapes>") -> list[GemmProblem]:
    if not isinstance(data, list):
        raise ShapesError(f"{where}: expected a YAML list of mappings with keys m, n, k, got {type(data).__name__}")
    out = []
    for i, e in enumerate(data):
        tag = f"{where}: entry {i}"
        if not isinstance(e, dict):
            raise ShapesError(f"{tag}: expected a mapping with keys m, n, k, got {e!r}")
        unknown = set(e) - _KEYS
        if unknown:
            raise ShapesError(f"{tag}: unknown key(s) {', '.join(sorted(map(str, unknown)))}; allowed: {', '.join(sorted(_KEYS))}")
        missing = {"m", "n", "k"} - set(e)
        if missing:
            raise ShapesError(f"{tag}: missing key(s) {', '.join(sorted(missing))}")
        for key in ("m", "n", "k", "batch", "align_bytes"):
            if key in e and (isinstance(e[key], bool) or not isinstance(e[key], int) or e[key] < 0):
                raise ShapesError(f"{tag}: {key} must be a non-negative integer, got {e[key]!r}")
        try:
            if "align_bytes" not in e:  # what contiguous tensors of this shape have (the sweep's, the dispatcher's)
                e = {**e, "align_bytes": GemmProblem.contiguous_align_bytes(
                    e["m"], e["n"], e["k"], **{c: e[c] for c in _ALIGN_FROM if c in e})}
            out.append(GemmProblem(**e))
        except (TypeError, ValueError) as err:
            raise ShapesError(f"{tag}: {err}") from None
    return out


def load_shapes(path: "str | os.PathLike[str]") -> list[GemmProblem]:
    p = Path(path)
    try:
        text = p.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise ShapesError(f"{p}: cannot read: {e}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise ShapesError(f"{p}: not valid YAML: {e}".replace("\n", " ")) from None
    return parse_shapes(data, str(p))

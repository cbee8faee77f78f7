"""Shapes files (DESIGN.md §7): a YAML list of mappings with keys m, n, k and optional batch (1),
a_dtype/b_dtype/c_dtype (bf16), a_layout/b_layout (N), align_bytes (16). Used by `table`, `bench`
and `sweep`. An invalid entry raises ShapesError naming the file and the entry."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from origami._yaml import DuplicateKey, YamlError, load_yaml, unique_keys
from origami.problem import DType, GemmProblem, Layout

__all__ = ["ShapesError", "load_shapes", "parse_shapes", "parse_shapes_text"]

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


_FLOW_LINE = re.compile(r"- \{\s*([a-z_]+\s*:\s*\w+(?:\s*,\s*[a-z_]+\s*:\s*\w+)*)\s*,?\s*\}")
_DECIMAL = re.compile(r"0|[1-9][0-9]*")
_TOKENS = frozenset(d.value for d in DType) | frozenset(x.value for x in Layout)


def _flow_lines(text: str) -> list[dict] | None:
    """The entries of a shapes file written one flow mapping per line (``- {m: 4096, n: 4096, k: 4096}``)
    whose values are plain decimal integers or dtype/layout names — values that mean the same under
    every YAML version — else None (the file goes to the YAML parser)."""
    out = []
    for line in text.splitlines():
        if not line.strip():
            continue
        mo = _FLOW_LINE.fullmatch(line.rstrip())
        if mo is None:
            return None
        d = {}
        for item in mo.group(1).split(","):
            key, _, value = item.partition(":")
            value = value.strip()
            key = key.strip()
            if key in d:
                return None  # a duplicate key: the YAML reader names the entry and both lines
            if _DECIMAL.fullmatch(value):
                d[key] = int(value)
            elif value in _TOKENS:
                d[key] = value
            else:
                return None
        out.append(d)
    return out or None


def load_shapes(path: "str | os.PathLike[str]") -> list[GemmProblem]:
    """The problems of a shapes file. Three readers, one result and one set of errors: a file that is
    plain JSON (a YAML subset) is read by ``json``; one flow mapping per line with plain values by a
    line reader (:func:`_flow_lines`); anything else by the YAML parser (libyaml when present:
    PyYAML's YAML 1.1 semantics, ~75 us per entry). Entries are validated by :func:`parse_shapes`
    (ShapesError naming the file and the entry). Evidence: tests/origami/test_shapes.py (the fast
    readers agree with the YAML parser on 500 random entries and on every YAML-version-dependent value)."""
    p = Path(path)
    try:
        text = p.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise ShapesError(f"{p}: cannot read: {e}") from None
    data: Any = None
    if text.lstrip()[:1] == "[":
        try:
            data = json.loads(text, object_pairs_hook=unique_keys)
        except (ValueError, DuplicateKey):  # a duplicate key: the YAML reader names the entry and both lines
            data = None
    elif text.lstrip()[:1] == "-":
        data = _flow_lines(text)
    if data is None:
        data = parse_shapes_text(text, str(p))
    return parse_shapes(data, str(p))


def _entry_path(path: tuple, key: str) -> str:
    head = f"entry {path[0]}" if path and isinstance(path[0], int) else ".".join(map(str, path)) or "(top level)"
    return ".".join([head, *map(str, path[1:])])


def parse_shapes_text(text: str, where: str):
    """The YAML data of a shapes file's ``text`` through origami's safe reader (no anchors or aliases;
    a duplicate key raises ShapesError naming the entry, the key and both lines)."""
    try:
        return load_yaml(text, where, describe=_entry_path)
    except YamlError as e:
        raise ShapesError(str(e).replace(":\n  ", ": ").replace("\n  ", "; ")) from None

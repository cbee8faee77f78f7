"""The one YAML reader of profiles (``origami.hardware``) and shapes files (``origami.shapes``):
PyYAML's safe loader (libyaml's parser when present) with two
refusals that plain ``yaml.safe_load`` lacks; and the one writer (:func:`dump_yaml`, which
``origami.hardware.render_profile`` uses), whose floats the strict reader reads back as floats.

* **No anchors or aliases.** An alias shares a node, so a 13 KB file of nested aliases (a "billion
  laughs") expands to ~10^9 nodes for any tree walk, and a self-referencing anchor
  (``extra: &a [*a]``) builds a cyclic object that recursion cannot leave. Neither has a use in a
  profile or a shapes file, so both are refused before any tree is built: the event stream is
  scanned (linear in the text) whenever the text contains ``&`` or ``*``, the only characters
  that can start them.
* **No duplicate keys.** PyYAML keeps the last of two equal keys silently
  (https://github.com/yaml/pyyaml/issues/165); every duplicate is reported with both lines.

Errors are :class:`YamlError` (a ``ValueError``) whose message starts with the file name; callers
re-raise them as their own error class. Floats keep PyYAML's YAML 1.1 rules (``4.8e12`` is a
string); the validators reject such strings with a hint.

Evidence: tests/origami/test_yaml_safety.py (billion laughs and self-reference rejected in < 1 s
through every reader, duplicate keys named in profiles and shapes files).
"""

from __future__ import annotations

import math
import re
from typing import Any, Callable

import yaml

__all__ = ["YamlError", "load_yaml", "DuplicateKey", "unique_keys", "dump_yaml", "float_text"]

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class YamlError(ValueError):
    """A YAML text is unreadable, uses anchors/aliases, or repeats a key; the message names the file."""


class DuplicateKey(Exception):
    """Raised by :func:`unique_keys`; ``args[0]`` is the repeated key."""


def unique_keys(pairs: list[tuple[str, Any]]) -> dict:
    """``json.loads``'s ``object_pairs_hook`` with the YAML reader's no-duplicate-keys rule (JSON
    shapes files and tile tables): raises :class:`DuplicateKey`."""
    d = dict(pairs)
    if len(d) != len(pairs):
        seen: set[str] = set()
        for k, _ in pairs:
            if k in seen:
                raise DuplicateKey(k)
            seen.add(k)
    return d


def _refuse_anchors(text: str, where: str) -> None:
    if "&" not in text and "*" not in text:
        return
    for ev in yaml.parse(text, Loader=_Loader):  # noqa: S506 - events only, no construction
        if isinstance(ev, yaml.AliasEvent) or getattr(ev, "anchor", None) is not None:
            what = f"alias *{ev.anchor}" if isinstance(ev, yaml.AliasEvent) else f"anchor &{ev.anchor}"
            raise YamlError(f"{where}: line {ev.start_mark.line + 1}: YAML anchors and aliases are not "
                            f"allowed ({what}); write the values out")


def _duplicates(node: yaml.Node, path: tuple, out: list) -> list:
    """(path of the mapping, key, first line, second line) for every repeated key. Linear: without
    aliases every node is visited once."""
    stack = [(node, path)]
    while stack:
        n, p = stack.pop()
        if isinstance(n, yaml.MappingNode):
            seen: dict[Any, int] = {}
            for key_node, value_node in n.value:
                key = key_node.value if isinstance(key_node, yaml.ScalarNode) else str(key_node.value)
                line = key_node.start_mark.line + 1
                if key in seen:
                    out.append((p, key, seen[key], line))
                else:
                    seen[key] = line
                stack.append((value_node, p + (str(key),)))
        elif isinstance(n, yaml.SequenceNode):
            stack.extend((item, p + (i,)) for i, item in enumerate(n.value))
    out.sort(key=lambda d: d[3])
    return out


# Numbers with one meaning under YAML 1.1 (PyYAML) and 1.2: plain decimal ints, hex, and floats of 1.2's
# core schema. PyYAML also reads 0132 as octal 90, 2:12 as base 60 (132), 0b101 and 1_000, which YAML 1.2
# reads as 132 or as strings: a profile's compute_units: 0132 loaded as 90 compute units.
_INT_TAG, _FLOAT_TAG = "tag:yaml.org,2002:int", "tag:yaml.org,2002:float"
_PORTABLE = {_INT_TAG: re.compile(r"[-+]?(?:0|[1-9][0-9]*)|0x[0-9a-fA-F]+"),
             _FLOAT_TAG: re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
                                    r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)")}


def _unportable_numbers(node: yaml.Node) -> list:
    """(path of the node, its text, line) for every int or float scalar (keys too) not in :data:`_PORTABLE`."""
    out = []
    stack = [(node, ())]
    while stack:
        n, p = stack.pop()
        if isinstance(n, yaml.ScalarNode):
            ok = _PORTABLE.get(n.tag)
            if ok is not None and not ok.fullmatch(n.value):
                out.append((p, n.value, n.start_mark.line + 1))
        elif isinstance(n, yaml.MappingNode):
            for key_node, value_node in n.value:
                key = key_node.value if isinstance(key_node, yaml.ScalarNode) else str(key_node.value)
                stack.append((key_node, p + (str(key),)))
                stack.append((value_node, p + (str(key),)))
        elif isinstance(n, yaml.SequenceNode):
            stack.extend((item, p + (i,)) for i, item in enumerate(n.value))
    out.sort(key=lambda d: d[2])
    return out


def load_yaml(text: str, where: str,
              describe: Callable[[tuple, str], str] | None = None) -> Any:
    """Parse ``text`` (from file ``where``) to Python data, refusing anchors, aliases and duplicate
    keys with a :class:`YamlError`. ``describe(path, key)`` names a duplicate's location (``path`` is
    the tuple of keys and list indices of the mapping holding ``key``); by default the dotted path
    ``compute.compute_units``. Several duplicates give one line each after a count line."""
    try:
        _refuse_anchors(text, where)
        loader = _Loader(text)
        try:
            node = loader.get_single_node()
            dups = _duplicates(node, (), []) if node is not None else []
            if dups:
                name = describe or (lambda p, k: ".".join(str(x) for x in p + (k,)))
                lines = [f"{where}: {name(p, k)}: duplicate key {k!r} (lines {a} and {b})" for p, k, a, b in dups]
                raise YamlError(lines[0] if len(lines) == 1
                                else f"{len(lines)} duplicate keys in {where}:\n  " + "\n  ".join(lines))
            odd = _unportable_numbers(node) if node is not None else []
            if odd:
                name = describe or (lambda p, k: ".".join(str(x) for x in p + (k,)))

                def label(p: tuple) -> str:  # describe may name only the mapping holding the key (shapes' entry i)
                    if not p:
                        return "(top level)"
                    text = name(p[:-1], str(p[-1]))
                    return text if text.endswith(str(p[-1])) else f"{text}.{p[-1]}"

                lines = [f"{where}: {label(p)}: {t!r} (line {line}) is a number "
                         f"YAML 1.1 and 1.2 read differently (a leading-zero octal, base 60, binary or '_' "
                         f"separators); write it in plain decimal" for p, t, line in odd]
                raise YamlError(lines[0] if len(lines) == 1
                                else f"{len(lines)} ambiguous numbers in {where}:\n  " + "\n  ".join(lines))
            try:
                return loader.construct_document(node) if node is not None else None
            except (ValueError, TypeError, AttributeError, KeyError) as e:
                # a scalar resolved (or tagged: !!timestamp soon) to a type whose constructor fails, e.g.
                # 0x_ read as a YAML 1.1 int: int("", 16); PyYAML raises the constructor's own error
                raise YamlError(f"{where}: not valid YAML: a value cannot be read as its type "
                                f"({type(e).__name__}: {e})") from None
        finally:
            loader.dispose()
    except yaml.YAMLError as e:
        raise YamlError(f"{where}: not valid YAML: {e}".replace("\n", " ")) from None


# --- writing -----------------------------------------------------------------------------------
class _Dumper(yaml.SafeDumper):
    """Flow-style lists (``[64, 8, 16]``) and floats the strict loader reads back as floats."""


def _represent_list(d: yaml.SafeDumper, data: list):
    return d.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=True)


def float_text(v: float) -> str:
    """``v`` as :func:`dump_yaml` writes it: 6 significant digits, always a YAML 1.1 float (a decimal
    point, and a signed exponent where there is one)."""
    if v == 0:
        return "0.0"
    if 1e-3 <= abs(v) < 1e6:
        text = f"{v:.6g}"
        return text if ("." in text or "e" in text) else text + ".0"
    mant, exp = f"{v:.6e}".split("e")
    mant = mant.rstrip("0")
    if mant.endswith("."):
        mant += "0"
    return f"{mant}e{exp}"  # e.g. 4.8e+12: a decimal point and a signed exponent (YAML 1.1 float)


def _represent_float(d: yaml.SafeDumper, v: float):
    if not math.isfinite(v):
        return yaml.SafeDumper.represent_float(d, v)
    return d.represent_scalar("tag:yaml.org,2002:float", float_text(v))


_Dumper.add_representer(list, _represent_list)
_Dumper.add_representer(tuple, _represent_list)
_Dumper.add_representer(float, _represent_float)


def dump_yaml(data: Any) -> str:
    """YAML text of ``data`` in insertion order: flow-style lists, :func:`float_text` floats."""
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=1 << 20)

"""A YAML number, boolean or date where the config wants text: `model: 1e3`, `slices: [2024]`, `model: 2026-12-01`,
`features: {123: numeric}`.

Every text setting (names, labels, topics, URLs) refuses it the same way, naming the field, showing the scalar as
written and how to quote it: msgspec alone said "Expected `str`, got `float` (1000.0)", a value the user never
wrote, and a number key was "invalid top level". It is refused, not read as the text written: to YAML (1.2, as
JSON) a plain `1e3` is a number, and every other tool reading the file (yq, a linter, a templating step) sees and
may rewrite it as `1000.0`; quoting says what is meant once for all of them.
"""

from __future__ import annotations

import copy
import re
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from .config_yaml import StrictLoader

NOT_TEXT = re.compile(r"^Expected `str(?: \| null)?`(?:, got `\w+`)? - at (`key` in )?`\$\.?(.*)`$")
"""msgspec's error for a value that is not text given to a text field (or as a mapping key) at a path."""
KINDS = {f"tag:yaml.org,2002:{t}": kind for t, kind in (("int", "a number"), ("float", "a number"),
                                                         ("bool", "a boolean"), ("timestamp", "a date"))}
"""YAML's resolved tags of the scalars refused as text (null is not: `model: null` reads as unset)."""
_PART = re.compile(r"[^.\[\]]+|\[\d+\]")


def _child(node: Node | None, part: str) -> Node | None:
    """The node under `node` at one path part ('name' of a mapping, '[3]' of a sequence); None if absent."""
    if isinstance(node, SequenceNode) and part.startswith("["):
        i = int(part[1:-1])
        return node.value[i] if i < len(node.value) else None
    if isinstance(node, MappingNode):
        return next((v for k, v in node.value if isinstance(k, ScalarNode) and k.value == part), None)
    return None


def _at(data: Any, parts: list[str]) -> Any:
    """The value of the parsed config at a path (parts as _PART finds them)."""
    for part in parts:
        data = data[int(part[1:-1])] if part.startswith("[") else data[part]
    return data


def _key_node(node: Node | None, value: Any) -> ScalarNode | None:
    """The key node of a mapping node that YAML reads as `value` (a number or boolean)."""
    if not isinstance(node, MappingNode):
        return None
    for k, _ in node.value:
        if isinstance(k, ScalarNode) and k.tag in KINDS:
            read = yaml.load(k.value, Loader=StrictLoader)  # noqa: S506 - a SafeLoader subclass
            if type(read) is type(value) and read == value:
                return k
    return None


def _quoted(data: Any, parts: list[str], old_key: Any, written: str) -> Any:
    """A copy of `data` with the scalar at `parts` (or, with `old_key`, that key of the mapping there) as `written`."""
    out = copy.deepcopy(data)
    if old_key is not None:
        holder = _at(out, parts)
        items = [(written if k is old_key or (type(k) is type(old_key) and k == old_key) else k, v)
                 for k, v in holder.items()]
        holder.clear()
        holder.update(items)
    else:
        last = parts[-1]
        _at(out, parts[:-1])[int(last[1:-1]) if last.startswith("[") else last] = written
    return out


def unquoted(error: str, data: Any, text: str, resolved: str) -> tuple[str, str, Any] | None:
    """For msgspec's `error` on the config `data` parsed from `text`: (the field, '' for the top level; the line
    saying what was written and how to quote it; `data` with that scalar as the text written); None for any other
    error, or a scalar not found as written. `resolved`: the field as from_dict names it (a path through a
    mapping with its key)."""
    m = NOT_TEXT.match(error)
    if not m:
        return None
    key, field = bool(m.group(1)), m.group(2)
    if "[...]" in field and not key:
        field = resolved  # config_fields.dict_entry named the mapping key msgspec did not
    parts = _PART.findall(field)
    if "".join(p if p.startswith("[") else f".{p}" for p in parts).lstrip(".") != field:
        return None  # a path through a mapping msgspec did not name ('[...]'), or a key with a dot
    try:
        node: Node | None = yaml.compose(text, Loader=StrictLoader)
    except yaml.YAMLError:
        return None
    for part in parts:
        node = _child(node, part)
    try:
        old_key = next((k for k in _at(data, parts) if not isinstance(k, str)), None) if key else None
    except (KeyError, IndexError, TypeError):
        return None
    scalar = _key_node(node, old_key) if key else node
    if not isinstance(scalar, ScalarNode) or scalar.tag not in KINDS:
        return None
    written, kind = scalar.value, KINDS[scalar.tag]
    what = f"key {written}" if key else written
    kind += YAML_BOOLEANS if kind == "a boolean" else ""
    line = f"{what} is {kind}; quote it (\"{written}\") to use it as a name"
    return field, line, _quoted(data, parts, old_key, written)


YAML_BOOLEANS = " to YAML (unquoted yes, no, on, off, true and false are, capitalised too)"
"""Why a word is a boolean: PyYAML reads YAML 1.1, where `no` (Norway's country code), `on` and `Yes` are too."""


def boolean_number(text: str | None, field: str, got: bool, whole: bool, default: Any) -> str:
    """The error for a YAML boolean given to a number field (`threshold: yes`), as written, and what to write
    (tryout: msgspec said only "Expected `float`, got `bool` (True)"); `whole`: the field takes an int; `default`:
    the field's default, shown as an example when it is a number."""
    written = str(got).lower()
    if text is not None:
        try:
            node: Node | None = yaml.compose(text, Loader=StrictLoader)
        except yaml.YAMLError:
            node = None
        for part in _PART.findall(field):
            node = _child(node, part)
        if isinstance(node, ScalarNode) and node.tag == "tag:yaml.org,2002:bool":
            written = node.value
    number = "a whole number" if whole else "a number"
    example = f", e.g. {default!r} (the default)" if isinstance(default, (int, float)) and not isinstance(
        default, bool) else ""
    return f"{written} is a boolean{YAML_BOOLEANS}, not {number}: write {number} here{example}"


def line_of(text: str, field: str) -> int | None:
    """The 1-based line of the setting at `field` (`labels.horizon`, `triggers[0].window`, `ab.arms.B`) in the YAML
    `text`: the line of its key (of the list item for an index); of the deepest part found when the path goes
    further than the file (an unknown field's section), None when not even its first part is in the file."""
    try:
        node: Node | None = yaml.compose(text, Loader=StrictLoader)
    except yaml.YAMLError:
        return None
    line = None
    for part in _PART.findall(field):
        if isinstance(node, MappingNode) and not part.startswith("["):
            pair = next(((k, v) for k, v in node.value if isinstance(k, ScalarNode) and k.value == part), None)
            if pair is None:
                return line
            line, node = pair[0].start_mark.line + 1, pair[1]
        else:
            child = _child(node, part)
            if child is None:
                return line
            line, node = child.start_mark.line + 1, child
    return line

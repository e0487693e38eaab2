"""The YAML reading of config files: PyYAML's safe loader, stricter where "last one wins" or YAML 1.1 would
silently change what the user wrote.

A key given twice in one mapping is an error naming both places (a trigger with `value: 0.7, value: 0.1`
became `< 0.1`; a second `kafka:` block replaced the first), as duplicate keys in events are refused; and
exponent-only floats (`5e-1`, `1E3`), strings under YAML 1.1, are numbers as in YAML 1.2 and JSON.
"""

from __future__ import annotations

import re
from typing import Any

import yaml
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode

from .decimal_comma import COMMA_NUMBER, comma_fix

MERGE_TAG = "tag:yaml.org,2002:merge"


class StrictLoader(yaml.SafeLoader):
    """SafeLoader refusing duplicate mapping keys, reading `5e-1` as a float."""

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        """Refuse a key given twice among this mapping's own keys (keys merged in by `<<` may be overridden)."""
        first: dict[Any, Any] = {}
        for key_node, _ in node.value:
            if key_node.tag == MERGE_TAG:
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                earlier = first.setdefault(key, key_node)
            except TypeError:  # an unhashable key: the base constructor says so
                continue
            if earlier is not key_node:
                raise ConstructorError(
                    "while constructing a mapping", node.start_mark,
                    f"key {key!r} is given twice (first at line {earlier.start_mark.line + 1}, column "
                    f"{earlier.start_mark.column + 1}): remove one", key_node.start_mark)
        return super().construct_mapping(node, deep)


StrictLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float", re.compile(r"^[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)[eE][-+]?[0-9]+$"),
    list("-+.0123456789"))


def load_yaml(text: str) -> Any:
    """Parse a config file's text (yaml.YAMLError on a syntax error, a duplicate key or nesting too deep to read:
    PyYAML recurses per level, and ~500 nested brackets ended the command in "unexpected RecursionError", exit 1)."""
    try:
        return yaml.load(text, Loader=StrictLoader)  # noqa: S506 - a SafeLoader subclass
    except RecursionError:
        raise yaml.YAMLError("nested too deeply to read (hundreds of levels of brackets or indentation; "
                             "a config is a few levels deep)") from None


def yaml_where(err: yaml.YAMLError) -> str:
    """One line for a YAML syntax error: where (1-based line and column) and what, without PyYAML's source excerpt."""
    mark = getattr(err, "problem_mark", None)
    problem = getattr(err, "problem", None) or str(err).splitlines()[0]
    context = getattr(err, "context", None)
    started = getattr(err, "context_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    if context and started is not None:
        context += f" that starts at line {started.line + 1}, column {started.column + 1}"
    return f"{where}: {problem}" + (f" ({context})" if context else "")


_COMMA_NUMBER = re.compile(rf"(?:^|[{{,\s-])[^\s:#{{}}\[\],]+\s*:\s+(['\"]?)({COMMA_NUMBER})\1(?=\s*(?:[,}}\]#]|$))")
"""A setting whose value is digits with a comma (`threshold: 0,5`, `{value: 0,7}`, `max_features: 1,000`)."""


def decimal_comma(text: str, line: int | None) -> str:
    """' (`0,5` on line 3: numbers take a decimal point, e.g. 0.5; …)' when the 1-based `line` of `text` sets a
    value written with a decimal comma, else ''. Tryout: `threshold: 0,5` (a European locale's decimal) read as
    text ("Expected `float`, got `str`"), and inside {…} YAML splits it into `0` and a key `5`, whose error
    ("key 5 is given twice", "key 7 is a number") did not point at the comma at all."""
    lines = text.splitlines()
    if line is None:  # an error at the top level: the first such value in the file
        line = next((i for i, t in enumerate(lines, 1) if _COMMA_NUMBER.search(t)), None)
    if line is None or not 1 <= line <= len(lines):
        return ""
    m = _COMMA_NUMBER.search(lines[line - 1])
    if m is None:
        return ""
    written = m.group(2)
    fix = comma_fix(written)
    split = " inside {…} or […] YAML reads the comma as separating two entries;" if re.search(
        r"[{\[]", lines[line - 1]) else ""
    return (f" (`{written}` on line {line}: a decimal comma?{split} numbers take a decimal point and no thousands "
            f"separator{': write ' + fix if fix else ''})")


EVENT_KEYS = ("prediction_id", "ts")


def events_hint(text: str) -> str:
    """' (… looks like a file of events …)' when the config's first setting line is a JSON event, an object with a
    prediction_id and a ts (tryout: `--config events.jsonl` said only "not valid YAML at line 2 … expected
    '<document start>'", or for one event "unknown field `type`"); '' otherwise."""
    import json

    first = next((line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")), "")
    try:
        event = json.loads(first)
    except ValueError:
        return ""
    if not isinstance(event, dict) or not all(k in event for k in EVENT_KEYS):
        return ""
    return (" (this looks like a file of events, one JSON object a line: --config takes the YAML settings file; "
            "events are fed with `driftline replay FILE`)")


_NO_SPACE = re.compile(r"^\s*(?:-\s+)?([A-Za-z_][\w.-]*):([^\s:/][^\n]*)$", re.M)
"""A setting written without the space YAML needs after its colon (`model:fraud`): YAML reads it as one text."""


def colon_hint(text: str) -> str:
    """' (`model:fraud` on line 1: YAML needs a space after the colon: `model: fraud`)' for the first line of `text`
    (a config file, or the text a setting got) that writes a setting without it, '' when none does. Tryout:
    `model:fraud` said only "top level must be a mapping of settings", nested `horizon:30d` "expected a
    mapping"."""
    m = _NO_SPACE.search(text)
    if m is None:
        return ""
    line = text[:m.start(1)].count("\n") + 1
    where = f" on line {line}" if "\n" in text else ""
    return (f" (`{m.group(1)}:{m.group(2)}`{where}: YAML needs a space after the colon: "
            f"`{m.group(1)}: {m.group(2)}`)")

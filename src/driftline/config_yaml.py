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
    """Parse a config file's text (yaml.YAMLError on a syntax error or a duplicate key)."""
    return yaml.load(text, Loader=StrictLoader)  # noqa: S506 - a SafeLoader subclass


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

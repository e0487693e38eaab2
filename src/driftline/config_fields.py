"""Naming a config setting that does not exist: its full path and the closest setting that does.

msgspec reports an unknown field as "Object contains unknown field `horizen`" at the path of its section
(`labels`); a user needs `labels.horizen` and a hint (`labels.horizon`), as trigger metrics get one. Kept apart
from config.py, which passes its Config struct in.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Iterable, Sequence
from typing import Any


def settings_at(root: type, field: str) -> list[str]:
    """The setting names the `root` struct (the Config) accepts inside `field`: a msgspec path such as `labels`
    or `triggers[0]`, '' for the top level; [] when the path does not lead to a section."""
    import msgspec.inspect as mi

    info: Any = mi.type_info(root)
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", field):
        while isinstance(info, (mi.UnionType, mi.ListType, mi.DictType)):
            if isinstance(info, mi.UnionType):
                info = next((t for t in info.types if not isinstance(t, mi.NoneType)), None)
            else:
                info = info.item_type if isinstance(info, mi.ListType) else info.value_type
        if part.startswith("["):
            continue
        if not isinstance(info, mi.StructType):
            return []
        info = next((f.type for f in info.fields if f.encode_name == part), None)
    while isinstance(info, (mi.UnionType, mi.ListType)):
        info = (next((t for t in info.types if not isinstance(t, mi.NoneType)), None)
                if isinstance(info, mi.UnionType) else info.item_type)
    return [f.encode_name for f in info.fields] if isinstance(info, mi.StructType) else []


def unknown_field(root: type, section: str, name: str) -> str:
    """'unknown field `labels.horizen` (did you mean `labels.horizon`?)': the full path of a setting the config
    does not have, and the closest one it does (difflib, as trigger metrics are suggested)."""
    path = f"{section}.{name}" if section else name
    close = difflib.get_close_matches(name, settings_at(root, section), n=1, cutoff=0.6)
    hint = f" (did you mean `{section + '.' if section else ''}{close[0]}`?)" if close else ""
    return f"unknown field `{path}`{hint}"


def dict_entry(root: type, data: Any, field: str, value_at: Any) -> tuple[str, Any] | None:
    """For a msgspec path through a mapping (`ab.arms[...]`: msgspec does not say which key), the path with the
    key that fails (`ab.arms.ctl`) and its value; None when the path holds no mapping or no single key fails."""
    import copy

    import msgspec

    if "[...]" not in field:
        return None
    prefix, _, rest = field.partition("[...]")
    mapping = value_at(data, prefix)
    if not isinstance(mapping, dict):
        return None
    for key, value in mapping.items():
        trial = copy.deepcopy(data)
        holder = value_at(trial, prefix)
        holder.clear()
        holder[key] = value
        try:
            msgspec.convert(trial, root)
        except msgspec.ValidationError as err:
            if field_path(err) != field:  # a whole-section check (ab: shares sum to 1) fails on one key alone
                continue
            named = f"{prefix}.{key}{rest}"
            return named, value_at({"k": value}, "k" + rest)
    return None


def closest_name(name: str, known: Iterable[str]) -> str | None:
    """The known name closest to `name` (difflib, as settings are suggested), None when none is close."""
    close = difflib.get_close_matches(name, [k for k in known if k != name], n=1, cutoff=0.6)
    return close[0] if close else None


def enum_choices(root: type, field: str, got: Any) -> str | None:
    """"'implicit' is not one of 'explicit', 'implicit_negative_after' (did you mean 'implicit_negative_after'?)"
    for a value outside the Literal at the msgspec path `field` (`labels.policy`, `features[...]`); msgspec's own
    "Invalid enum value 'implicit'" named neither the allowed values nor the closest. None when `field` is no
    Literal."""
    allowed = _literal_at(root, field)
    if allowed is None:
        return None
    text = str(got)
    starts = [a for a in allowed if a.lower().startswith(text.lower())] if text else []
    swapped = [a for a in allowed if sorted(a.lower()) == sorted(text.lower())]  # '=<' for '<='
    near = (swapped or starts)[0] if len(swapped or starts) == 1 else closest_name(text.lower(), allowed)
    hint = f" (did you mean {near!r}?)" if near is not None else ""
    return f"{got!r} is not one of {', '.join(repr(a) for a in allowed)}{hint}"


def _literal_at(root: type, field: str) -> list[str] | None:
    """The values of the Literal type at a msgspec path (mapping values as `[...]`, list items as `[0]`)."""
    import msgspec.inspect as mi

    def plain(t: Any) -> Any:
        while isinstance(t, mi.UnionType):
            t = next((u for u in t.types if not isinstance(u, mi.NoneType)), None)
        return t

    info: Any = mi.type_info(root)
    for part in re.findall(r"[^.\[\]]+|\[[^\]]*\]", field):
        info = plain(info)
        if part.startswith("["):
            if not isinstance(info, (mi.ListType, mi.DictType)):
                return None
            info = info.item_type if isinstance(info, mi.ListType) else info.value_type
        elif isinstance(info, mi.StructType):
            info = next((f.type for f in info.fields if f.encode_name == part), None)
        else:
            return None
    info = plain(info)
    return [str(v) for v in info.values] if isinstance(info, mi.LiteralType) else None


def misspelled_slice(slices: Sequence[str], features: Iterable[str]) -> str | None:
    """'slices[0]: 'contry' is not declared under `features:` (did you mean 'country'? …)' for the first slice
    that is not a declared feature while a declared one is close: with features declared only those are recorded,
    and a misspelled slice would record 'missing' for every prediction, unrecoverable later (tryout). None when
    every slice is declared, no features are declared, or nothing declared is close (a slice on an undeclared
    feature is still allowed)."""
    declared = list(features)
    for i, name in enumerate(slices):
        near = closest_name(name, declared) if declared and name not in declared else None
        if near is not None:
            return (f"slices[{i}]: {name!r} is not declared under `features:` (did you mean {near!r}? to slice by "
                    f"{name!r} itself, declare it under `features:` too)")
    return None


def non_finite(data: Any, path: str = "", seen: set[int] | None = None) -> tuple[str, float] | None:
    """The path (`costs.missed_positive`, `triggers[0].value`) and value of the first number in the parsed config
    that is not finite (`.inf`, `.nan`, `1e400`), or None. No setting means one: msgspec's bounds let `.inf` through
    (`costs.missed_positive: .inf` loaded, then `driftline ab` and `report` ended in an IndexError). Each mapping
    or list is visited once: YAML aliases share them, and a file of nested aliases (8 lines, 9 to the 8th values)
    must not take minutes to check."""
    if isinstance(data, float):
        return None if math.isfinite(data) else (path, data)
    if not isinstance(data, (dict, list)):
        return None
    seen = set() if seen is None else seen
    if id(data) in seen:
        return None
    seen.add(id(data))
    items = data.items() if isinstance(data, dict) else ((f"[{i}]", v) for i, v in enumerate(data))
    for key, value in items:
        key = str(key)
        found = non_finite(value, path + key if key.startswith("[") else f"{path}.{key}" if path else key, seen)
        if found is not None:
            return found
    return None


def field_path(err: Exception) -> str:
    """The path of the field a msgspec ValidationError names (`labels.horizon`, `triggers[0].window`; '' at the top)."""
    m = re.search(r"at `\$(.*)`", str(err))
    return m.group(1).lstrip(".") if m else ""


def value_at(data: Any, field: str) -> Any:
    """The raw value at a msgspec error path such as `labels.horizon` or `triggers[0].window` (None if absent)."""
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", field):
        try:
            data = data[int(part[1:-1])] if part.startswith("[") else data[part]
        except (KeyError, IndexError, TypeError, ValueError):
            return None
    return data


def percent_hint(data: Any, field: str, got: Any) -> str:
    """' (percentages? write shares as fractions: A: 0.5, B: 0.5)' for a number field given as text ending in %
    (verification tryout: `ab.arms: {A: "50%"}` read only "Expected `float`, got `str`", while `A: 50` got the
    hint), else ''. Under `ab.arms` the whole mapping is shown as fractions, as the sum check does."""
    if not isinstance(got, str) or not re.fullmatch(r"\s*[-+]?\d+(\.\d+)?\s*%\s*", got):
        return ""
    arms = value_at(data, "ab.arms") if field.startswith("ab.arms") else None
    if isinstance(arms, dict):
        parts = ", ".join(f"{a}: {_fraction(w)}" for a, w in arms.items())
        return f" (percentages? write shares as fractions: {parts})"
    return f" (a percentage? write it as a fraction: {_fraction(got)})"


def _fraction(v: Any) -> str:
    """'50%' or 50 as '0.5'; a value already at most 1, or not a number, as given."""
    try:
        x = float(v.strip().rstrip("%")) if isinstance(v, str) else float(v)
    except (TypeError, ValueError):
        return str(v)
    return f"{x / 100:g}" if isinstance(v, str) and v.strip().endswith("%") or x > 1 else f"{x:g}"


EXACT_WHOLE = 2 ** 53
"""Largest float every whole number up to which is exact: `1e3` and `1000.0` name 1000; `1e30` names no integer
that was written (it is 1000000000000000019884624838656), so it stays a float and is refused."""


def whole_floats(root: type, data: Any) -> Any:
    """`data` (the parsed config) with each float that is a whole number (`1e3`, `1000.0`, as the CLI's options take
    them) given where the `root` struct wants an integer turned into that int; other values as they are (msgspec
    refuses `1.5`, whole_number_hint says why). Mappings and lists are copied."""
    import msgspec.inspect as mi

    return _whole(mi.type_info(root), data, mi, {})


def _whole(info: Any, data: Any, mi: Any, done: dict[tuple[int, int], Any]) -> Any:
    """whole_floats at one node: `info` the msgspec type there, `data` the value; `done` the mappings and lists
    already seen at this type (YAML aliases share them: a file of nested aliases must not take minutes)."""
    if isinstance(data, (dict, list)):
        key = (id(data), id(info))
        if key not in done:
            done[key] = data  # a mapping that holds itself (`&a [*a]`) is left as it is
            done[key] = _whole_in(info, data, mi, done)
        return done[key]
    return _whole_in(info, data, mi, done)


def _whole_in(info: Any, data: Any, mi: Any, done: dict[tuple[int, int], Any]) -> Any:
    """_whole without the memo."""
    types = info.types if isinstance(info, mi.UnionType) else (info,)
    if isinstance(data, float) and not isinstance(data, bool):
        wants_int = any(isinstance(t, mi.IntType) for t in types) and not any(isinstance(t, mi.FloatType)
                                                                               for t in types)
        if wants_int and math.isfinite(data) and data.is_integer() and abs(data) <= EXACT_WHOLE:
            return int(data)
        return data
    if isinstance(data, dict):
        for t in types:
            if isinstance(t, mi.StructType):
                fields = {f.encode_name: f.type for f in t.fields}
                return {k: _whole(fields[k], v, mi, done) if k in fields else v for k, v in data.items()}
            if isinstance(t, mi.DictType):
                return {k: _whole(t.value_type, v, mi, done) for k, v in data.items()}
    if isinstance(data, list):
        for t in types:
            if isinstance(t, mi.ListType):
                return [_whole(t.item_type, v, mi, done) for v in data]
    return data


def whole_number_hint(got: Any) -> str:
    """': 1.5 is not a whole number' for msgspec's "Expected `int`, got `float`" (it showed `1e3` as `(1000.0)`, a
    value the user never wrote, and no reason), '' for anything else."""
    if isinstance(got, float) and math.isfinite(got):
        if got.is_integer():
            return f"{got:g} is too large to be a whole number written exactly (at most {EXACT_WHOLE:,})"
        return f"{got:g} is not a whole number"
    return ""


_KIND_WORDS = {"array": "a list", "array | null": "a list", "object": "a mapping", "object | null": "a mapping",
               "str": "text", "str | null": "text", "int": "a whole number", "float": "a number", "bool": "true or false"}
_EXPECTED_HELP = {"a list": " (`- item` lines under it, or [a, b])", "a mapping": " (`name: value` lines indented "
                  "under it)"}


def plain_kinds(msg: str) -> str:
    """msgspec's "Expected `array`, got `object`" in the config's words: "expected a list (`- item` lines under it,
    or [a, b]), got a mapping" (tryout: `triggers:` written as one mapping, not a list of them, read as JSON
    jargon). A mismatch of two scalars, and other messages, as they are."""
    m = re.fullmatch(r"Expected `([^`]+)`, got `([^`]+)`(.*)", msg, re.S)
    if not m or m.group(1) not in _KIND_WORDS or m.group(2) not in _KIND_WORDS:
        return msg
    want, got = _KIND_WORDS[m.group(1)], _KIND_WORDS[m.group(2)]
    if want == got or not {want, got} & {"a list", "a mapping"}:  # scalar kinds keep msgspec's words and hints
        return msg
    return f"expected {want}{_EXPECTED_HELP.get(want, '')}, got {got}{m.group(3)}"

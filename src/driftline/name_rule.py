"""The rule for the names an event gives its model, variant and model version: taken exactly as sent, so a name
that cannot be told from another by eye (surrounding whitespace, a control character, an invisible format,
line/paragraph separator or private-use character) is refused at decode — and the config refuses the same names at
load (a `model: " fraud"` could never match an event). A leaf module, imported by core (the decoder) and by the
config, which must not import core.

Tryout: `" m "`, `"m"` and `"M"` became three models, each taking a limits.max_models slot, the spaces nearly
invisible in `models list`; `"evil\\x1b[31mRED"` became a model whose name could not be typed back; `"\\ufeffm"`
(a leading BOM) looked exactly like `m` and took a slot of its own. Case is kept (`M` and `m` stay two names, as
in Prometheus labels). Pure functions: no IO.
"""

from __future__ import annotations

import unicodedata

NAME_FIELDS = ("model", "model_version", "variant")
"""The event fields that become label values and stored keys, checked by `name_problem`."""


_REFUSED = {"Cc": "a control character", "Cf": "an invisible format character", "Zl": "a line separator",
            "Zp": "a paragraph separator", "Co": "a private-use character"}
"""The Unicode categories refused anywhere in a name, with how `name_problem` calls each."""


def bad_name(value: str) -> bool:
    """Whether a name has leading or trailing whitespace or a character of a `_REFUSED` category (control, format
    such as U+200B or U+202E, line/paragraph separator, private use) anywhere; cheap on the common clean name
    (two C-level string methods: every refused category is non-printable to `str.isprintable`)."""
    return value != value.strip() or (not value.isprintable() and any(map(_is_refused, value)))


def _is_refused(ch: str) -> bool:
    return unicodedata.category(ch) in _REFUSED


def name_flaw(value: str) -> str | None:
    """What `bad_name` refuses in a name ('leading or trailing whitespace', 'a control character (U+0001)'), or None."""
    if not bad_name(value):
        return None
    if value != value.strip():
        return "leading or trailing whitespace"
    ch = next(c for c in value if _is_refused(c))
    return f"{_REFUSED[unicodedata.category(ch)]} (U+{ord(ch):04X})"


def name_problem(field: str, value: str) -> str:
    """The dead-letter detail for a name `bad_name` refuses: what is wrong and what to do."""
    what = name_flaw(value)
    return (f"{field} {value[:80]!r} has {what}: names are taken exactly as sent, so it would be a model, variant "
            "or version of its own (not the same as the name without it); fix the name at the producer")


def first_bad_name(model: str | None, version: str | None, variant: str | None) -> str | None:
    """The detail for the first of a prediction's names that `bad_name` refuses, or None when all are clean."""
    if ((model is None or not bad_name(model)) and (version is None or not bad_name(version))
            and (variant is None or not bad_name(variant))):
        return None  # the common case, without building the pairs below
    for field, value in zip(NAME_FIELDS, (model, version, variant)):
        if value is not None and bad_name(value):
            return name_problem(field, value)
    return None

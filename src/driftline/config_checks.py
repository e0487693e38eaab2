"""Field checks of the configuration: durations, URLs a pager opens, model names and reserved label values (each
raises ValueError naming the field; msgspec adds the section path)."""

from __future__ import annotations

import re
from typing import Annotated

import msgspec

from .durations import parse_duration


def _positive_durations(section: str, allow_zero: bool = False, **fields: str | None) -> None:
    """Raise ValueError naming the first field whose duration is not positive (msgspec adds the section path)."""
    for name, text in fields.items():
        if text is not None:
            try:
                parse_duration(text, allow_zero)
            except ValueError as err:
                raise ValueError(f"{section}{name}: {err}") from None


DEFAULT_RUNBOOK_BASE_URL = "https://github.com/driftline/driftline/blob/main/docs/RUNBOOKS.md"
"""Where runbooks live unless `notify.runbook_base_url` says otherwise: docs/RUNBOOKS.md, one section per alert."""


def _absolute_url(name: str, url: str | None, anchor: bool = True) -> None:
    """Raise ValueError naming the field unless `url` is an absolute http(s) URL (a pager must open it)."""
    if url is None:
        return
    if not re.fullmatch(r"https?://[^/\s#]+[^\s]*", url):
        raise ValueError(f"{name}: must be an absolute http(s) URL a pager can open, got {url!r}")
    if not anchor and "#" in url:
        raise ValueError(f"{name}: must not contain '#' (the alert's anchor is appended), got {url!r}")


Duration = Annotated[str, msgspec.Meta(pattern=r"^\s*\d+(\.\d+)?\s*[smhdw]\s*$")]
Probability = Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]
NonNeg = Annotated[float, msgspec.Meta(ge=0.0)]


_MAX_NAME_LEN = 200
"""Longest model name an event may carry (driftline.core.limits.MAX_NAME_LEN; config cannot import core)."""
_RESERVED_LABELS = ("all", "__other__")
"""Label values events may not use (driftline.core.labels.RESERVED; config cannot import core)."""


def _no_reserved(field_name: str, values: list[str]) -> None:
    """Raise ValueError naming the field when an allow-list holds a reserved label value."""
    bad = sorted({v for v in values if v in _RESERVED_LABELS})
    if bad:
        raise ValueError(f"{field_name}: {bad} reserved ('all' is the whole-model series, '__other__' the overflow)")

"""Numbers written with a comma (`0,5`, `1,000`, `1,5d`): a decimal comma of a European locale, or a thousands
separator. Neither the config nor the CLI reads them; this says how to write them instead."""

from __future__ import annotations

import re

COMMA_NUMBER = r"[-+]?\d+(?:,\d+)+[smhdw]?"
"""Digits with a comma, and the unit of a duration if any."""


def comma_fix(written: str) -> str | None:
    """How to write `written` (`0,5` → '0.5', `1,000` → '1.000 or 1000', `1,5d` → '1.5d'); None when it is no
    number with a comma."""
    if not re.fullmatch(COMMA_NUMBER, written):
        return None
    unit = written[-1] if written[-1].isalpha() else ""
    digits = written[:-1] if unit else written
    point = digits.replace(",", ".") + unit if digits.count(",") == 1 else None
    plain = digits.replace(",", "") + unit if all(len(p) == 3 for p in digits.split(",")[1:]) else None
    return " or ".join(f for f in (point, plain) if f is not None) or None


def comma_hint(text: str) -> str:
    """' (a decimal comma? numbers take a decimal point and no thousands separator: write 0.5)' for a value written
    with a comma, else ''."""
    fix = comma_fix(text.strip())
    return f" (a decimal comma? numbers take a decimal point and no thousands separator: write {fix})" if fix else ""

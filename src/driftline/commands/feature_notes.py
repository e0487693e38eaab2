"""What a replay says about feature names it did not monitor because a bucket already tracked `max_features` names
(new-user tryout: 400 events of 901 features each replayed without a word, and 851 names never reached drift).
Names not declared under `features:` are left out by the user's choice; `drift` lists those."""

from __future__ import annotations

from collections import Counter

from ..core.limits import OVER_LIMIT_COUNTER
from ..numbers import count

SHOWN = 5
"""Feature names a warning names (the most frequent first)."""


def _named(counters: Counter[tuple[str, str]], name: str, reason: str) -> tuple[int, list[tuple[str, int]], bool]:
    """(occurrences refused, recorded names by count, whether every occurrence was recorded by name)."""
    total = counters.get(("features_untracked", reason), 0)
    names = sorted(((lbl, v) for (n, lbl), v in counters.items() if n == name), key=lambda kv: (-kv[1], kv[0]))
    return total, names, sum(v for _, v in names) == total


def _names(names: list[tuple[str, int]], complete: bool) -> str:
    n = count(len(names)) if complete else f"at least {count(len(names))}"
    listed = ", ".join(f"{lbl} ({count(v)})" for lbl, v in names[:SHOWN]) + (", …" if len(names) > SHOWN else "")
    return f"{n} feature name{'s' if len(names) != 1 else ''} ({listed})"


def untracked_warnings(counters: Counter[tuple[str, str]], max_features: int) -> list[str]:
    """The replay's warning about feature names over max_features: how many names, the most frequent few and the
    occurrences; [] when there were none. Names are event text: the caller shows them inert."""
    out = []
    total, names, complete = _named(counters, OVER_LIMIT_COUNTER, "over_limit")
    if total:
        which = _names(names, complete) if names else "feature names"
        out.append(f"{which} of this replay went past max_features ({count(max_features)} tracked per bucket) "
                   f"and are not monitored ({count(total)} occurrences; `drift` lists them): declare the features "
                   "that matter under `features:` or raise `max_features`")
    return out

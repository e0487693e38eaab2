"""Field checks of the configuration: durations, URLs a pager opens, model names and reserved label values (each
raises ValueError naming the field; msgspec adds the section path), and Base, the struct every section derives from."""

from __future__ import annotations

import re
from typing import Annotated

import msgspec

from .durations import MAX_WINDOW_DAYS, MAX_WINDOW_S, parse_duration
from .name_rule import name_flaw


def _positive_durations(section: str, allow_zero: bool = False, **fields: str | None) -> None:
    """Raise ValueError naming the first field whose duration is not positive or is longer than 100 years (msgspec
    adds the section path). Tryout: a trigger's `for: 99999999999999d` loaded and `alerts render` wrote a rule
    promtool refuses ('duration out of range'); every config duration has the windows' bound."""
    for name, text in fields.items():
        if text is not None:
            try:
                seconds = parse_duration(text, allow_zero)
            except ValueError as err:
                raise ValueError(f"{section}{name}: {err}") from None
            if seconds > MAX_WINDOW_S:
                raise ValueError(f"{section}{name}: {text} is longer than {MAX_WINDOW_DAYS}d (100 years)")


def _duration_between(name: str, text: str, low_s: float, high_s: float, why: str) -> None:
    """Raise ValueError naming the field unless its duration is within [low_s, high_s] (`why`: the reason)."""
    _positive_durations("", **{name: text})
    if not low_s <= parse_duration(text) <= high_s:
        raise ValueError(f"{name}: {text!r} is outside {low_s:g}s..{high_s:g}s ({why})")


SCRAPE_TIMEOUT_S = (1.0, 60.0)
"""Bounds of exporter.scrape_timeout: below 1 s a scrape of a real database fails every time (0.001s: every scrape
a 503); above 60 s it outlasts Prometheus's default scrape interval, which also bounds Prometheus's own timeout
(SRE tryout: 9999999d was accepted and every scrape then failed with OverflowError)."""


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


class Base(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """Config sections reject unknown keys, so a typo fails at start instead of being ignored."""


_MAX_NAME_LEN = 200
"""Longest model name an event may carry (driftline.core.limits.MAX_NAME_LEN; config cannot import core)."""
_RESERVED_LABELS = ("all", "__other__")
"""Label values events may not use (driftline.core.labels.RESERVED; config cannot import core)."""


def _event_names(field_name: str, values: list[str], what: str = "") -> None:
    """Raise ValueError naming the field for a model, variant or version name the event decoder refuses (name_rule:
    surrounding whitespace, control or invisible characters; `what`: e.g. 'key ' for a mapping key), or one longer
    than events may carry. Tryout: `model: " fraud"` loaded, and no event could ever be counted under it."""
    for value in values:
        flaw = name_flaw(value)
        if flaw is not None:
            raise ValueError(f"{field_name}: {what}{value[:80]!r} has {flaw}: events with such a name are refused "
                             "(dead letter wrong_type), so it could never match one; write the name exactly as the "
                             "events send it")
        if not value or len(value) > _MAX_NAME_LEN:
            raise ValueError(f"{field_name}: {what}{value[:80]!r} must be 1 to {_MAX_NAME_LEN} characters (events' "
                             "names are bounded the same way)")


def _no_reserved(field_name: str, values: list[str]) -> None:
    """Raise ValueError naming the field when a name is or reads as a reserved label value (`ALL`, ' all': the
    label gate refuses events with them so, core.labels)."""
    bad = sorted({v for v in values if v.strip().lower() in _RESERVED_LABELS})
    if bad:
        raise ValueError(f"{field_name}: {bad} reserved ('all' is the whole-model series, '__other__' the overflow)")


ARM_SHARE_TOLERANCE = 1e-4
"""How far `ab.arms` shares may sum from 1 (thirds as 0.3333 pass). Shares that do not sum to 1 were rescaled,
so a typo (A 0.5, B 0.6) turned a balanced 50/50 split into a false sample-ratio-mismatch alarm; off by at most
this much, a share moves by ≤ 5e-5, which the SRM test (p < 0.001) would notice only after ~10⁹ predictions."""


def shares_sum_to_one(arms: dict[str, float]) -> bool:
    """The arms' shares sum to 1 (within ARM_SHARE_TOLERANCE and float slack): a split's rule; under a shadow
    design the form once required, read as every arm scoring every prediction."""
    return abs(sum(arms.values()) - 1.0) <= ARM_SHARE_TOLERANCE + 1e-12  # 0.3333 × 3 is 0.99990000000000001


def old_shadow_shares(arms: dict[str, float], control: str) -> bool:
    """A shadow design's shares in the form once required (summing to 1, the control below 1: A 0.5, S 0.5), read
    as every arm scoring every prediction. A control at 1 is the fractions form, even when the shares sum to 1
    within the tolerance (verification tryout: `{A: 1, S: 0.00005}` read as the old form, the SRM expecting the
    shadow arm sampling 1 in 20,000 predictions to score as many as production)."""
    return shares_sum_to_one(arms) and arms.get(control, 0.0) < 1.0 - ARM_SHARE_TOLERANCE


def _ab_arms(control: str | msgspec.UnsetType, arms: dict[str, float], design: str = "split") -> None:
    """Raise ValueError naming `control` or `arms` when the control is no arm, a control is set without arms, the
    expected shares do not sum to 1 (caught at load: `driftline ab` found the first only when run, silently
    replaced the second's control by the first variant found, and silently rescaled the third), or a shadow design
    does not name its production arm (verification tryout: `ab: {design: shadow}` alone took 'A' as production,
    so with production sending no variant every whole-model number, alert and /metrics series was empty while
    `driftline ab` took the shadow arm as control). Under a shadow design the shares are the fractions of the
    predictions each arm scores (1: all), each at most 1, the control's 1, and need not sum to 1 (churn tryout:
    `arms: {A: 1, S: 1}` was refused as summing to 2); shares summing to 1 still load there, as before."""
    from .config_fields import closest_name

    if design == "shadow" and control is msgspec.UNSET:
        raise ValueError("control: missing: with `ab.design: shadow` the whole-model numbers, alerts and series count "
                         "the production arm only, so name it, with the arms (e.g. control: A, arms: {A: 1, S: 1}, "
                         "each scoring every prediction; `default` is the variant of events sent without one)")
    if not arms:
        if control is not msgspec.UNSET:
            raise ValueError(f"arms: missing, but `ab.control` is {control!r}: the control must be one of the arms; "
                             f"list them with their expected shares (e.g. arms: {{{control}: 0.5, B: 0.5}}), or "
                             "remove `control` to compare the variants found, in equal shares")
        return
    if control is msgspec.UNSET:
        control = "A"
    if control not in arms:
        near = next((a for a in arms if a.lower() == control.lower()), None) or closest_name(control, arms)
        hint = f" (did you mean {near!r}?)" if near else ""
        raise ValueError(f"control: {control!r} is not one of ab.arms {sorted(arms)}{hint}")
    shares = ", ".join(f"{a}: {w:g}" for a, w in arms.items())
    if design == "shadow":  # every arm scores the same predictions: a share is the fraction an arm scores
        if old_shadow_shares(arms, control):  # the form once required (A: 0.5, S: 0.5): read as before
            return
        over = [a for a, w in arms.items() if w > 1.0 + 1e-12]
        if over:
            fix = (" (percentages? write them as fractions: " + ", ".join(f"{a}: {w / 100:g}" for a, w in arms.items())
                   + ")") if all(w <= 100 for w in arms.values()) else ""
            raise ValueError(f"arms: {', '.join(repr(a) for a in over)} {'has' if len(over) == 1 else 'have'} a share "
                             f"over 1 ({shares}): under `ab.design: shadow` every arm scores the same predictions, "
                             f"so an arm's share is the fraction of them it scores (1 = every one; the shares need "
                             f"not sum to 1){fix}")
        if arms[control] < 1.0 - ARM_SHARE_TOLERANCE and len(set(arms.values())) > 1:
            raise ValueError(f"arms: the control {control!r} scores {arms[control]:g} of the predictions ({shares}): "
                             f"under `ab.design: shadow` the control is production and scores every one (share 1), "
                             f"and each shadow arm the fraction it scores; arms that split the traffic between them "
                             f"are a split (`ab.design: split`, shares summing to 1): see *A shadow arm beside a "
                             f"split* in the README")
        return
    total = sum(arms.values())
    if not shares_sum_to_one(arms):
        fix = (" (percentages? write them as fractions: " + ", ".join(f"{a}: {w / 100:g}" for a, w in arms.items())
               + ")") if abs(total - 100.0) <= 100 * ARM_SHARE_TOLERANCE else ""
        whole = [a for a, w in arms.items() if abs(w - 1.0) <= ARM_SHARE_TOLERANCE and a != control]
        if whole and not fix:  # a shadow arm beside the split (churn tryout: A 0.5, B 0.5, S 1.0)
            s = whole[0]
            fix = (f" ({s!r} at 1 scores every prediction: a shadow arm takes no share of a split. List only the "
                   f"arms that split the traffic here, and read {s!r} against {control!r} with `ab.design: shadow`, "
                   f"`control: {control}`, `arms: {{{control}: 1, {s}: 1}}` in a config of its own: see *A shadow arm "
                   f"beside a split* in the README)")
        raise ValueError(f"arms: the expected shares sum to {total:g} ({shares}); they must sum to 1 under "
                         f"`ab.design: split`, where each prediction goes to one arm (within {ARM_SHARE_TOLERANCE:g}: "
                         f"thirds as 0.3333){fix}; rescaling them would make the sample-ratio-mismatch check test a "
                         "split nobody planned")

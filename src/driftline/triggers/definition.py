"""Whether a stored trigger state was judged under the configured definition of its trigger (Rule.fingerprint), and
the state as every output shows it: a reading judged under another definition is not the current rule's reading.

User tryout: after `fpr_high` was edited to `variant: control, value: 0.12`, `driftline alerts` showed the new line
next to the old reading ("ok 0.104 n=6,938", the whole model's) until the next evaluation.
"""

from __future__ import annotations

from typing import Any

from .model import Rule, TriggerState

CURRENT, CHANGED, UNKNOWN = "current", "changed", "unknown"
"""The stored state was judged under the configured definition; under another one; by a driftline that did not
record the definition (a state stored before migration 0015_rulefp)."""

READING = ("value", "low", "high", "judged", "n", "window")
"""The fields of a state that are its definition's reading (moved aside when that is not the configured one)."""


def definition(rule: Rule, state: TriggerState) -> str:
    """CURRENT, CHANGED or UNKNOWN: how the definition that judged `state` relates to `rule`."""
    if state.fingerprint is None:
        return UNKNOWN
    return CURRENT if state.fingerprint == rule.fingerprint else CHANGED


def shown_state(rule: Rule, state: TriggerState) -> dict[str, Any]:
    """The state's JSON with `definition`; unless CURRENT, its reading is moved to `previous_reading` and the reading
    fields are null, so no output presents it as the configured rule's."""
    doc = {**state.to_json(), "definition": definition(rule, state), "previous_reading": None}
    if doc["definition"] != CURRENT:
        doc["previous_reading"] = {k: doc[k] for k in READING}
        doc.update({k: None for k in READING})
    return doc


def note(name: str, kind: str, judged_at: str, state: str, every: str) -> str:
    """The line under `alerts` for a trigger whose stored state is not the configured definition's."""
    why = ("its definition changed after it was last judged" if kind == CHANGED
           else "its state was stored by a driftline that did not record the definition it judged")
    return (f"{name}: {why} (at {judged_at}, state {state}), so no value, interval or n of that judgement is shown; "
            f"the next evaluation (`serve` every {every}, or `driftline alerts evaluate`) judges the configured "
            "definition")

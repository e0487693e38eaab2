"""Model, variant and version names are taken exactly as sent, so one a reader cannot tell from another (surrounding
whitespace, a control, invisible format, separator or private-use character) is refused at decode, identically on
the batch and the per-event path."""

from __future__ import annotations

import json

import pytest

from driftline.core.decode_many import decode_many
from driftline.core.events import REASONS, Decoded, DeadLetter, decode
from driftline.name_rule import bad_name

from test_decode_many import Rec
from test_events import GOOD_PRED

BAD = [("model", " m "), ("model", "m "), ("model", " m"), ("model", "   "), ("model", "m\t"), ("model", "m\u00a0"),
       ("model", "evil\x1b[31mRED"), ("model", "a\u0085b"), ("model", "a\x7fb"), ("variant", " B"),
       ("model_version", "v2\n"), ("model_version", "v\x012"),
       # invisible format, separator and private-use characters (tryout: "\ufeffm" looked like "m", took a slot)
       ("model", "\ufeffm"), ("model", "\u202em"), ("model", "a\u200bb"), ("variant", "a\u2028b"),
       ("model_version", "v\u20292"), ("model", "m\u200d"), ("variant", "a\ue000b"), ("model", "a\U000e0041")]


@pytest.mark.parametrize("field, value", BAD)
def test_a_name_with_surrounding_whitespace_or_a_control_character_is_refused(field, value):
    """Tryout: " m ", "M" and "m" were three models, each taking a limits.max_models slot."""
    for ascii_only in (True, False):
        raw = json.dumps(GOOD_PRED | {field: value}, ensure_ascii=ascii_only).encode()
        d = decode(raw, "t", 0, 1)
        assert isinstance(d, DeadLetter) and d.reason == "wrong_type" and d.reason in REASONS
        assert d.detail.startswith(f"{field} {value!r} has ") and "fix the name at the producer" in d.detail
        batch = decode_many([Rec("t", 0, 0, json.dumps(GOOD_PRED).encode()), Rec("t", 0, 1, raw)])
        assert isinstance(batch[0], Decoded) and batch[1] == d


def test_the_detail_says_which_rule_and_which_character():
    assert "leading or trailing whitespace" in decode(json.dumps(GOOD_PRED | {"model": " m "}).encode(),
                                                      "t", 0, 0).detail
    assert "control character (U+001B)" in decode(json.dumps(GOOD_PRED | {"model": "e\x1bx"}).encode(),
                                                    "t", 0, 0).detail
    for name, what in (("a\u200bb", "an invisible format character (U+200B)"),
                       ("\ufeffm", "an invisible format character (U+FEFF)"),
                       ("a\u2028b", "a line separator (U+2028)"), ("a\u2029b", "a paragraph separator (U+2029)"),
                       ("a\ue000b", "a private-use character (U+E000)")):
        assert what in decode(json.dumps(GOOD_PRED | {"model": name}).encode(), "t", 0, 0).detail


@pytest.mark.parametrize("name", ["m", "M", "fraud model", "fr\u00e9", "a\u00a0b", "模型", "v2.1-rc"])
def test_clean_names_are_kept_as_sent_case_and_inner_spaces_included(name):
    d = decode(json.dumps(GOOD_PRED | {"model": name, "variant": name}).encode(), "t", 0, 0)
    assert isinstance(d, Decoded) and d.event.model == name and d.event.variant == name
    assert not bad_name(name)


def test_a_nul_is_still_nul_in_text_not_a_control_character():
    d = decode(json.dumps(GOOD_PRED | {"model": "m\x00"}).encode(), "t", 0, 0)
    assert d.reason == "nul_in_text"

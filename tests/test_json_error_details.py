"""Dead-letter details of payloads that are not JSON say where and, for the usual mistakes, what is wrong (SRE
tryout: a NaN score read "JSON is malformed: invalid character (byte 145)", a lone surrogate "Input data was
truncated"), on both decode routes (one event, a batch)."""

from __future__ import annotations

import pytest

from driftline.core.decode_many import decode_many
from driftline.core.events import DeadLetter, decode
from driftline.ingest.pipeline import RawRecord

HEAD = b'{"type":"prediction","prediction_id":"a","model":"fraud","ts":1764460800,'


@pytest.mark.parametrize(("raw", "says"), [
    (HEAD + b'"score":NaN}', ['invalid character at byte offset ', 'near …', '"score":NaN}',
                              "NaN and Infinity are not JSON numbers"]),
    (HEAD + b'"score":-Infinity}', ['"score":-Infinity}', "NaN and Infinity are not JSON numbers"]),
    (HEAD + b'"score":0.5,"features":{"c":"\\ud800"}}', ["lone UTF-16 surrogate escape"]),
    (HEAD + b'"score":0.5,"features":{"c":"\\ud800\\u0041"}}', ["high+low pair", "near …"]),
    (HEAD + b'"score":0.5,}', ["trailing comma", '"score":0.5,}']),
    (HEAD + b'"score":0.5', ["ends before its last value is complete"]),
    (b'\x01{"a":1}', ["near \\x01{"]),
    (HEAD.replace(b'"prediction_id":"a"', b'"prediction_id":"\\ud800"') + b'"score":0.5}',
     ["lone UTF-16 surrogate escape \\ud800 at byte offset 38", "is not a character"]),
    (HEAD.replace(b'"prediction_id":"a"', b'"prediction_id":"a\\ud800b"') + b'"score":0.5}',
     ["lone UTF-16 surrogate escape \\ud800"]),
    (HEAD + b'"score":0.5,"features":{"c":"\\udc00"}}', ["lone UTF-16 surrogate escape \\udc00"]),
    (HEAD.replace(b'"prediction_id":"a"', b'"prediction_id":"\xc3("') + b'"score":0.5}',
     ["Invalid UTF-8 encoded string at byte offset 38", '"prediction_id":"\\xc3("']),
])
def test_the_detail_says_where_and_what(raw: bytes, says: list[str]) -> None:
    one = decode(raw, "t", 0, 0)
    (many,) = decode_many([RawRecord("t", 0, 0, raw)])
    for letter in (one, many):
        assert isinstance(letter, DeadLetter) and letter.reason == "invalid_json"
        for part in says:
            assert part in letter.detail, letter.detail
        assert "\n" not in letter.detail and len(letter.detail) < 300

"""core/utc_epochs.py gives `datetime.timestamp` bit for bit, or None; decode_many's clean runs take it, and their
names check (one joined string) agrees with `bad_name` name by name: the events and refusals stay `decode`'s."""

from __future__ import annotations

import json
from datetime import date, datetime, timedelta, timezone

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from driftline.core.decode_many import RUN, _clean_names, _clean_run, decode_many
from driftline.core.events import Decoded, _tagged_dec, decode
from driftline.core.limits import Limits
from driftline.core.utc_epochs import _LEAP, _MONTH_START, _YEAR_START, days_from_civil, utc_epochs
from driftline.name_rule import bad_name

from test_decode_many import Rec

ZONES = st.sampled_from([timezone.utc, timezone(timedelta(0)), timezone(timedelta(hours=1)),
                         timezone(timedelta(hours=-5, minutes=-30)), None])
ANY_STAMP = st.one_of(st.datetimes(timezones=ZONES), st.floats(0, 2e9), st.integers(0, 2 * 10 ** 9))
NEAR = st.datetimes(min_value=datetime(1686, 1, 1), max_value=datetime(2255, 1, 1))
"""Within 2**53 µs of the epoch: the fast path's range."""


def _hex(values: list[float]) -> list[str]:
    return [v.hex() for v in values]


@settings(max_examples=300, deadline=None)
@given(st.lists(ANY_STAMP, min_size=0, max_size=40))
def test_any_stamps_give_timestamp_or_none(stamps):
    got = utc_epochs(stamps)
    if got is not None:
        assert _hex(got.tolist()) == _hex([s.timestamp() for s in stamps])


@settings(max_examples=300, deadline=None)
@given(st.lists(NEAR, min_size=1, max_size=40), st.booleans())
def test_utc_stamps_in_one_layout_take_the_fast_path(naive, whole):
    stamps = [s.replace(tzinfo=timezone.utc, microsecond=0 if whole else max(s.microsecond, 1)) for s in naive]
    got = utc_epochs(stamps)
    assert got is not None
    assert _hex(got.tolist()) == _hex([s.timestamp() for s in stamps])


def test_edges_and_mixed_layouts():
    utc = timezone.utc
    assert utc_epochs([datetime(1970, 1, 1, tzinfo=utc)]).tolist() == [0.0]
    assert utc_epochs([datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=utc)]).tolist() == [-1e-06]
    assert utc_epochs([datetime(2026, 1, 1, 0, 0, 0, 1, utc), datetime(2026, 1, 1, tzinfo=utc)]) is None  # mixed
    assert utc_epochs([datetime(2300, 1, 1, 0, 0, 0, 1, utc)]) is None  # past 2**53 µs
    assert utc_epochs([datetime(2026, 1, 1, 0, 0, 0, 1)]) is None  # naive: local time for timestamp()
    assert utc_epochs([datetime(2026, 1, 1, 0, 0, 0, 1, timezone(timedelta(hours=1)))]) is None
    assert utc_epochs([1.5e9]) is None and utc_epochs([]) is None


def test_days_from_civil_is_the_ordinal_of_every_date():
    first, last = date(1, 1, 1).toordinal(), date(9999, 12, 31).toordinal()
    days = [date.fromordinal(o) for o in range(first, last + 1, 7)] + [date(9999, 12, 31), date(2000, 2, 29)]
    got = days_from_civil(np.array([d.year for d in days]), np.array([d.month for d in days]),
                          np.array([d.day for d in days]))
    want = [d.toordinal() - date(1970, 1, 1).toordinal() for d in days]
    assert got.tolist() == want
    year, month, day = (np.array(v) for v in zip(*[(d.year, d.month, d.day) for d in days]))
    assert (_YEAR_START[year] + _MONTH_START[_LEAP[year] + month] + day).tolist() == want  # utc_epochs' tables


NAME_CHARS = st.sampled_from(list("ab/ -_.:") + ["\t", "\x00", "\x1b", "\x85", "\xa0", "\u200b", "\u2028", "\ue000",
                                                 "\ufeff", "é", "\u3000"])
NAMES = st.text(NAME_CHARS, min_size=0, max_size=6)


@settings(max_examples=500, deadline=None)
@given(st.lists(NAMES, max_size=6), st.lists(st.one_of(st.none(), NAMES), max_size=6),
       st.lists(st.one_of(st.none(), NAMES), max_size=6))
def test_clean_names_agrees_with_bad_name(models, versions, variants):
    names = {v for v in models + versions + variants if v is not None}
    assert _clean_names(models, versions, variants) == (not any(map(bad_name, names)))


def _pred(i: int, ts: str, model: str, variant: str | None) -> bytes:
    body = {"type": "prediction", "prediction_id": f"tx-{i}", "model": model, "ts": ts, "score": 0.5,
            "features": {"country": "FR", "amount": 1.5 + i}}
    if variant is not None:
        body["variant"] = variant
    return json.dumps(body, ensure_ascii=False).encode()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.datetimes(min_value=datetime(1600, 1, 1), max_value=datetime(9999, 12, 31), timezones=ZONES),
                          st.booleans()), min_size=1, max_size=8),
       st.lists(st.tuples(NAMES, st.one_of(st.none(), NAMES)), min_size=1, max_size=4),
       st.integers(1, RUN + 20))
def test_runs_with_any_stamps_and_names_decode_as_decode_does(stamps, names, n):
    """Random timestamps (any zone, offset or none, whole seconds or not, 1600..9999) and names (whitespace,
    controls, invisible characters) hidden in runs of clean events: the same events and refusals as `decode`."""
    clean_ts = "2026-11-04T00:00:56.743922Z"
    payloads = [_pred(i, clean_ts, "fraud", "B") for i in range(n)]
    for k, ((ts, whole), (model, variant)) in enumerate(zip(stamps * len(names), names * len(stamps))):
        text = (ts.replace(microsecond=0) if whole else ts).isoformat()
        payloads[(k * 37) % n] = _pred(k, text, model, variant)
    records = [Rec("t", 0, i, p) for i, p in enumerate(payloads)]
    lim = Limits()
    assert decode_many(records, lim) == [decode(r.payload, r.source, r.partition, r.offset, r.kind, lim)
                                         for r in records]


def test_clean_utc_runs_take_the_fast_path():
    """A run of clean events stamped in UTC is accepted whole, its epochs read from msgspec's text."""
    payloads = [_pred(i, f"2026-11-04T00:{i % 60:02d}:56.{i + 1:06d}Z", "fraud", None if i % 3 else "B")
                for i in range(RUN)]
    records = [Rec("t", 0, i, p) for i, p in enumerate(payloads)]
    joined = b"\n".join(payloads)
    parsed = _tagged_dec.decode_lines(joined)
    assert utc_epochs([ev.ts for ev in parsed]) is not None
    got = _clean_run(records, parsed, joined, Limits())
    assert got is not None and all(type(d) is Decoded for d in got)
    assert got == [decode(r.payload, r.source, r.partition, r.offset) for r in records]

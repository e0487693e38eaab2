"""The replay's key log (ingest/stored_now.KeyLog) answers membership as a set of the logged keys would, and
merging its parts for the first lookup holds one copy of the hashes, not four: np.unique(np.concatenate(...)) took
a 4.9 M-event replay's 2.6 M keys from 55 to 213 MB peak RSS at the end of a replay that expired what it stored."""

from __future__ import annotations

import tracemalloc

from hypothesis import given, settings
from hypothesis import strategies as st

from driftline.ingest.stored_now import KeyLog

KEY = st.tuples(st.text(max_size=4), st.sampled_from(["m", "n"]), st.sampled_from(["a", "b"]))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(KEY, max_size=12), max_size=6), st.lists(st.lists(KEY, max_size=12), max_size=3),
       st.lists(KEY, max_size=20))
def test_contains_answers_as_a_set_of_the_logged_keys(first: list[list[tuple[str, str, str]]],
                                                      later: list[list[tuple[str, str, str]]],
                                                      probes: list[tuple[str, str, str]]) -> None:
    log = KeyLog()
    for part in first:  # parts may repeat keys, within a part and across parts
        log.add(part)
    logged = {k for part in first for k in part}
    for key in probes + [k for part in first for k in part]:
        assert log.contains(key) == (key in logged)
    for part in later:  # keys added after a lookup merged the parts
        log.add(part)
    logged |= {k for part in later for k in part}
    for key in probes + [k for part in first + later for k in part]:
        assert log.contains(key) == (key in logged)
    assert log.size == sum(len(p) for p in first + later) and not log.full


def test_the_first_lookup_holds_one_copy_of_the_hashes() -> None:
    log = KeyLog()
    parts, per_part = 40, 5_000
    for b in range(parts):
        log.add((f"id{b}-{i}", "m", "a") for i in range(per_part))
    hashes = 8 * parts * per_part
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        assert log.contains(("id3-7", "m", "a")) and not log.contains(("id3-7", "m", "b"))
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    assert peak <= 1.25 * hashes, (peak, hashes)  # unique(concatenate) held >= 3 copies at once

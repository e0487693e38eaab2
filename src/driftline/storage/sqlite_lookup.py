"""A replay batch's join lookup on SQLite: the stored predictions and outcomes of its distinct ids, in one statement.

The ids go in as one JSON array bound once and read by `json_each` (issue 18, lookups round): the earlier statement
per 512 ids (a materialised VALUES list, NULL-padded to a few sizes) cost a bind and an ephemeral-table insert per
id and a SQLAlchemy round per chunk. Ids that JSON would escape, or a SQLite without JSON functions, keep that
route. Rows come back ids in order, an id's predictions in (model, variant) order, then the outcomes.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from operator import countOf, itemgetter
from typing import Any

import msgspec
from sqlalchemy import Connection

from ..core.engine import JoinView, OutcomeRecord, PredRecord

PRED_SELECT = ("prediction_id, model, model_version, variant, ts, score, flagged, shard, label, label_ts, implicit, "
               "slice_values")
"""The predictions columns in PredRecord's field order."""
LOOKUP_IDS = 512
"""Ids per VALUES list of the chunked route: fewest instructions per id measured (longer lists cost more per id:
4,096 ~2 % more than 500)."""
LOOKUP_SIZES = tuple(1 << n for n in range(4, LOOKUP_IDS.bit_length()))
"""The VALUES list sizes of the chunked route (see lookup_chunks)."""
_PRED_COLS = ", ".join(f"p.{c}" for c in PRED_SELECT.split(", "))
_OUT_ROW = "o.prediction_id, o.label, o.ts, o.shard, o.matched, NULL, NULL, NULL, NULL, NULL, NULL, NULL"
"""An outcome row padded to a prediction row's width; its score (index 5, NOT NULL in predictions) is NULL."""
_SCORE = itemgetter(5)
JSON_LOOKUP = ("SELECT p.ts, p.score, p.label_ts, json_array(p.prediction_id, p.model, p.model_version, p.variant, "
               "p.flagged, p.shard, p.label, p.implicit, p.slice_values) "
               "FROM json_each(?1) k CROSS JOIN predictions p ON p.prediction_id = k.value UNION ALL "
               "SELECT o.ts, NULL, NULL, json_array(o.prediction_id, o.label, o.shard, o.matched) "
               "FROM json_each(?1) k CROSS JOIN outcomes o ON o.prediction_id = k.value")
"""The ids (a JSON array of strings, in order) each looked up by the primary key of predictions, then of outcomes
(CROSS JOIN keeps json_each outside). `?1` twice binds the text once; SQLite parses it per json_each, still cheaper
than materialising the ids as a CTE (an ephemeral-table insert per id: ~8.5 % of the lookup in a probe). A row is
its floats (an outcome row: its ts and a NULL score) and its other columns as one JSON array: Python 3.11's sqlite3
releases and retakes the GIL around every column it reads (~440 instructions a column), so 4 columns cost less than
12 plus SQLite's JSON text and one msgspec decode of all rows. Floats stay columns: SQLite's JSON writes 15 digits."""
_DECODE = msgspec.json.Decoder().decode


def _json_each_works() -> bool:
    """Whether the driver's SQLite has json_each (built in since 3.38, a compile option before)."""
    try:
        with sqlite3.connect(":memory:") as db:
            return db.execute("SELECT value FROM json_each(?)", ('["a"]',)).fetchall() == [("a",)]
    except sqlite3.Error:
        return False


HAS_JSON_EACH = _json_each_works()


def lookup(conn: Connection, idl: list[str], view: JoinView) -> None:
    """The stored join rows of `idl` (sorted distinct ids) into `view`: one JSON_LOOKUP statement when every id
    is a JSON string as it is (printable, no quote or backslash: nothing to escape, and SQLite 3.40 would cut a
    string at an escaped `\\u0000`), else chunks. The array is joined by hand: json.dumps cost ~460 instructions
    an id more than the join and its checks."""
    if not idl:
        return
    joined = '","'.join(idl)
    if not (HAS_JSON_EACH and joined.isprintable() and "\\" not in joined
            and joined.count('"') == 2 * len(idl) - 2):  # the quotes are the separators' only
        # an id JSON would escape (a quote, backslash or control character), or no json_each
        for chunk in lookup_chunks(idl, null_padded=True):
            _into(conn.exec_driver_sql(_chunk_sql(len(chunk)), chunk).cursor.fetchall(), view)
    else:
        _into_packed(conn.exec_driver_sql(JSON_LOOKUP, (f'["{joined}"]',)).cursor.fetchall(), view)


def _into_packed(rows: list[tuple[Any, ...]], view: JoinView) -> None:
    """Records of JSON_LOOKUP's rows (prediction rows, then outcome rows: a NULL score) into `view`, as _into."""
    if not rows:
        return
    cut = len(rows) - countOf(map(_PACKED_SCORE, rows), None)
    packed = _DECODE("[" + ",".join(map(_PACKED, rows)) + "]")  # the rows' arrays, decoded in one call
    _listed([PredRecord(p, m, mv, v, ts, sc, bool(fl), sh, lb, lts, bool(imp),
                        None if sv is None else json.loads(sv))
             for (ts, sc, lts, _), (p, m, mv, v, fl, sh, lb, imp, sv) in zip(rows[:cut], packed)], view)
    if cut < len(rows):
        view.outcomes.update([(p, OutcomeRecord(p, lb, ts, sh, bool(m)))
                              for (ts, *_), (p, lb, sh, m) in zip(rows[cut:], packed[cut:])])


_PACKED_SCORE = itemgetter(1)
_PACKED = itemgetter(3)


def _into(rows: list[tuple[Any, ...]], view: JoinView) -> None:
    """Records of lookup rows (prediction rows, then outcome rows: a NULL score) into `view`, as pred_records; each
    id's predictions listed in row order."""
    if not rows:
        return
    cut = len(rows) - countOf(map(_SCORE, rows), None)
    _listed([PredRecord(p, m, mv, v, ts, sc, bool(fl), sh, lb, lts, bool(imp), None if sv is None else json.loads(sv))
             for p, m, mv, v, ts, sc, fl, sh, lb, lts, imp, sv in rows[:cut]], view)
    if cut < len(rows):
        view.outcomes.update([(p, OutcomeRecord(p, lb, ts, sh, bool(m))) for p, lb, ts, sh, m, *_ in rows[cut:]])


def _listed(recs: list[PredRecord], view: JoinView) -> None:
    """Predictions (in row order) listed by id in `view`."""
    preds = view.preds
    fresh = {r.prediction_id: [r] for r in recs}  # one prediction per id, the common case
    if len(fresh) == len(recs) and not preds:
        preds.update(fresh)
    else:  # an id with several predictions (variants, models): listed in row order
        for rec in recs:
            if (listed := preds.get(rec.prediction_id)) is None:
                preds[rec.prediction_id] = [rec]
            else:
                listed.append(rec)


_MATERIALIZED = "MATERIALIZED " if sqlite3.sqlite_version_info >= (3, 35) else ""
"""The chunked lookup's CTE hint where SQLite knows it (3.35): ~0.2 % fewer instructions per replayed event than
SQLite's own choice for a CTE used twice (the same plan, also materialised once); older versions reject it."""


def _chunk_sql(n: int) -> str:
    """The chunked route's lookup of n ids (NULL ones match nothing): the ids' VALUES materialised once and each
    looked up by the primary key of predictions, then of outcomes (CROSS JOIN fixing that order)."""
    values = ", ".join(["(?)"] * n)
    return (f"WITH k(id) AS {_MATERIALIZED}(VALUES {values}) "
            f"SELECT {_PRED_COLS} FROM k CROSS JOIN predictions p ON p.prediction_id = k.id UNION ALL "
            f"SELECT {_OUT_ROW} FROM k CROSS JOIN outcomes o ON o.prediction_id = k.id")


def lookup_chunks(idl: list[str], null_padded: bool = False) -> Iterator[tuple[str | None, ...]]:
    """Sorted distinct ids in lists of at most LOOKUP_IDS, each padded to a size of LOOKUP_SIZES by repeating its
    last id (an IN list ignores repeats) or, `null_padded`, with None (a join matches no NULL): a handful of
    statement texts, compiled once and then reused from the driver's statement cache."""
    for i in range(0, len(idl), LOOKUP_IDS):
        chunk = idl[i:i + LOOKUP_IDS]
        size = next(s for s in LOOKUP_SIZES if s >= len(chunk))
        yield tuple(chunk) + (None if null_padded else chunk[-1],) * (size - len(chunk))


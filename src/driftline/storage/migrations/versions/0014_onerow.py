"""One bucket row an hour: the hourly buckets stored per ingestion shard (`run` stored each Kafka partition's
predictions in a row of its own) are merged into shard 0, where every partition's predictions are counted from now
on (core.engine.BUCKET_SHARD); join rows keep their partition as shard.

A window read one row per hour, version, variant and partition: a 7-day `metrics` query on a store written from six
partitions read and summed six times the rows of a replayed one (issue 18). The rows of an hour are merged in shard
order, the order in which a read summed them, with their feature histograms (`bucket_features`); compacted days
(shard -1) are left as they are, and so is an hour with a row that does not decode (damaged, a placeholder; logged):
its rows are read as before, and the label moves that land in shard 0 later still sum right with them. Hours are
taken CHUNK at a time in key order (keyset pages) and their rows streamed (a server-side cursor on PostgreSQL), each
hour merged as its rows arrive: one hour's rows and a page's merged rows are held, whatever the partition count.

An older driftline sees this revision as unknown and refuses the store. The downgrade (run by this version) changes
nothing: a driftline before this revision then reads the merged rows as it read any row (a window sums every shard),
and its own writes for a partition go to that partition's row again (rows of label moves alone included: the sums
stay right).

Revision ID: 0014_onerow
Revises: 0013_featapart
"""
import logging
from collections.abc import Callable, Iterable, Iterator
from itertools import groupby
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0014_onerow"
down_revision = "0013_featapart"
branch_labels = None
depends_on = None
log = logging.getLogger("driftline.storage")

CHUNK = 200
"""Hour groups per keyset page: their merged rows are held until the page is written (each hour's own rows only
while it is merged)."""
SERIES = ("model", "model_version", "variant", "bucket_start")
KEY = (*SERIES, "shard")
_COLS = ", ".join(KEY)
_SERIES_B = ", ".join("b." + k for k in SERIES)
_WHERE_KEY = " AND ".join(f"{k} = :{k}" for k in KEY)
_GROUPS = (f"SELECT {_SERIES_B} FROM buckets b WHERE b.shard >= 0 AND {{after}} GROUP BY {_SERIES_B} "
           f"HAVING count(*) > 1 OR max(b.shard) > 0 ORDER BY {_SERIES_B} LIMIT {{limit}}")
_ROWS = (f"SELECT {', '.join('b.' + k for k in KEY)}, b.data, f.data AS fdata FROM buckets b "
         f"LEFT JOIN bucket_features f ON {' AND '.join(f'f.{k} = b.{k}' for k in KEY)} "
         f"WHERE b.shard >= 0 AND ({_SERIES_B}) >= (:l0, :l1, :l2, :l3) AND ({_SERIES_B}) <= (:h0, :h1, :h2, :h3) "
         f"ORDER BY {', '.join('b.' + k for k in KEY)}")


def _group_pages(bind: Any) -> Iterator[list[tuple[Any, ...]]]:
    """The keys (model, version, variant, bucket start) of the hours stored in more than shard 0, in key order,
    CHUNK at a time."""
    last: tuple[Any, ...] | None = None
    while True:
        after = "TRUE" if last is None else f"({_SERIES_B}) > (:k0, :k1, :k2, :k3)"
        params = {} if last is None else {f"k{i}": v for i, v in enumerate(last)}
        groups = [(r[0], r[1], r[2], int(r[3]))
                  for r in bind.execute(sa.text(_GROUPS.format(after=after, limit=CHUNK)), params)]
        if not groups:
            return
        yield groups
        last = groups[-1]


def merged_hours(rows: Iterable[Any], wanted: set[tuple[Any, ...]], merge: Callable[[list[Any]], Any]
                 ) -> Iterator[tuple[tuple[Any, ...], list[Any], Any]]:
    """(hour key, its rows, merge(rows)) of each wanted hour, as its rows arrive (`rows` in key order): one hour's
    rows held at a time, however many partitions a page's hours hold. merge returning None leaves the hour out."""
    for series, group in groupby(rows, key=lambda r: (r[0], r[1], r[2], int(r[3]))):
        if series in wanted:
            mine = list(group)
            total = merge(mine)
            if total is not None:
                yield series, mine, total


def _merge(rows: list[Any]) -> Any:
    """The rows' statistics added in shard order (the order a window's read summed them in); None when a row
    does not decode (damaged, a placeholder): such an hour is left as it is."""
    from driftline.core.stats import BucketStats

    total = BucketStats()
    try:
        for r in rows:
            total.add(BucketStats.from_bytes(r.data, feature_data=r.fdata))
    except (ValueError, TypeError, KeyError, IndexError, AttributeError):  # msgspec's errors are ValueErrors
        log.warning("0014_onerow: %s %s %s at %s left as %d rows (a row does not decode)", *rows[0][:4], len(rows))
        return None
    return total


def upgrade() -> None:
    # the statistics' own merge (a frozen copy of it would be most of core.stats): any blob an older driftline wrote
    # decodes with today's reader, which is what this migration needs
    from driftline.core.feature_blob import encode_features

    bind = op.get_bind()
    rows_query = sa.text(_ROWS).execution_options(stream_results=True, max_row_buffer=64)  # PG: a server-side cursor
    for groups in _group_pages(bind):
        params = {**{f"l{i}": v for i, v in enumerate(groups[0])}, **{f"h{i}": v for i, v in enumerate(groups[-1])}}
        gone: list[dict[str, Any]] = []
        merged: list[dict[str, Any]] = []
        features: list[dict[str, Any]] = []
        result = bind.execute(rows_query, params)
        for series, rows, total in merged_hours(result, set(groups), _merge):
            gone.extend(dict(zip(KEY, r[:5])) for r in rows)
            target = dict(zip(KEY, (*series, 0)))
            feats, total.features = total.features, {}
            merged.append({**target, "data": total.to_bytes()})
            if feats:
                features.append({**target, "data": encode_features(feats)})
        result.close()
        if gone:
            bind.execute(sa.text(f"DELETE FROM bucket_features WHERE {_WHERE_KEY}"), gone)
            bind.execute(sa.text(f"DELETE FROM buckets WHERE {_WHERE_KEY}"), gone)
            insert = f"({_COLS}, data) VALUES ({', '.join(':' + k for k in KEY)}, :data)"
            bind.execute(sa.text(f"INSERT INTO buckets {insert}"), merged)
            if features:
                bind.execute(sa.text(f"INSERT INTO bucket_features {insert}"), features)


def downgrade() -> None:
    """Nothing to undo (see the module's docstring): the merged rows are read by an older driftline as they are."""

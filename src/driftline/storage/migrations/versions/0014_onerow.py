"""One bucket row an hour: the hourly buckets stored per ingestion shard (`run` stored each Kafka partition's
predictions in a row of its own) are merged into shard 0, where every partition's predictions are counted from now
on (core.engine.BUCKET_SHARD); join rows keep their partition as shard.

A window read one row per hour, version, variant and partition: a 7-day `metrics` query on a store written from six
partitions read and summed six times the rows of a replayed one (issue 18). The rows of an hour are merged in shard
order, the order in which a read summed them, with their feature histograms (`bucket_features`); compacted days
(shard -1) are left as they are, and so is a group with a row that does not decode (damaged, a placeholder): its
rows are read as before, and the label moves that land in shard 0 later still sum right with them. Groups are
taken a page at a time in key order (keyset pages), so a big store is never held in memory.

The downgrade changes nothing: a driftline before this revision reads the merged rows as it read any row (a window
sums every shard), and its own writes for a partition go to that partition's row again (rows of label moves alone
included: the sums stay right). An older driftline sees this revision as unknown and refuses the store.

Revision ID: 0014_onerow
Revises: 0013_featapart
"""
from collections.abc import Iterator
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0014_onerow"
down_revision = "0013_featapart"
branch_labels = None
depends_on = None

CHUNK = 500
"""Hour groups per keyset page."""
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


def upgrade() -> None:
    # the statistics' own merge (a frozen copy of it would be most of core.stats): any blob an older driftline wrote
    # decodes with today's reader, which is what this migration needs
    from driftline.core.feature_blob import encode_features
    from driftline.core.stats import BucketStats

    bind = op.get_bind()
    for groups in _group_pages(bind):
        wanted = set(groups)
        params = {**{f"l{i}": v for i, v in enumerate(groups[0])}, **{f"h{i}": v for i, v in enumerate(groups[-1])}}
        by_group: dict[tuple[Any, ...], list[Any]] = {}
        for r in bind.execute(sa.text(_ROWS), params):
            series = (r[0], r[1], r[2], int(r[3]))
            if series in wanted:
                by_group.setdefault(series, []).append(r)
        gone: list[dict[str, Any]] = []
        merged: list[dict[str, Any]] = []
        features: list[dict[str, Any]] = []
        for series, rows in by_group.items():
            total = BucketStats()
            try:
                for r in rows:  # shard order: the order a window's read summed them in
                    total.add(BucketStats.from_bytes(r.data, feature_data=r.fdata))
            except Exception:  # noqa: BLE001 - a row that does not decode: the group is left as it is
                continue
            gone.extend(dict(zip(KEY, r[:5])) for r in rows)
            target = dict(zip(KEY, (*series, 0)))
            feats, total.features = total.features, {}
            merged.append({**target, "data": total.to_bytes()})
            if feats:
                features.append({**target, "data": encode_features(feats)})
        if gone:
            bind.execute(sa.text(f"DELETE FROM bucket_features WHERE {_WHERE_KEY}"), gone)
            bind.execute(sa.text(f"DELETE FROM buckets WHERE {_WHERE_KEY}"), gone)
            insert = f"({_COLS}, data) VALUES ({', '.join(':' + k for k in KEY)}, :data)"
            bind.execute(sa.text(f"INSERT INTO buckets {insert}"), merged)
            if features:
                bind.execute(sa.text(f"INSERT INTO bucket_features {insert}"), features)


def downgrade() -> None:
    """Nothing to undo (see the module's docstring): the merged rows are read by an older driftline as they are."""

"""The join-store layouts join_store_floor.py compares beyond today's schema, each a class with the same five
operations: create, batch (floor_bench's floor workload on one batch, one transaction), fill (bulk pending
predictions), lookup (an outcome batch's ids, reading the matched predictions' records), expire (one cutoff).

 (c) HashRows: rowid tables keyed by a 63-bit hash of prediction_id holding the id text; an id whose hash is taken
     by another goes to an overflow table of today's shape; no time index (expiry and the implicit-negative pass
     scan the table).
 (d) Segments: one row per batch of packed prediction records (numpy), one per batch of outcome records (the
     batch's label patch: each names its prediction's slot), and a rowid hash index table: hash -> (id text,
     prediction slot, latest outcome slot).
 (e) MergedRows: (c) with one join row per id (prediction and outcome columns together): an outcome is one upsert.
 (f) MemIndex: (d)'s segments with their ids and no index table; the index (id -> slot) and the records live in
     the process and are rebuilt from the segments when the store opens.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

import msgspec
import numpy as np

from floor_bench import _epoch, decode_batch
from driftline.core.events import Prediction

DAY = 86_400.0
PRED_COLS = ("prediction_id TEXT NOT NULL, model TEXT NOT NULL, variant TEXT NOT NULL, model_version TEXT NOT NULL, "
             "ts REAL, score REAL, flagged INTEGER, shard INTEGER, label INTEGER, label_ts REAL, implicit INTEGER, "
             "slice_values TEXT")
OVERFLOW = (f"CREATE TABLE pred_x (h INTEGER NOT NULL, {PRED_COLS}, PRIMARY KEY (prediction_id, model, variant)) "
            "WITHOUT ROWID; CREATE TABLE out_x (h INTEGER NOT NULL, prediction_id TEXT PRIMARY KEY, label INTEGER, "
            "ts REAL, shard INTEGER, matched INTEGER) WITHOUT ROWID;")
PRED_NAMES = "h, " + ", ".join(c.split()[0] for c in PRED_COLS.split(", "))
PRED_INS = "h, prediction_id, model, variant, model_version, ts, score, flagged, shard"
REC = np.dtype([("h", "<i8"), ("ts", "<f8"), ("score", "<f8"), ("names", "<u2"), ("flags", "u1")])
OREC = np.dtype([("h", "<i8"), ("label", "i1"), ("ts", "<f8"), ("ploc", "<i8")])
SLOT_BITS = 24
INSERT_PRED_X = f"INSERT INTO pred_x ({PRED_INS}) VALUES (?,?,?,?,?,?,?,?,?) ON CONFLICT DO NOTHING"
LABEL_PRED_X = "UPDATE pred_x SET label = ?, label_ts = ? WHERE prediction_id = ?"
UPSERT_OUT = ("(h, prediction_id, label, ts, shard, matched) VALUES (?,?,?,?,0,1) ON CONFLICT DO UPDATE SET label = "
              "excluded.label, ts = excluded.ts")


def hash63(ids: list[str]) -> list[int]:
    """A stable 63-bit hash of each id (FNV-1a over 8-byte words, murmur finaliser), vectorised: blake2b per id
    costs ~1 µs, as much as the decode. A collision only costs an overflow row, never a wrong join."""
    if not ids:
        return []
    raw = [s.encode() for s in ids]
    b, size = np.array(raw, dtype=bytes), np.array([len(r) for r in raw], dtype=np.uint64)
    width = -(-b.dtype.itemsize // 8) * 8
    words = b.astype(f"S{width}").view("<u8").reshape(len(ids), width // 8)
    h = np.uint64(0xCBF29CE484222325) ^ size
    for j in range(words.shape[1]):  # words past an id's own bytes (padding to the batch's longest) leave it alone
        h = np.where(size > 8 * j, (h ^ words[:, j]) * np.uint64(0x100000001B3), h)
    for mult in (0xFF51AFD7ED558CCD, 0xC4CEB9FE1A85EC53):
        h = (h ^ (h >> np.uint64(33))) * np.uint64(mult)
    return ((h ^ (h >> np.uint64(33))) >> np.uint64(1)).astype(np.int64).tolist()


def promote(conn: sqlite3.Connection, main: str, xt: str, cols: str, select: str, key: str) -> None:
    """Move into `main` one overflow row per hash `main` no longer holds, keeping resolve's invariant (an overflow
    row's hash is always taken in the main table)."""
    conn.execute(f"INSERT INTO {main} ({cols}) SELECT {select} FROM {xt} WHERE NOT EXISTS (SELECT 1 FROM {main} m "
                 f"WHERE m.h = {xt}.h) GROUP BY h")
    match = " AND ".join(f"m.{k} = {xt}.{k}" for k in key.split(", "))
    conn.execute(f"DELETE FROM {xt} WHERE EXISTS (SELECT 1 FROM {main} m WHERE {match})")


def in_hashes(hs: list[int]) -> tuple[str, tuple[bytes]]:
    """`IN (...)` over a JSON array bound as one parameter: one statement per batch instead of one per 500 ids."""
    return "IN (SELECT value FROM json_each(?))", (msgspec.json.encode(hs),)


class HashRows:
    """(c) rowid tables keyed by hash63(prediction_id); the id text is kept for the collision check."""

    name = "(c) hash-keyed rowid rows"
    count = "SELECT count(ts), count(ts + label) FROM jp"
    hasher: Callable[[list[str]], list[int]] = staticmethod(hash63)

    def create(self, conn: sqlite3.Connection, path: str) -> None:
        conn.executescript(f"CREATE TABLE jp (h INTEGER PRIMARY KEY, {PRED_COLS}); CREATE TABLE jo (h INTEGER "
                           "PRIMARY KEY, prediction_id TEXT NOT NULL, label INTEGER, ts REAL, shard INTEGER, matched "
                           "INTEGER);" + OVERFLOW)

    def resolve(self, conn: sqlite3.Connection, table: str, ids: list[str]) -> tuple[dict[str, int], dict, set]:
        """(id -> hash, hash -> stored (id, ts, score, label[, model, variant]), ids that live in overflow)."""
        hid = dict(zip(ids, self.hasher(ids)))
        cond, arg = in_hashes(list(set(hid.values())))
        cols = {"jp": "h, prediction_id, ts, score, label, model, variant", "hidx": "h, prediction_id, ploc, oloc"}.get(
            table, "h, prediction_id")
        rows = {r[0]: r[1:] for r in conn.execute(f"SELECT {cols} FROM {table} WHERE h {cond}", arg)}
        clash = [i for i in ids if hid[i] in rows and rows[hid[i]][0] != i]
        over: set[str] = set()
        if clash:  # the invariant (see expire): an overflow row's hash is always taken in the main table
            xt = "out_x" if table == "jo" else "pred_x"
            over = {r[0] for r in conn.execute(f"SELECT prediction_id FROM {xt} WHERE prediction_id IN "
                                               "(SELECT value FROM json_each(?))", (msgspec.json.encode(clash),))}
        return hid, rows, over

    def batch(self, conn: sqlite3.Connection, lines: list[bytes]) -> None:
        preds, outs = decode_batch(lines)
        ids = list({e.prediction_id for e in (*preds, *outs)})
        conn.execute("BEGIN")
        hid, known, over = self.resolve(conn, "jp", ids)
        known_o = self.resolve(conn, "jo", ids)[1]
        main, xrows = [], []
        for p in preds:
            h, key = hid[p.prediction_id], (p.prediction_id, p.model, p.variant or "default")
            row = (h, *key, p.model_version or "unknown", _epoch(p.ts), p.score, p.score >= 0.5, 0)
            if h not in known:
                known[h] = (p.prediction_id, None, None, None, key[1], key[2])
                main.append(row)
            elif (known[h][0], *known[h][4:]) != key:
                over.add(p.prediction_id)
                xrows.append(row)
        conn.executemany(f"INSERT INTO jp ({PRED_INS}) VALUES (?,?,?,?,?,?,?,?,?)", main)
        conn.executemany(INSERT_PRED_X, xrows)
        orows: dict[bool, list] = {True: [], False: []}
        labels, xlabels = [], []
        for o in outs:
            h, label, ts = hid[o.prediction_id], int(o.label), _epoch(o.ts)
            mine = known_o.setdefault(h, (o.prediction_id,))[0] == o.prediction_id
            orows[mine].append((h, o.prediction_id, label, ts))
            if known.get(h, ("",))[0] == o.prediction_id:
                labels.append((label, ts, h))
            if o.prediction_id in over:
                xlabels.append((label, ts, o.prediction_id))
        conn.executemany(f"INSERT INTO jo {UPSERT_OUT}", orows[True])
        conn.executemany(f"INSERT INTO out_x {UPSERT_OUT}", orows[False])
        conn.executemany("UPDATE jp SET label = ?, label_ts = ? WHERE h = ?", labels)
        conn.executemany(LABEL_PRED_X, xlabels)
        conn.execute("COMMIT")

    def fill(self, conn: sqlite3.Connection, ids: list[str], ts: list[float], score: list[float]) -> None:
        conn.executemany("INSERT INTO jp (h, prediction_id, model, variant, model_version, ts, score, flagged, shard) "
                         "VALUES (?,?,'fraud','B','v2',?,?,?,0)",
                         [(h, i, t, s, s >= 0.5) for h, i, t, s in zip(self.hasher(ids), ids, ts, score)])

    def lookup(self, conn: sqlite3.Connection, ids: list[str]) -> int:
        hid, rows, over = self.resolve(conn, "jp", ids)
        return sum(1 for i in ids if rows.get(hid[i], ("",))[0] == i) + len(over)

    def counts(self, conn: sqlite3.Connection) -> tuple[int, int]:
        """(predictions, labelled predictions) stored, a check that every layout did the same work."""
        main, over = (conn.execute(q).fetchone() for q in (self.count, "SELECT count(*), count(label) FROM pred_x"))
        return main[0] + over[0], main[1] + over[1]

    def expire(self, conn: sqlite3.Connection, cutoff: float) -> None:
        """Scan-delete (no time index), then promote overflow rows whose hash was freed."""
        for main, xt, cols, key in (("jp", "pred_x", PRED_NAMES, "h, prediction_id, model, variant"),
                                    ("jo", "out_x", "h, prediction_id, label, ts, shard, matched", "h, prediction_id")):
            conn.execute(f"DELETE FROM {main} WHERE ts < ?", (cutoff,))
            conn.execute(f"DELETE FROM {xt} WHERE ts < ?", (cutoff,))
            promote(conn, main, xt, cols, cols, key)


class MergedRows(HashRows):
    """(e) one row per id: prediction and outcome columns together, so an outcome costs one upsert; an outcome
    that came first leaves a row with model '' and no ts for its prediction to fill in."""

    name = "(e) merged hash-keyed rows"

    def create(self, conn: sqlite3.Connection, path: str) -> None:
        conn.executescript(f"CREATE TABLE jp (h INTEGER PRIMARY KEY, {PRED_COLS}, out_ts REAL);" + OVERFLOW)

    def batch(self, conn: sqlite3.Connection, lines: list[bytes]) -> None:
        preds, outs = decode_batch(lines)
        ids = list({e.prediction_id for e in (*preds, *outs)})
        conn.execute("BEGIN")
        hid, known, over = self.resolve(conn, "jp", ids)
        main, xrows = [], []
        for p in preds:
            h, key = hid[p.prediction_id], (p.prediction_id, p.model, p.variant or "default")
            row = (h, *key, p.model_version or "unknown", _epoch(p.ts), p.score, p.score >= 0.5, 0)
            if h not in known or known[h][0] == p.prediction_id and known[h][1] is None:
                known[h] = (p.prediction_id, 0.0, None, None, key[1], key[2])
                main.append(row)
            elif (known[h][0], *known[h][4:]) != key:
                over.add(p.prediction_id)
                xrows.append(row)
        conn.executemany(
            f"INSERT INTO jp ({PRED_INS}) VALUES (?,?,?,?,?,?,?,?,?) ON CONFLICT DO UPDATE SET model = excluded.model, "
            "variant = excluded.variant, model_version = excluded.model_version, ts = excluded.ts, score = "
            "excluded.score, flagged = excluded.flagged", main)
        conn.executemany(INSERT_PRED_X, xrows)
        rows, xouts, xlabels = [], [], []
        for o in outs:
            h, label, ts = hid[o.prediction_id], int(o.label), _epoch(o.ts)
            mine = known.setdefault(h, (o.prediction_id, None, None, None, "", ""))[0] == o.prediction_id
            (rows if mine else xouts).append((h, o.prediction_id, label, ts, ts))
            if o.prediction_id in over:
                xlabels.append((label, ts, o.prediction_id))
        conn.executemany("INSERT INTO jp (h, prediction_id, model, variant, model_version, shard, label, label_ts, "
                         "out_ts) VALUES (?,?,'','','',0,?,?,?) ON CONFLICT DO UPDATE SET label = excluded.label, "
                         "label_ts = excluded.label_ts, out_ts = excluded.out_ts", rows)
        conn.executemany(f"INSERT INTO out_x {UPSERT_OUT}", [r[:4] for r in xouts])
        conn.executemany(LABEL_PRED_X, xlabels)
        conn.execute("COMMIT")

    def lookup(self, conn: sqlite3.Connection, ids: list[str]) -> int:
        """Predictions found: a row holding only an outcome (its prediction not seen or expired) is no hit."""
        hid, rows, over = self.resolve(conn, "jp", ids)
        return sum(1 for i in ids if (r := rows.get(hid[i])) is not None and r[0] == i and r[1] is not None) + len(over)

    def expire(self, conn: sqlite3.Connection, cutoff: float) -> None:
        conn.execute("DELETE FROM jp WHERE coalesce(ts, out_ts) < ?", (cutoff,))
        conn.execute("DELETE FROM pred_x WHERE ts < ?", (cutoff,))
        conn.execute("DELETE FROM out_x WHERE ts < ?", (cutoff,))
        promote(conn, "jp", "pred_x", PRED_NAMES, PRED_NAMES, "h, prediction_id, model, variant")
        promote(conn, "jp", "out_x", "h, prediction_id, model, variant, model_version, shard, label, label_ts, out_ts",
                "h, prediction_id, '', '', '', shard, label, ts, ts", "h, prediction_id")


class Segments(HashRows):
    """(d) one row per batch of packed prediction records, one of outcome records (the batch's label patch: each
    names its prediction's slot), and a rowid hash index: hash -> (id text, prediction slot, latest outcome slot)."""

    name = "(d) per-batch segments"
    count = "SELECT count(ploc), count(ploc + oloc) FROM hidx"

    def create(self, conn: sqlite3.Connection, path: str) -> None:
        segment = "(id INTEGER PRIMARY KEY, ts_max REAL, recs BLOB, ids BLOB);"
        conn.executescript(f"CREATE TABLE seg {segment} CREATE TABLE oseg {segment} CREATE TABLE names (id INTEGER "
                           "PRIMARY KEY, name TEXT UNIQUE); CREATE TABLE hidx (h INTEGER PRIMARY KEY, prediction_id "
                           "TEXT NOT NULL, ploc INTEGER, oloc INTEGER);" + OVERFLOW)

    def append(self, conn: sqlite3.Connection, table: str, recs: np.ndarray, ids: list[str] | None = None) -> list[int]:
        """Store one segment (and its ids, when given); the slot address (segment << SLOT_BITS | slot) of each
        record."""
        seg = conn.execute(f"INSERT INTO {table} (ts_max, recs, ids) VALUES (?, ?, ?)",
                           (float(recs["ts"].max(initial=0.0)), recs.tobytes(),
                            None if ids is None else msgspec.json.encode(ids))).lastrowid
        return range(seg << SLOT_BITS, (seg << SLOT_BITS) + len(recs))  # type: ignore[return-value]

    def name_ids(self, conn: sqlite3.Connection, preds: list[Prediction]) -> list[int]:
        """Small ids of the (model, variant, version) names, added to `names` on first sight."""
        names = dict(conn.execute("SELECT name, id FROM names"))
        out = []
        for p in preds:
            name = f"{p.model}\x1f{p.variant or 'default'}\x1f{p.model_version or 'unknown'}"
            if name not in names:
                names[name] = conn.execute("INSERT INTO names (name) VALUES (?)", (name,)).lastrowid
            out.append(names[name])
        return out

    def batch(self, conn: sqlite3.Connection, lines: list[bytes]) -> None:
        preds, outs = decode_batch(lines)
        ids = list({e.prediction_id for e in (*preds, *outs)})
        conn.execute("BEGIN")
        hid, known, over = self.resolve(conn, "hidx", ids)
        new, xrows = [], []
        for p in preds:  # a second model's prediction under a known id would need its record read: not modelled
            h = hid[p.prediction_id]
            if h not in known or known[h][0] == p.prediction_id and known[h][1] is None:
                known[h] = (p.prediction_id, None, known.get(h, (0, 0, None))[2])
                new.append(p)
            elif known[h][0] != p.prediction_id:
                over.add(p.prediction_id)
                xrows.append((h, p.prediction_id, p.model, p.variant or "default", p.model_version or "unknown",
                              _epoch(p.ts), p.score, p.score >= 0.5, 0))
        recs = np.zeros(len(new), REC)
        recs["h"], recs["ts"] = [hid[p.prediction_id] for p in new], [_epoch(p.ts) for p in new]
        recs["score"], recs["names"] = [p.score for p in new], self.name_ids(conn, new)
        recs["flags"] = recs["score"] >= 0.5
        ploc = dict(zip((p.prediction_id for p in new), self.append(conn, "seg", recs) if new else ()))
        conn.executemany("INSERT INTO hidx (h, prediction_id, ploc) VALUES (?,?,?) ON CONFLICT DO UPDATE SET ploc = "
                         "excluded.ploc", [(hid[i], i, loc) for i, loc in ploc.items()])
        conn.executemany(INSERT_PRED_X, xrows)
        mine = [o for o in outs if known.setdefault(hid[o.prediction_id], (o.prediction_id, None, None))[0]
                == o.prediction_id]
        orecs = np.zeros(len(mine), OREC)
        orecs["h"], orecs["ts"] = [hid[o.prediction_id] for o in mine], [_epoch(o.ts) for o in mine]
        orecs["label"] = [int(o.label) for o in mine]
        orecs["ploc"] = [ploc.get(o.prediction_id, known[hid[o.prediction_id]][1] or -1) for o in mine]
        oloc = self.append(conn, "oseg", orecs) if mine else ()
        conn.executemany("INSERT INTO hidx (h, prediction_id, oloc) VALUES (?,?,?) ON CONFLICT DO UPDATE SET oloc = "
                         "excluded.oloc", [(hid[o.prediction_id], o.prediction_id, loc) for o, loc in zip(mine, oloc)])
        others = [o for o in outs if known[hid[o.prediction_id]][0] != o.prediction_id]
        conn.executemany(f"INSERT INTO out_x {UPSERT_OUT}",
                         [(hid[o.prediction_id], o.prediction_id, int(o.label), _epoch(o.ts)) for o in others])
        conn.executemany(LABEL_PRED_X, [(int(o.label), _epoch(o.ts), o.prediction_id) for o in outs
                                        if o.prediction_id in over])
        conn.execute("COMMIT")

    def read(self, conn: sqlite3.Connection, table: str, dtype: np.dtype, locs: list[int]) -> np.ndarray:
        """The records at these slot addresses: whole segments when many of their slots are wanted, else slot by
        slot through incremental blob I/O."""
        by_seg: dict[int, list[int]] = {}
        for loc in locs:
            by_seg.setdefault(loc >> SLOT_BITS, []).append(loc & ((1 << SLOT_BITS) - 1))
        parts = []
        for seg, slots in by_seg.items():
            with conn.blobopen(table, "recs", seg, readonly=True) as blob:
                if len(slots) * 64 * dtype.itemsize > len(blob):
                    parts.append(np.frombuffer(blob.read(), dtype)[slots])
                    continue
                chunks = []
                for slot in slots:
                    blob.seek(slot * dtype.itemsize)
                    chunks.append(blob.read(dtype.itemsize))
                parts.append(np.frombuffer(b"".join(chunks), dtype))
        return np.concatenate(parts) if parts else np.zeros(0, dtype)

    def lookup(self, conn: sqlite3.Connection, ids: list[str]) -> int:
        hid, rows, over = self.resolve(conn, "hidx", ids)
        hits = [rows[hid[i]] for i in ids if rows.get(hid[i], ("",))[0] == i]
        found = self.read(conn, "seg", REC, [r[1] for r in hits if r[1] is not None])
        self.read(conn, "oseg", OREC, [r[2] for r in hits if r[2] is not None])
        return len(found) + len(over)

    def fill(self, conn: sqlite3.Connection, ids: list[str], ts: list[float], score: list[float]) -> None:
        """One segment per day of the (time-ordered) generated predictions."""
        recs = np.zeros(len(ids), REC)
        recs["h"], recs["ts"], recs["score"], recs["names"] = self.hasher(ids), ts, score, 1
        days = np.searchsorted(recs["ts"], np.arange(recs["ts"][0], recs["ts"][-1] + DAY, DAY))
        conn.execute("INSERT INTO names VALUES (1, 'fraud\x1fB\x1fv2')")
        for lo, hi in zip(days[:-1], days[1:]):
            conn.executemany("INSERT INTO hidx (h, prediction_id, ploc) VALUES (?,?,?)",
                             zip(recs["h"][lo:hi].tolist(), ids[lo:hi], self.append(conn, "seg", recs[lo:hi])))

    def expire(self, conn: sqlite3.Connection, cutoff: float) -> None:
        """Whole segments past the cutoff: their hashes leave the index (a hash with overflow rows keeps its index
        row, emptied, as a tombstone, for resolve's invariant), outcome segments only take outcomes still unmatched."""
        for table, dtype, col, only in (("seg", REC, "ploc", ""), ("oseg", OREC, "oloc", "AND ploc IS NULL")):
            for seg, recs in conn.execute(f"SELECT id, recs FROM {table} WHERE ts_max < ?", (cutoff,)).fetchall():
                cond, arg = in_hashes(np.frombuffer(recs, dtype)["h"].tolist())
                conn.execute(f"DELETE FROM hidx WHERE h {cond} AND {col} >> {SLOT_BITS} = ? {only} AND NOT EXISTS "
                             "(SELECT 1 FROM pred_x x WHERE x.h = hidx.h)", (*arg, seg))
                conn.execute(f"UPDATE hidx SET ploc = NULL, oloc = NULL WHERE h {cond} AND {col} >> {SLOT_BITS} = ? "
                             f"{only}", (*arg, seg))
                conn.execute(f"DELETE FROM {table} WHERE id = ?", (seg,))
        conn.execute("DELETE FROM pred_x WHERE ts < ?", (cutoff,))
        conn.execute("DELETE FROM out_x WHERE ts < ?", (cutoff,))


class MemIndex(Segments):
    """(f) (d)'s segments, each also holding its ids, with no index table: the index (id -> slot addresses) and
    the records live in this process, rebuilt from the segments when the store opens (see reopen)."""

    name = "(f) segments + in-memory index"
    MREC = np.dtype(REC.descr[1:])
    MOREC = np.dtype(OREC.descr[1:])

    def create(self, conn: sqlite3.Connection, path: str) -> None:
        super().create(conn, path)
        self.ploc: dict[str, int] = {}
        self.oloc: dict[str, int] = {}
        self.recs: dict[int, np.ndarray] = {}

    def reopen(self, conn: sqlite3.Connection) -> None:
        """Rebuild the in-process index and records from the stored segments (what opening the store costs)."""
        self.ploc, self.oloc, self.recs = {}, {}, {}
        for table, index in (("seg", self.ploc), ("oseg", self.oloc)):
            for seg, recs, ids in conn.execute(f"SELECT id, recs, ids FROM {table} ORDER BY id"):
                index.update(zip(msgspec.json.decode(ids), range(seg << SLOT_BITS, (seg << SLOT_BITS) + len(ids))))
                if table == "seg":
                    self.recs[seg] = np.frombuffer(recs, self.MREC)

    def batch(self, conn: sqlite3.Connection, lines: list[bytes]) -> None:
        preds, outs = decode_batch(lines)
        conn.execute("BEGIN")
        new = [p for p in preds if self.ploc.setdefault(p.prediction_id, -1) == -1]
        recs = np.zeros(len(new), self.MREC)
        recs["ts"], recs["score"] = [_epoch(p.ts) for p in new], [p.score for p in new]
        recs["names"], recs["flags"] = self.name_ids(conn, new), recs["score"] >= 0.5
        ids = [p.prediction_id for p in new]
        if new:
            locs = self.append(conn, "seg", recs, ids)
            self.ploc.update(zip(ids, locs))
            self.recs[locs[0] >> SLOT_BITS] = recs
        orecs = np.zeros(len(outs), self.MOREC)
        orecs["ts"], orecs["label"] = [_epoch(o.ts) for o in outs], [int(o.label) for o in outs]
        orecs["ploc"] = [self.ploc.get(o.prediction_id, -1) for o in outs]
        if outs:
            ids = [o.prediction_id for o in outs]
            self.oloc.update(zip(ids, self.append(conn, "oseg", orecs, ids)))
        conn.execute("COMMIT")

    def lookup(self, conn: sqlite3.Connection, ids: list[str]) -> int:
        by_seg: dict[int, list[int]] = {}
        for loc in (loc for loc in map(self.ploc.get, ids) if loc is not None):
            by_seg.setdefault(loc >> SLOT_BITS, []).append(loc & ((1 << SLOT_BITS) - 1))
        found = [self.recs[seg][slots] for seg, slots in by_seg.items()]
        return sum(map(len, found))

    def fill(self, conn: sqlite3.Connection, ids: list[str], ts: list[float], score: list[float]) -> None:
        recs = np.zeros(len(ids), self.MREC)
        recs["ts"], recs["score"], recs["names"] = ts, score, 1
        days = np.searchsorted(recs["ts"], np.arange(recs["ts"][0], recs["ts"][-1] + DAY, DAY))
        for lo, hi in zip(days[:-1], days[1:]):
            locs = self.append(conn, "seg", recs[lo:hi], ids[lo:hi])
            self.ploc.update(zip(ids[lo:hi], locs))
            self.recs[locs[0] >> SLOT_BITS] = recs[lo:hi]

    def counts(self, conn: sqlite3.Connection) -> tuple[int, int]:
        return len(self.ploc), sum(1 for i in self.ploc if i in self.oloc)

    def expire(self, conn: sqlite3.Connection, cutoff: float) -> None:
        """Whole segments past the cutoff leave the store and the index (an outcome index entry only while its
        prediction is absent)."""
        for table, index in (("seg", self.ploc), ("oseg", self.oloc)):
            for seg, ids in conn.execute(f"SELECT id, ids FROM {table} WHERE ts_max < ?", (cutoff,)).fetchall():
                for i in msgspec.json.decode(ids):
                    if index.get(i, 0) >> SLOT_BITS == seg and (table == "seg" or i not in self.ploc):
                        del index[i]
                conn.execute(f"DELETE FROM {table} WHERE id = ?", (seg,))
                if table == "seg":  # outcome segments number their own ids: recs holds prediction segments only
                    self.recs.pop(seg, None)

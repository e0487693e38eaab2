"""The store's bucket writes of one chunk at once: each delta added to its stored bucket (encoded.add_encoded) or
encoded alone (BucketStats.to_bytes) when none is stored, with the per-bucket numpy steps (confusion counts, sums,
sparse score bins, delay bins) done once over the whole chunk: a batch touches hundreds of buckets, and each numpy
call per bucket costs more than its arithmetic. Every sum is the one the per-bucket routes make (one addition of
two terms per cell), so the bytes are identical; anything unusual takes the per-bucket routes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
import numpy as np

from .encoded import add_encoded, add_rest
from .flag_range import range_from_doc, range_into_doc, range_sum
from .grids import N_DELAY_BINS, N_SCORE_BINS
from .rank_hist import LABELLED_SUMS, rank_into_doc, ranks_added, stored_rank
from .slice_bound import slices_doc
from .stats import BucketStats, _feature_doc
from .unique_ints import union_positions

_ROW = 3 * N_SCORE_BINS
"""Score cells of one bucket (label states × fine bins): a chunk's cells are numbered j·_ROW + cell."""
_decode = msgspec.msgpack.decode
_encode = msgspec.msgpack.encode


def encode_merged(olds: Sequence[bytes | None], deltas: Sequence[BucketStats]) -> list[bytes]:
    """`d.to_bytes() if old is None else add_encoded(old, d)` for each (old, d), the same bytes, with the numpy
    work of the chunk's plain buckets (deltas as Moves.deltas makes them, stored buckets as to_bytes writes them)
    done in a few whole-chunk steps; the per-bucket rest (features, slices, encoding) runs bucket by bucket in
    order, as before, so an error surfaces at the same bucket."""
    new_at: list[int] = []
    add_at: list[int] = []
    docs: list[dict[str, Any]] = []
    for k, (old, d) in enumerate(zip(olds, deltas)):
        if not _plain_delta(d):
            continue
        if old is None:
            new_at.append(k)
            continue
        doc = _decode(old)
        if _plain_doc(doc):
            add_at.append(k)
            docs.append(doc)
    ready: dict[int, Any] = {}
    if new_at:
        ready.update(zip(new_at, _new_parts([deltas[k] for k in new_at])))
    if add_at:
        parts = _add_parts(docs, [deltas[k] for k in add_at])
        if parts is not None:
            ready.update(zip(add_at, parts))
    out = []
    for k, (old, d) in enumerate(zip(olds, deltas)):
        part = ready.get(k)
        if part is None:
            out.append(d.to_bytes() if old is None else add_encoded(old, d))
        elif old is None:
            out.append(_encode_new(d, part))
        else:
            out.append(_encode_added(d, part))
    return out


def _plain_delta(d: BucketStats) -> bool:
    """Whether a delta has the dtypes and shapes Moves.deltas gives it, its non-zero score bins known (its dense
    score rows checked without building them: they are lazy, and only the bins are read here)."""
    bins = d.bins
    return (bins is not None and d.conf.dtype == np.int64 and d.conf.shape == (3, 2) and d.sums.dtype == np.float64
            and d.sums.shape == (3, 3) and d.delay.dtype == np.int64 and d.delay.shape == (N_DELAY_BINS,)
            and d.plain_rows() and bins[0].dtype == np.int32 and bins[1].dtype == np.int64
            and bins[2].dtype == np.float64)


def _plain_doc(doc: Any) -> bool:
    """Whether a decoded stored bucket has the shape to_bytes writes (packed feature bins, whole byte arrays)."""
    if type(doc) is not dict:
        return False
    conf, sums, hi, hc, hp, di, dc = (doc.get(k) for k in ("conf", "sums", "hi", "hc", "hp", "di", "dc"))
    feats = doc.get("f")
    return (type(conf) is list and len(conf) == 6 and type(sums) is list and len(sums) == 9
            and type(hi) is bytes and type(hc) is bytes and type(hp) is bytes and len(hi) * 2 == len(hc) == len(hp)
            and type(di) is bytes and type(dc) is bytes and len(di) * 2 == len(dc) and len(hi) % 4 == 0
            and len(di) % 4 == 0 and type(feats) is dict
            and all(type(f) is list and len(f) == 3 and type(f[0]) is list and len(f[0]) == 2
                    and type(f[0][0]) is bytes for f in feats.values()))


def _split(buf: bytes, ends: list[int], width: int) -> list[bytes]:
    """buf cut into the runs ends[j]..ends[j+1] of `width`-byte items."""
    return [buf[lo * width:hi * width] for lo, hi in zip(ends, ends[1:])]


def _delays(rows: np.ndarray) -> tuple[list[bytes], list[bytes]]:
    """Each row's non-zero delay bins as (int32 indexes, int64 counts) bytes, found for all rows at once."""
    nz = np.flatnonzero(rows)
    owner = nz // N_DELAY_BINS
    ends = np.searchsorted(owner, np.arange(len(rows) + 1)).tolist()
    idx = (nz - owner * N_DELAY_BINS).astype(np.int32).tobytes()
    return _split(idx, ends, 4), _split(rows.ravel()[nz].tobytes(), ends, 8)


def _new_parts(deltas: list[BucketStats]) -> list[tuple[list[int], list[float], bytes, bytes]]:
    """Each plain delta's conf and sums as lists and its delay bins as bytes, for to_bytes, found chunk-wide."""
    conf = np.array([d.conf for d in deltas]).reshape(len(deltas), 6).tolist()
    sums = np.array([d.sums for d in deltas]).reshape(len(deltas), 9).tolist()
    return list(zip(conf, sums, *_delays(np.array([d.delay for d in deltas]))))


def _encode_new(d: BucketStats, part: tuple[list[int], list[float], bytes, bytes]) -> bytes:
    """d.to_bytes() (the same doc, key for key) from its chunk-wide parts."""
    conf, sums, di, dc = part
    nz, hc, hp = d.bins  # type: ignore[misc]
    doc = {
        "v": 1, "conf": conf, "hi": nz.tobytes(), "hc": hc.tobytes(), "hp": hp.tobytes(), "sums": sums, "di": di,
        "dc": dc, "f": {k: _feature_doc(fh) for k, fh in d.features.items()}, "exp": d.expired, "imp": d.implicit,
        "s": slices_doc(d.slices)}
    rank_into_doc(doc, d.rank)
    range_into_doc(doc, d.flag_range, sum(conf))
    return _encode(doc)


def _encode_added(d: BucketStats, part: tuple[Any, ...]) -> bytes:
    """add_encoded's bytes from a stored doc and its chunk-wide sums: the rest added bucket by bucket."""
    doc, conf, sums, (hi, hc, hp), delay, rank = part
    stored_range = range_from_doc(doc, sum(doc["conf"]))  # before conf changes
    doc["conf"], doc["sums"] = conf, sums
    doc["hi"], doc["hc"], doc["hp"] = hi, hc, hp
    if delay is not None:
        doc["di"], doc["dc"] = delay
    add_rest(doc, d)
    if rank is None:  # add_encoded's sum of the ranking histograms, made and encoded chunk-wide
        rank_into_doc(doc, None)
    else:
        doc["ri"], doc["rc"] = rank
        doc["rs"] = sums[:LABELLED_SUMS]  # rank_into_doc's copy of the labelled sums (a fresh list)
    range_into_doc(doc, range_sum((stored_range, d.flag_range)), sum(conf))
    return _encode(doc)


def _add_parts(docs: list[dict[str, Any]], deltas: list[BucketStats]) -> list[tuple[Any, ...]] | None:
    """(doc, conf, sums, score bins, delay bins or None, ranking histogram) of each plain (stored doc, delta), summed
    chunk-wide; None (the per-bucket route then decides) when a stored value is out of the range the sparse routes
    take, or fails to convert."""
    n = len(docs)
    try:
        conf = (np.array([doc["conf"] for doc in docs], dtype=np.int64)
                + np.array([d.conf for d in deltas]).reshape(n, 6)).tolist()
        sums = (np.array([doc["sums"] for doc in docs], dtype=np.float64)
                + np.array([d.sums for d in deltas]).reshape(n, 9)).tolist()
    except (TypeError, ValueError, OverflowError):
        return None
    scores = _score_bins(docs, deltas)
    if scores is None:
        return None
    delays = _add_delays(docs, deltas)
    if delays is None:
        return None
    labelled = (np.array(conf, dtype=np.int64)[:, :4].sum(axis=1)
                - np.array([d.conf for d in deltas]).reshape(n, 6)[:, :4].sum(axis=1)).tolist()
    # the docs still hold their stored conf and sums here (_encode_added sets the summed ones)
    ranks = ranks_added([stored_rank(doc, lab) for doc, lab in zip(docs, labelled)],
                        [d.rank for d in deltas], encoded=True)
    if ranks is None:
        return None
    return list(zip(docs, conf, sums, scores, delays, ranks))


def _score_bins(docs: list[dict[str, Any]], deltas: list[BucketStats]) -> list[tuple[bytes, bytes, bytes]] | None:
    """encoded._add_score_bins of each (stored doc, delta) on the union of their non-zero cells, chunk-wide: a
    delta's dense rows are zero outside its known bins (Moves.deltas fills them by bincount, which never gives
    -0.0), so each cell is the delta's value plus the stored one, as there. None when a stored bin is out of
    range."""
    n = len(docs)
    sizes = np.array([len(doc["hi"]) for doc in docs], dtype=np.int64) // 4
    idx = np.frombuffer(b"".join([doc["hi"] for doc in docs]), dtype=np.int32)
    if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= _ROW):
        return None
    offsets = np.arange(n, dtype=np.int64) * _ROW
    g_old = idx + np.repeat(offsets, sizes)
    bins = [d.bins for d in deltas]
    new_sizes = [len(b[0]) for b in bins]  # type: ignore[index]
    g_new = np.concatenate([b[0] for b in bins]).astype(np.int64) + np.repeat(offsets, new_sizes)  # type: ignore
    cells, at, at_new = union_positions(g_old, g_new)
    h = np.zeros(len(cells), dtype=np.int64)
    p = np.zeros(len(cells), dtype=np.float64)
    h[at_new] = np.concatenate([b[1] for b in bins])  # type: ignore[index]
    p[at_new] = np.concatenate([b[2] for b in bins])  # type: ignore[index]
    h[at] += np.frombuffer(b"".join([doc["hc"] for doc in docs]), dtype=np.int64)
    p[at] += np.frombuffer(b"".join([doc["hp"] for doc in docs]), dtype=np.float64)
    keep = (h != 0) | (p != 0)
    cells, h, p = cells[keep], h[keep], p[keep]
    owner = cells // _ROW
    ends = np.searchsorted(owner, np.arange(n + 1)).tolist()
    local = (cells - owner * _ROW).astype(np.int32).tobytes()
    return list(zip(_split(local, ends, 4), _split(h.tobytes(), ends, 8), _split(p.tobytes(), ends, 8)))


def _add_delays(docs: list[dict[str, Any]], deltas: list[BucketStats]) -> list[tuple[bytes, bytes] | None] | None:
    """The new (di, dc) of each stored doc whose delta has delays (None for the others: theirs stay as stored),
    chunk-wide; None when a stored delay bin is out of range."""
    rows = np.array([d.delay for d in deltas])
    active = np.flatnonzero(rows.any(axis=1)).tolist()
    out: list[tuple[bytes, bytes] | None] = [None] * len(docs)
    if not active:
        return out
    rows = rows[active]
    sizes = np.array([len(docs[k]["di"]) for k in active], dtype=np.int64) // 4
    idx = np.frombuffer(b"".join([docs[k]["di"] for k in active]), dtype=np.int32)
    if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= N_DELAY_BINS):
        return None
    flat = rows.reshape(-1)
    flat[idx + np.repeat(np.arange(len(active), dtype=np.int64) * N_DELAY_BINS, sizes)] += np.frombuffer(
        b"".join([docs[k]["dc"] for k in active]), dtype=np.int64)
    for k, di, dc in zip(active, *_delays(rows)):
        out[k] = (di, dc)
    return out

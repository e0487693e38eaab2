"""Reference profiles, stored and versioned per model: build one from stored buckets or from an events
file, save it (it becomes the active version), list, load and re-activate versions.

Table `reference_profiles` (migration 0004); a seasonal reference also has a row in `reference_seasons`
(migration 0008_seasonal) with its per-season slices (analysis.seasons). Each row keeps the profile JSON
(analysis.profiles.Profile, frozen bins included, so later windows are always binned the same way), the
reference window's 3×2 confusion counts (for the base-rate effect) and where it came from. Exactly one row per
model is active; `save_reference` deactivates the others in the same transaction.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from sqlalchemy import (BigInteger, Boolean, Column, Float, Index, Integer, MetaData, String, Table, Text, select,
                        update)

from ..analysis.profiles import Profile, ProfileSettings, build_profile_from_stats
from ..analysis.seasons import NONE, SeasonalSlices, season_count
from ..config import Config, ConfigError
from ..core.engine import Engine, JoinView
from ..core.events import DeadLetter, Decoded, decode, json_lines
from ..core.limits import MAX_FUTURE_S
from ..ingest.pipeline import settings_from
from ..ingest.replay import CORRUPT, open_events
from ..core.stats import NEG, POS, BucketStats, merge
from ..storage.store import Store
from ..terminal import shell_word
from .windows import Window, iso, window_rows

SOURCES = ("window", "file")
FILE_BATCH = 20_000

metadata = MetaData()

reference_profiles = Table(
    "reference_profiles", metadata,
    Column("id", BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True),
    Column("model", String(200), nullable=False),
    Column("created_at", Float, nullable=False),
    Column("source", String(16), nullable=False),
    Column("start_ts", Float, nullable=True),
    Column("end_ts", Float, nullable=True),
    Column("n", BigInteger, nullable=False),
    Column("variant", String(200), nullable=True),
    Column("detail", Text, nullable=True),
    Column("profile", Text, nullable=False),
    Column("confusion", Text, nullable=True),
    Column("active", Boolean, nullable=False),
)
Index("ix_reference_profiles_model_active", reference_profiles.c.model, reference_profiles.c.active)

reference_seasons = Table(  # migration 0008_seasonal: one row per seasonal reference version
    "reference_seasons", metadata,
    Column("ref_id", BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=False),
    Column("seasonality", String(16), nullable=False),
    Column("seasons", Text, nullable=False),
)


class ReferenceProblem(ConfigError):
    """A reference cannot be built or found; the CLI reports it with exit code 2."""


class NoReference(ReferenceProblem):
    """No reference profile is set for the model."""

    def __init__(self, model: str, span: tuple[int, int] | None = None) -> None:
        """`span`: the first and last stored bucket of the model; the example then names its first two weeks."""
        example = "--from 2026-01-01 --to 2026-01-15"
        if span is not None:
            day = 86400
            lo = span[0] // day * day
            hi = min(lo + 14 * day, (span[1] // day + 1) * day)
            example = f"--from {_date(lo)} --to {_date(hi)}"
        super().__init__(f"no reference profile for model {model!r}: run `driftline reference set` first "
                         f"(e.g. `driftline reference set --model {shell_word(model)} {example}`)")


def _date(t: float) -> str:
    """'2026-09-01' (UTC) for a reference-set example."""
    import datetime as _dt

    return _dt.datetime.fromtimestamp(t, _dt.timezone.utc).strftime("%Y-%m-%d")


@dataclass(frozen=True, slots=True)
class Reference:
    """One stored reference version; `profile_json` is None when listed without its profile."""

    id: int
    model: str
    created_at: float
    source: str
    start: float | None
    end: float | None
    n: int
    active: bool
    variant: str | None = None
    detail: str | None = None
    profile_json: dict[str, Any] | None = None
    confusion: np.ndarray | None = None
    seasonality: str = NONE
    seasons_json: dict[str, Any] | None = None
    """The seasonal slices (analysis.seasons.SeasonalSlices JSON); None for a plain reference."""

    def seasonal(self) -> SeasonalSlices | None:
        """The per-season slices of a seasonal reference (None when it is not seasonal)."""
        return None if self.seasons_json is None else SeasonalSlices.from_json(self.seasons_json)

    def profile(self) -> Profile:
        """The stored profile (frozen bins, score and prevalence reference)."""
        if self.profile_json is None:
            raise ValueError("reference loaded without its profile")
        return Profile.from_json(self.profile_json)

    def confusion_stats(self) -> BucketStats | None:
        """The reference window's confusion counts as a BucketStats (None when not stored or unlabelled)."""
        if self.confusion is None or int(self.confusion[:2].sum()) == 0:
            return None
        return BucketStats(conf=self.confusion.copy())

    def summary(self) -> dict[str, Any]:
        """The `reference` block of the drift contract plus provenance: id, start, end, n, …"""
        return {"id": self.id, "model": self.model, "start": _iso(self.start), "end": _iso(self.end), "n": self.n,
                "source": self.source, "variant": self.variant, "detail": self.detail,
                "created_at": iso(self.created_at), "active": self.active, "seasonality": self.seasonality}

    def to_json(self, with_profile: bool = False) -> dict[str, Any]:
        d = self.summary()
        if self.profile_json is not None:
            pj = self.profile_json
            d["prevalence"] = pj.get("prevalence")
            d["features"] = [{"feature": f["feature"], "kind": f["kind"]} for f in pj.get("features", [])]
            d["dropped"] = pj.get("dropped", [])
            d["settings"] = pj.get("settings")
            if with_profile:
                d["profile"] = pj
        seasonal = self.seasonal()
        if seasonal is not None:
            d["seasons"] = {"possible": season_count(seasonal.seasonality), "unplaced_n": seasonal.unplaced_n,
                            "slices": seasonal.summary()}
        if self.confusion is not None:
            c = self.confusion
            d["confusion"] = {"tp": int(c[1, 1]), "fn": int(c[1, 0]), "fp": int(c[0, 1]), "tn": int(c[0, 0]),
                              "unlabelled": int(c[2].sum())}
        return d


def _iso(ts: float | None) -> str | None:
    """RFC 3339, or the epoch seconds when no calendar date holds them (a reference stored from a file with a
    far-future event, before those were refused: listing it failed with 'year 10000 is out of range')."""
    if ts is None:
        return None
    try:
        return iso(ts)
    except (ValueError, OverflowError, OSError):
        return f"{ts:.0f}"


def profile_settings(config: Config) -> ProfileSettings:
    """Profile settings from the config: max_features, drift.numeric_bins and drift.top_k."""
    return ProfileSettings(numeric_bins=config.drift.numeric_bins, top_k=config.drift.top_k,
                           max_features=config.max_features)


def build_reference_profile(stats: BucketStats, config: Config,
                            by_variant: dict[str, np.ndarray] | None = None) -> Profile:
    """The reference profile of a merged window, declared features from the config; by_variant: the labelled
    score histograms per variant (variant_labels), kept for per-variant calibrated estimates."""
    p = build_profile_from_stats(stats, profile_settings(config), declared=dict(config.features))
    return p if by_variant is None else replace(p, score_labels_by_variant=by_variant)


def variant_labels(store: Store, config: Config, model: str, start: float, end: float,
                   variant: str | None = None) -> dict[str, np.ndarray]:
    """Per variant, the (negative, positive) fine score histograms of [start, end) widened to whole buckets."""
    lo, hi = bucket_range(start, end, config.bucket_s)
    out: dict[str, np.ndarray] = {}
    for row in window_rows(store, model, Window(lo, hi), variant, None, features=False):
        h = row.stats.hist[[NEG, POS]]
        out[row.variant] = out[row.variant] + h if row.variant in out else h.astype(np.int64)
    return out


# --- building the merged reference window -----------------------------------------------------------
def bucket_range(start: float, end: float, bucket_s: int) -> tuple[float, float]:
    """[start, end) widened to whole buckets (start rounded down, end rounded up)."""
    return math.floor(start / bucket_s) * bucket_s, math.ceil(end / bucket_s) * bucket_s


def window_stats(store: Store, config: Config, model: str, start: float, end: float,
                 variant: str | None = None) -> tuple[BucketStats, float, float]:
    """Merged stored buckets (feature histograms included) of [start, end) widened to whole buckets."""
    if end <= start:
        raise ReferenceProblem("--to must be after --from")
    lo, hi = bucket_range(start, end, config.bucket_s)
    # window_rows: a compacted day the range holds only part of is left out whole (its day row brought a day of
    # predictions past --to, and hourly rows written into it since are changes to it, not counts)
    total = merge(row.stats for row in window_rows(store, model, Window(lo, hi), variant, None, features="packed"))
    return total, lo, hi


def file_stats(path: str, config: Config, model: str, start: float | None = None, end: float | None = None,
               variant: str | None = None, by_variant: dict[str, np.ndarray] | None = None,
               now: float | None = None, models: set[str] | None = None
               ) -> tuple[BucketStats, float | None, float | None, int]:
    """Merged statistics of an events file run through the pure engine with a fresh join view.

    The store's join state is never read or written. Returns (stats, first bucket start, end of the last
    bucket, dead letters skipped); only the model's buckets (and variant's, and those starting in
    [start, end) widened to whole buckets, when given) are kept. by_variant, when given, receives each
    variant's (negative, positive) fine score histograms, as variant_labels gives for stored buckets; `models`
    every model the file holds. Events stamped more than a day after `now` are skipped and counted as dead
    letters, as `replay` refuses them.
    """
    settings = settings_from(config)
    view = JoinView()
    b = config.bucket_s
    lo = -math.inf if start is None else math.floor(start / b) * b
    hi = math.inf if end is None else math.ceil(end / b) * b
    total = BucketStats()
    first: float | None = None
    last: float | None = None
    dead = 0
    source = "file:" + path

    def absorb(engine: Engine) -> None:
        nonlocal first, last
        for key, delta in engine.finish().deltas.items():
            m, _, v, b0, _ = key
            if models is not None:
                models.add(m)
            if m != model or (variant is not None and v != variant) or not lo <= b0 < hi:
                continue
            total.add(delta)
            if by_variant is not None:
                h = delta.hist[[NEG, POS]]
                by_variant[v] = by_variant[v] + h if v in by_variant else h.astype(np.int64)
            first = b0 if first is None else min(first, b0)
            last = b0 if last is None else max(last, b0)

    try:
        with open_events(path) as (fh, _):  # plain or gzip/bzip2/xz, as `replay` reads it
            engine = Engine(settings, view)
            pending = 0
            for lineno, payload in json_lines(fh):
                d = decode(payload, source, 0, lineno)
                if not accepted(d, now):
                    dead += 1
                    continue
                engine.apply(d, 0)
                pending += 1
                if pending >= FILE_BATCH:
                    absorb(engine)
                    engine, pending = Engine(settings, view), 0
            absorb(engine)
    except CORRUPT as err:
        raise ReferenceProblem(f"cannot read {path}: {getattr(err, 'strerror', None) or err}") from None
    return total, first, None if last is None else last + config.bucket_s, dead


def accepted(d: Decoded | DeadLetter, now: float | None) -> bool:
    """Whether a decoded file line counts in a reference: not a dead letter, not stamped more than a day after
    `now` (replay's ts_in_future rule; None: no clock check)."""
    return not isinstance(d, DeadLetter) and (now is None or d.ts <= now + MAX_FUTURE_S)


# --- persistence ---------------------------------------------------------------------------------------
def _conf_text(stats: BucketStats | None) -> str | None:
    return None if stats is None else json.dumps(stats.conf.tolist())


def save_reference(store: Store, model: str, profile: Profile, source: str, start: float | None,
                   end: float | None, *, confusion: BucketStats | None = None, variant: str | None = None,
                   detail: str | None = None, activate: bool = True, seasonal: SeasonalSlices | None = None) -> int:
    """Store a new reference version (active by default: the others of the model are deactivated); its id.
    seasonal: the per-season slices of a seasonal reference (table reference_seasons, migration 0008_seasonal)."""
    if source not in SOURCES:
        raise ValueError(f"source must be one of {SOURCES}, got {source!r}")
    c = reference_profiles.c
    with store.write() as conn:
        if activate:
            conn.execute(update(reference_profiles).where(c.model == model).values(active=False))
        res = conn.execute(reference_profiles.insert().values(
            model=model, created_at=float(store.clock()), source=source, start_ts=start, end_ts=end, n=profile.n,
            variant=variant, detail=detail, profile=json.dumps(profile.to_json(), allow_nan=False),
            confusion=_conf_text(confusion), active=activate))
        ref_id = int(res.inserted_primary_key[0])
        if seasonal is not None:
            conn.execute(reference_seasons.insert().values(
                ref_id=ref_id, seasonality=seasonal.seasonality,
                seasons=json.dumps(seasonal.to_json(), allow_nan=False)))
        return ref_id


def same_reference(store: Store, model: str, profile: Profile, source: str, start: float | None,
                   end: float | None, *, confusion: BucketStats | None = None, variant: str | None = None,
                   detail: str | None = None, seasonality: str = NONE) -> int | None:
    """The newest stored version identical to the one about to be saved (same source, range, variant, file,
    seasonality, counts and profile: so same data and profile settings), or None; setting it again changes nothing."""
    want = json.loads(json.dumps(profile.to_json(), allow_nan=False))
    conf = None if confusion is None else confusion.conf.tolist()
    for ref in list_references(store, model):
        if (ref.source, ref.start, ref.end, ref.variant, ref.detail, ref.n, ref.seasonality) != (
                source, start, end, variant, detail, profile.n, seasonality):
            continue
        full = load_reference(store, model, ref.id)
        if full is not None and full.profile_json == want and (
                None if full.confusion is None else full.confusion.tolist()) == conf:
            return ref.id
    return None


def activate_reference(store: Store, model: str, ref_id: int) -> None:
    """Make an existing version the model's active reference (e.g. roll back to an earlier one)."""
    c = reference_profiles.c
    with store.write() as conn:
        found = conn.execute(select(c.id).where(c.model == model, c.id == ref_id)).scalar_one_or_none()
        if found is None:
            raise ReferenceProblem(f"no reference {ref_id} for model {model!r} (see `driftline reference list`)")
        conn.execute(update(reference_profiles).where(c.model == model).values(active=False))
        conn.execute(update(reference_profiles).where(c.id == ref_id).values(active=True))


_SUMMARY_COLS = ("id", "model", "created_at", "source", "start_ts", "end_ts", "n", "active", "variant", "detail")


def _record(r: Any, with_profile: bool) -> Reference:
    conf = None
    if with_profile and r.confusion is not None:
        conf = np.asarray(json.loads(r.confusion), dtype=np.int64).reshape(3, 2)
    seasons = json.loads(r.seasons) if with_profile and r.seasons is not None else None
    return Reference(int(r.id), r.model, float(r.created_at), r.source, r.start_ts, r.end_ts, int(r.n),
                     bool(r.active), r.variant, r.detail, json.loads(r.profile) if with_profile else None, conf,
                     r.seasonality or NONE, seasons)


def list_references(store: Store, model: str) -> list[Reference]:
    """Every stored version of a model's reference, newest first (profiles not loaded)."""
    c = reference_profiles.c
    q = (select(*(getattr(c, k) for k in _SUMMARY_COLS), reference_seasons.c.seasonality)
         .outerjoin(reference_seasons, reference_seasons.c.ref_id == c.id)
         .where(c.model == model).order_by(c.id.desc()))
    with store.read() as conn:
        return [_record(r, False) for r in conn.execute(q)]


def reference_models(store: Store) -> list[str]:
    """Models that have at least one stored reference version (a reference can come from a file before any
    prediction of the model is stored)."""
    c = reference_profiles.c
    with store.read() as conn:
        return [r[0] for r in conn.execute(select(c.model).distinct().order_by(c.model))]


def active_reference_key(store: Store, model: str) -> tuple[int, float] | None:
    """(id, created_at) of the model's active reference (the newest active one), None when none is set.

    Cheap (the profile text is not read): callers cache loaded profiles under this key.
    """
    c = reference_profiles.c
    q = select(c.id, c.created_at).where(c.model == model, c.active.is_(True)).order_by(c.id.desc()).limit(1)
    with store.read() as conn:
        r = conn.execute(q).one_or_none()
    return None if r is None else (int(r.id), float(r.created_at))


def active_reference_id(store: Store, model: str) -> int | None:
    """Id of the model's active reference, None when none is set."""
    key = active_reference_key(store, model)
    return None if key is None else key[0]


def load_reference(store: Store, model: str, ref_id: int | None = None) -> Reference | None:
    """A reference version with its profile: the given id, or the active one; None when not found."""
    if ref_id is None:
        ref_id = active_reference_id(store, model)
        if ref_id is None:
            return None
    c = reference_profiles.c
    with store.read() as conn:
        r = conn.execute(select(reference_profiles, reference_seasons.c.seasonality, reference_seasons.c.seasons)
                         .outerjoin(reference_seasons, reference_seasons.c.ref_id == c.id)
                         .where(c.model == model, c.id == ref_id)).one_or_none()
    return None if r is None else _record(r, True)

"""The `limits:` config section: bounds on what events bring (size, nesting, features) and on the label values
(models, variants, versions) that reach /metrics; and the `storage:` section (the SQLite write cache's bound)."""

from __future__ import annotations

from typing import Annotated

import msgspec

from .config_checks import Base, _event_names, _no_reserved


class Limits(Base):
    """Bounds on what events bring. Per event (a line or a Kafka message): size, nesting, features — an event past
    one is a dead letter with its own reason. Label values (models, variants, versions), so /metrics stays small and
    fast: a new model beyond `max_models` is dead-lettered (model_limit); a new variant or version beyond its
    model's limit is folded into `__other__`. An allow-list admits exactly its values instead of the first ones seen.
    """

    max_event_bytes: Annotated[int, msgspec.Meta(ge=1024, le=64 << 20)] = 1 << 20
    max_depth: Annotated[int, msgspec.Meta(ge=2, le=500)] = 64
    max_features: Annotated[int, msgspec.Meta(ge=1)] = 1000
    max_feature_value_len: Annotated[int, msgspec.Meta(ge=1)] = 1000
    max_models: Annotated[int, msgspec.Meta(ge=1, le=10_000)] = 10
    max_variants_per_model: Annotated[int, msgspec.Meta(ge=1, le=10_000)] = 5
    max_versions_per_model: Annotated[int, msgspec.Meta(ge=1, le=10_000)] = 10
    models: list[Annotated[str, msgspec.Meta(min_length=1, max_length=200)]] | None = None
    variants: dict[str, list[Annotated[str, msgspec.Meta(min_length=1, max_length=200)]]] = {}
    versions: dict[str, list[Annotated[str, msgspec.Meta(min_length=1, max_length=200)]]] = {}

    def __post_init__(self) -> None:
        _event_names("models", self.models or [])
        _no_reserved("models", self.models or [])
        for name in ("variants", "versions"):
            lists: dict[str, list[str]] = getattr(self, name)
            _event_names(name, list(lists), "model key ")
            for model, values in lists.items():
                _event_names(f"{name}.{model}", values)
                _no_reserved(f"{name}.{model}", values)

    @property
    def bound_models(self) -> int:
        """Models that can be admitted (the allow-list's size when there is one)."""
        return self.max_models if self.models is None else len(set(self.models))

    def bound_values(self, kind: str) -> int:
        """Variants ('variants') or versions ('versions') one model can have admitted, not counting `__other__`."""
        limit = self.max_variants_per_model if kind == "variants" else self.max_versions_per_model
        lists: dict[str, list[str]] = getattr(self, kind)
        return max([limit, *(len(set(v)) for v in lists.values())])


class Storage(Base):
    """Database settings read when the store opens: the page cache of SQLite write transactions, in MiB (issue 18:
    a replay batch's join-table and bucket pages fit in it, none read back within the batch; reads keep SQLite's
    2 MB default). Its default is storage.locking.WRITE_CACHE_MB (a test keeps the two equal)."""

    sqlite_cache_mb: Annotated[int, msgspec.Meta(ge=1, le=1024)] = 16

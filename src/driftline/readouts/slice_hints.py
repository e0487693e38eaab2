"""Which feature a `slices:` name that no prediction of the window carries probably meant (tryout: `slices:
[contry]` showed every prediction as 'missing', or none recorded, with no hint that the events carry `country`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..analysis.slices import SliceMetrics
from ..config import Config
from ..config_fields import closest_name
from ..core.stats import BucketStats
from ..storage.store import Store
from .windows import Window, merged, window_rows

MISSING = "missing"
"""The value recorded for a prediction without the slice feature (core.engine)."""


def carried_by_none(per: Mapping[str, Sequence[SliceMetrics]]) -> list[str]:
    """The slice features no prediction of the window has a value of: nothing recorded, or only 'missing'."""
    return [name for name, values in per.items() if all(v.value == MISSING for v in values)]


def slice_hints(store: Store, config: Config, model: str, window: Window, stats: BucketStats,
                names: Sequence[str]) -> dict[str, str]:
    """For each of `names` that is no feature name known (declared, seen in the window's predictions, or refused
    as undeclared), the closest of those or of the slice features recorded, when one is close. A name that is a
    known feature gets none: it was listed in `slices:` after its predictions were ingested. The window's feature
    histograms are read only here, when some slice is carried by none."""
    if not names:
        return {}
    seen = merged(window_rows(store, model, window, None, features="packed")).features
    features = {*config.features, *store.undeclared_features(), *seen}
    hints = {name: closest_name(name, features | set(stats.slices)) for name in names if name not in features}
    return {name: near for name, near in hints.items() if near is not None}

"""Label values from events shown escaped: control and invisible characters as `visible_exact` escapes them.

Names from events (model, variant, model_version, feature) reached label values raw: an ESC or a right-to-left
override garbled Grafana legends and alert text (SRE tryout). The escape also doubles backslashes, so two
distinct stored names never become one label value (a duplicate series is an exposition error).
"""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client.core import Metric

from ..terminal import visible_exact


def escape_labels(families: Iterable[Metric]) -> list[Metric]:
    """The families with every sample's label values escaped in place (they are built afresh per snapshot)."""
    out = list(families)
    for fam in out:
        fam.samples = [s._replace(labels={k: visible_exact(v) for k, v in s.labels.items()}) for s in fam.samples]
    return out

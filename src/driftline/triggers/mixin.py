"""The monitoring mixin's `_config`: the selectors shared by the alert and recording rules (alerts/), the Grafana
dashboards (scripts/gen_dashboards.py) and the Kubernetes PrometheusRule (deploy/kubernetes/), so one change of
job name reaches every query. Rule files are written against the default selector; `with_job` re-targets them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class MixinConfig:
    """Label names and the scrape job driftline runs under (Prometheus `job_name`, or the Kubernetes Service name
    a ServiceMonitor scrapes)."""

    job: str = "driftline"
    job_label: str = "job"
    instance_label: str = "instance"
    cluster_label: str = "cluster"

    @property
    def selector(self) -> str:
        """The rules' selector of driftline's series, e.g. `job="driftline"`."""
        return f'{self.job_label}="{self.job}"'

    @property
    def dashboard_selector(self) -> str:
        """The dashboards' selector: the $cluster, $job and $instance variables (every query carries it)."""
        return (f'{self.cluster_label}=~"$cluster", {self.job_label}=~"$job", '
                f'{self.instance_label}=~"$instance"')


DEFAULT = MixinConfig()
"""The selectors the committed rule files and dashboards are written against."""

_JOB = re.compile(r"^[A-Za-z0-9_.:/-]+$")


def with_job(rules_text: str, job: str, base: MixinConfig = DEFAULT) -> str:
    """Rule-file text written against `base` re-targeted at another scrape job (ValueError for a bad name)."""
    if not _JOB.match(job):
        raise ValueError(f"--job: {job!r} is not a plain job name (letters, digits, _ . : / -)")
    return rules_text.replace(base.selector, f'{base.job_label}="{job}"')

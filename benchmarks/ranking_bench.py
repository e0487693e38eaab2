"""Cost and error of ROC AUC / average precision on a 7-day window, three ways in the same run: as `metrics` answers
(the ranking histograms when their bound is within readouts.ranking.TOLERANCE, else the exact read of the held
(score, label) join rows), forced onto the exact read, and from the coarser score histograms alone (what the
buckets gave before the ranking grid).

Usage: python benchmarks/ranking_bench.py [--per-day 5000 20000]
Ingests 7 days of simulated fraud traffic (labels included) into SQLite per volume and prints, per volume, the
labelled predictions, then per way the method used, the AP error against sklearn with its bound, and the latency
as a ratio to the exact read's.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import msgspec
from sklearn.metrics import average_precision_score

from driftline.config import from_dict
from driftline.core.stats import NEG, POS
from driftline.ingest.pipeline import Pipeline, RawRecord
from driftline.ingest.simulate import SimSpec, stream
from driftline.readouts import ranking
from driftline.readouts.metrics import MetricsQuery, metrics_document
from driftline.storage.store import Store

DAY = 86400.0
END = 1_795_996_800.0  # 2026-11-30T00:00:00Z


def build(per_day: int, workdir: str) -> tuple[Store, float, float]:
    """A store holding 7 days of traffic; returns it with sklearn's AP of its labelled predictions."""
    config = from_dict({})
    store = Store(f"sqlite:///{workdir}/rank-{per_day}.db", clock=lambda: END + 60 * DAY)
    store.migrate()
    enc = msgspec.json.Encoder()
    events = list(stream(SimSpec(start=END - 7 * DAY, days=7, per_day=per_day, drift_day=99, seed=3),
                         end=END + 60 * DAY))
    scores = {e["prediction_id"]: e["score"] for e in events if e["type"] == "prediction"}
    labels = {e["prediction_id"]: e["label"] for e in events if e["type"] == "outcome"}
    ids = [i for i in labels if i in scores]
    ap = float(average_precision_score([labels[i] for i in ids], [scores[i] for i in ids]))
    raws = [enc.encode(e) for e in events]
    pipe = Pipeline(config, store, clock=lambda: END + 60 * DAY)
    for i in range(0, len(raws), 20_000):
        pipe.process_batch([RawRecord("bench", 0, j, r) for j, r in enumerate(raws[i:i + 20_000], start=i)])
    return store, ap, float(len(ids))


def timed(store: Store, repeat: int = 7) -> tuple[float, dict]:
    q = MetricsQuery("fraud", 7 * DAY, at=END)
    config = from_dict({})
    times, doc = [], {}
    for _ in range(repeat):
        t0 = time.perf_counter()
        doc = metrics_document(store, config, q)
        times.append(time.perf_counter() - t0)
    return statistics.median(times), doc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--per-day", type=int, nargs="+", default=[5000, 20000])
    args = ap.parse_args()
    coarse = lambda st: (st.hist[POS], st.hist[NEG])  # noqa: E731 - the score histograms alone
    with tempfile.TemporaryDirectory() as d:
        for per_day in args.per_day:
            store, sk_ap, labelled = build(per_day, d)
            t_default, doc_d = timed(store)
            saved_tol, saved_hists = ranking.TOLERANCE, ranking.ranking_hists
            try:
                ranking.TOLERANCE = -1.0  # every window takes the exact read
                t_exact, doc_e = timed(store)
                ranking.TOLERANCE, ranking.ranking_hists = float("inf"), coarse
                t_coarse, doc_c = timed(store)
            finally:
                ranking.TOLERANCE, ranking.ranking_hists = saved_tol, saved_hists
            print(f"per_day={per_day} labelled={labelled:.0f}")
            for name, t, doc in (("metrics (default)", t_default, doc_d), ("exact read", t_exact, doc_e),
                                 ("score histograms", t_coarse, doc_c)):
                a = doc["metrics"]["average_precision"]
                print(f"  {name:18} {a['method']:9} AP err {a['value'] - sk_ap:+.2e} (bound {a['bound']:.1e}) "
                      f"{t * 1e3:7.1f} ms  ratio to the exact read {t / t_exact:.2f}")
            store.close()


if __name__ == "__main__":
    main()

"""driftline: production drift and online-metrics monitor for deployed classifiers."""

__version__ = "0.1.0"

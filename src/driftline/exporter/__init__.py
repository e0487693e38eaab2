"""Prometheus exporter: a scrape-time snapshot collector, live operational metrics and the HTTP server."""

"""Readouts: window queries over stored buckets turned into documents (metrics, drift, calibration, A/B, references)."""

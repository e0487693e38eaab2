"""Pure functions from merged window statistics to results (no IO, no clock)."""

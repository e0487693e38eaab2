"""The pure core: the event contract, the join engine, bucket moves and statistics, the fixed grids (no IO, no clock)."""

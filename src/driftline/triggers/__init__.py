"""Pre-agreed triggers: the pure state machine (model), metric readings, evaluation passes, history, rule files."""

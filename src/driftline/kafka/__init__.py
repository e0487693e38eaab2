"""The live Kafka path: consumer service (`driftline run`), topic management and the simulator's producer."""

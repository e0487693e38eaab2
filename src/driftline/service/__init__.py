"""The long-running process: exporter and trigger evaluation (process), scheduled jobs, leader election, and the live Kafka run."""

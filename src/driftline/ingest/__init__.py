"""Ingestion: sources (files, stdin, the simulator) through the core into storage, one transaction per batch."""

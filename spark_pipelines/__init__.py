"""Spark Structured Streaming jobs that keep Delta tables equal to the captured MySQL tables."""

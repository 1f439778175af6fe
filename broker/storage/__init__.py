"""Kafka-format partition storage: segments, indexes, checkpoints, recovery, retention. No networking."""

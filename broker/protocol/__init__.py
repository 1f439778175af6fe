"""Sans-I/O Kafka protocol: framing, headers, record batches, error codes (schemas from kio)."""

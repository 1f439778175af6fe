"""Capture committed MySQL changes from the binlog and deliver them as canal-JSON to Kafka."""

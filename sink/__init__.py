"""Delivery of encoded messages to a Kafka-protocol broker; knows nothing of MySQL or canal-JSON."""

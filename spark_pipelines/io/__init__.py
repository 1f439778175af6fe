"""The edges: reading Kafka, writing Delta. Everything between them is in transforms/."""

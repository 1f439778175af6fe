"""The bundled Kafka-compatible broker: wire protocol, segment storage, replication."""

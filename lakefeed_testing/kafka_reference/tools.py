"""Kafka's CLI tools (kafka-topics.sh and friends) run straight from the jars."""

import subprocess

from lakefeed_testing.kafka_reference.jars import java_command

KAFKA_TOOLS = {
    "kafka-topics": "org.apache.kafka.tools.TopicCommand",
    "kafka-console-producer": "org.apache.kafka.tools.ConsoleProducer",
    "kafka-console-consumer": "org.apache.kafka.tools.consumer.ConsoleConsumer",
    "kafka-consumer-groups": "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
    "kafka-get-offsets": "org.apache.kafka.tools.GetOffsetShell",
    "kafka-dump-log": "org.apache.kafka.tools.DumpLogSegments",
    "kafka-storage": "kafka.tools.StorageTool",
    "kafka-configs": "kafka.admin.ConfigCommand",
    "kafka-acls": "org.apache.kafka.tools.AclCommand",
    "kafka-delete-records": "org.apache.kafka.tools.DeleteRecordsCommand",
    "kafka-metadata-quorum": "org.apache.kafka.tools.MetadataQuorumCommand",
    "kafka-leader-election": "org.apache.kafka.tools.LeaderElectionCommand",
    "kafka-log-dirs": "org.apache.kafka.tools.LogDirsCommand",
    "kafka-transactions": "org.apache.kafka.tools.TransactionsCommand",
}


def run_kafka_tool(
    tool: str, *args: str, input_text: str | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run one of KAFKA_TOOLS with `args`, as `bin/<tool>.sh` would; output captured as text."""
    if tool not in KAFKA_TOOLS:
        raise ValueError(f"unknown Kafka tool {tool!r}; known: {', '.join(sorted(KAFKA_TOOLS))}")
    return subprocess.run(
        [*java_command(KAFKA_TOOLS[tool]), *args],
        input=input_text, capture_output=True, text=True, timeout=timeout,
    )

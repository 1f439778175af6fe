"""A single-node Apache Kafka in KRaft mode (broker and controller in one JVM) on free ports."""

import contextlib
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from lakefeed_testing.errors import ServiceError
from lakefeed_testing.kafka_reference.jars import java_command
from lakefeed_testing.kafka_reference.tools import run_kafka_tool
from lakefeed_testing.net import free_port, port_open, wait_until


@dataclass(frozen=True)
class KafkaReference:
    port: int
    data_dir: Path

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.port}"


def _server_properties(port: int, controller_port: int, log_dir: Path, overrides: dict[str, str],
                       extra_listeners: dict[str, int]) -> str:
    extra = "".join(f",{name}://127.0.0.1:{extra_port}" for name, extra_port in extra_listeners.items())
    settings = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.bootstrap.servers": f"127.0.0.1:{controller_port}",
        "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}{extra}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}{extra}",
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
        + "".join(f",{name}:{name}" for name in extra_listeners),
        "inter.broker.listener.name": "PLAINTEXT",
        "log.dirs": str(log_dir),
        "num.partitions": "1",
        "offsets.topic.replication.factor": "1",
        "offsets.topic.num.partitions": "3",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        "group.initial.rebalance.delay.ms": "0",
        "auto.create.topics.enable": "true",
        **overrides,
    }
    return "".join(f"{key}={value}\n" for key, value in settings.items())


@contextlib.contextmanager
def kafka_reference(overrides: dict[str, str] | None = None, heap: str = "768m",
                    extra_listeners: dict[str, int] | None = None) -> Iterator[KafkaReference]:
    """Start Apache Kafka on 127.0.0.1, yield it once it answers Metadata, stop and delete it after.
    `extra_listeners` adds listeners named after their security protocol (SSL, SASL_SSL, ...) on given ports."""
    workdir = Path(tempfile.mkdtemp(prefix="lakefeed-kafka-"))
    port, controller_port = free_port(), free_port()
    properties = workdir / "server.properties"
    properties.write_text(_server_properties(port, controller_port, workdir / "logs", overrides or {},
                                             extra_listeners or {}))
    cluster_id = uuid.uuid4().hex[:22]
    formatted = run_kafka_tool("kafka-storage", "format", "-t", cluster_id, "-c", str(properties),
                               "--standalone", "--ignore-formatted")
    if formatted.returncode != 0:
        shutil.rmtree(workdir, ignore_errors=True)
        raise ServiceError(f"kafka-storage format failed: {formatted.stderr[-2000:]}")
    log_path = workdir / "server.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen([*java_command("kafka.Kafka", heap=heap), str(properties)],
                                   stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_until(lambda: port_open(port), timeout=90, what=f"Apache Kafka on port {port} (log: {log_path})",
                   alive=lambda: process.poll() is None)
        yield KafkaReference(port=port, data_dir=workdir / "logs")
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        shutil.rmtree(workdir, ignore_errors=True)

"""Broker throughput and produce latency: our broker vs Apache Kafka, side by side in one run.

    .venv/bin/python bench/broker.py [--small 150000] [--large 40000] [--latency-seconds 3] [--rate 500]
        [--consume-seconds 5] [--tls]
    .venv/bin/python bench/broker.py --client kafka-perf [--rounds 3] [--small 3000000] [--large 1000000]
    .venv/bin/python bench/broker.py --case many [--partitions 1000] [--producers 20] [--consumers 20]
        [--records-per-producer 5000] [--many-rate 1000]

`--case single` (the default):

For each record size (100 B and 1 KiB) and acks (1 and all), on a fresh one-partition topic of each broker
(both run on this machine, one after the other, never at the same time, after a warm-up round each):
- produce: confluent-kafka Producer (linger.ms=5, no compression) sends N records as fast as it can,
  until every delivery is acknowledged: MB/s and records/s;
- consume: a Consumer reads those N records back from the beginning, pass after pass for `--consume-seconds`:
  MB/s and records/s, and the cores the consumer process and the broker used meanwhile;
- latency: a Producer with linger.ms=0 sends `--rate` records/s for `--latency-seconds`; each record's
  produce() -> acknowledgement time is librdkafka's own `Message.latency()`: p50 and p99.
`--client kafka-perf` (bench/_kafka_perf.py): the same cases measured with Kafka's own kafka-producer-perf-test
and kafka-consumer-perf-test (Java clients), `--rounds` times each, ours and Kafka in turn; use larger --small and
--large there (3,000,000 and 1,000,000 records: a read of a few hundred MB lasts about a second).
`--case many` (bench/_many_partitions.py): one topic of `--partitions` partitions; `--producers` producer
processes send `--records-per-producer` keyed 1 KiB records each (acks=all), then `--consumers` consumers in
one group read everything back, then the producers send `--many-rate` records/s together for
`--latency-seconds` (p50/p99). Here the two brokers never run at the same time: ours is started, warmed up,
measured and stopped, then Kafka (1,000 idle partitions of the other broker would skew the second).
Our broker is the real `broker start` process with its disk store; Kafka is the 4.3 reference (KRaft).
"""

from __future__ import annotations

import contextlib
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _kafka_perf import PerfRound, perf_round, perf_table
from _many_partitions import (
    ManyResult,
    ManyShape,
    many_table,
    measure_many,
    pids_whose_command_line_has,
    process_cpu_seconds,
)
from _produce_timing import timed_produce

from lakefeed_testing.kafka_reference import KafkaReference, kafka_reference
from lakefeed_testing.net import free_port, port_open, wait_until
from lakefeed_testing.own_broker import MESSAGE_MAX_BYTES, OwnBroker
from lakefeed_testing.processes import stop_process
from lakefeed_testing.secure_broker import start_broker
from lakefeed_testing.tls import TestCA


@dataclass(frozen=True)
class Result:
    produce_mb: float
    produce_rate: float
    consume_mb: float
    consume_rate: float
    p50_ms: float
    p99_ms: float
    # Cores used while consuming: which side bounds the rate. A broker far below one core while the client's
    # poll loop holds one is waiting for the client, and a faster broker would not read faster.
    consume_client_cores: float
    consume_broker_cores: float


Client = dict[str, str]  # bootstrap.servers and the connection's security settings


@dataclass(frozen=True)
class Side:
    client: Client
    pid: int  # the broker's process (ours, or Kafka's JVM), for its CPU time


def _topic(client: Client) -> str:
    name = f"bench-{uuid.uuid4().hex[:8]}"
    admin = AdminClient(client)
    admin.create_topics([NewTopic(name, 1, 1)])[name].result(30)
    return name


def _produce(client: Client, topic: str, payload: bytes, count: int, acks: str) -> float:
    # batch.size stays under the 200 kB message.max.bytes OwnBroker sets.
    producer = Producer({**client, "acks": acks, "linger.ms": 5, "batch.size": 160_000,
                         "queue.buffering.max.messages": 1_000_000, "enable.idempotence": False})
    return timed_produce(producer, client["bootstrap.servers"], topic, payload, count)


def _consume(client: Client, topic: str, count: int, broker_pid: int, seconds: float) -> tuple[float, float, float]:
    """Records per second reading the topic's `count` records from offset 0, again and again (a new
    assignment at offset 0 each pass) until `seconds` have passed, and the cores the client (every thread:
    librdkafka's too) and the broker used meanwhile. One pass of 40 MB takes a fraction of a second, less
    than the consumer's own start-up and fetch-wait jitter, so a single pass measured noise."""
    consumer = Consumer({**client, "group.id": f"bench-{uuid.uuid4().hex[:6]}",
                         "enable.auto.commit": False, "fetch.max.bytes": 52_428_800,
                         "max.partition.fetch.bytes": 10_485_760,
                         # At the end of a pass the prefetcher's Fetch waits at the log end for up to
                         # fetch.wait.max.ms, and the next pass's Fetch queues behind it: 500 ms (the
                         # default) per pass would be most of what is measured, on both brokers alike.
                         "fetch.wait.max.ms": 5})
    read = 0
    client_cpu, broker_cpu = time.process_time(), process_cpu_seconds(broker_pid)
    started = time.perf_counter()
    while read == 0 or time.perf_counter() - started < seconds:
        consumer.assign([TopicPartition(topic, 0, 0)])
        seen = 0
        deadline = time.perf_counter() + 120
        while seen < count and time.perf_counter() < deadline:
            seen += sum(1 for m in consumer.consume(min(10_000, count - seen), 0.5) if m.error() is None)
        if seen < count:
            raise click.ClickException(f"consume from {client['bootstrap.servers']}: {seen} of {count} records "
                                       "in 120 s")
        read += seen
    elapsed = time.perf_counter() - started
    client_cores = (time.process_time() - client_cpu) / elapsed
    broker_cores = (process_cpu_seconds(broker_pid) - broker_cpu) / elapsed
    consumer.close()
    return read / elapsed, client_cores, broker_cores


def _latency(client: Client, topic: str, payload: bytes, acks: str, seconds: float, rate: int) -> list[float]:
    producer = Producer({**client, "acks": acks, "linger.ms": 0})
    latencies: list[float] = []

    def report(error: Any, message: Any) -> None:
        if error is None:
            latencies.append(message.latency() * 1000)

    producer.produce(topic, payload)  # connect and fetch metadata outside the measurement
    producer.flush(30)
    interval = 1 / rate
    started = time.perf_counter()
    for index in range(int(seconds * rate)):
        delay = started + index * interval - time.perf_counter()
        if delay > 0:
            producer.poll(delay)
        producer.produce(topic, payload, on_delivery=report)
        producer.poll(0)
    producer.flush(30)
    return latencies


def _measure(side: Side, size: int, count: int, acks: str, seconds: float, rate: int,
             consume_seconds: float) -> Result:
    client = side.client
    payload = bytes(range(256)) * (size // 256) + b"x" * (size % 256)
    topic = _topic(client)
    produce_s = _produce(client, topic, payload, count, acks)
    consume_rate, client_cores, broker_cores = _consume(client, topic, count, side.pid, consume_seconds)
    latencies = sorted(_latency(client, _topic(client), payload, acks, seconds, rate))
    megabytes = size * count / 1e6
    return Result(
        megabytes / produce_s, count / produce_s, consume_rate * size / 1e6, consume_rate,
        statistics.median(latencies), latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))],
        client_cores, broker_cores,
    )


def _table(rows: list[tuple[str, Result, Result]]) -> str:
    metrics: list[tuple[str, Callable[[Result], float], str]] = [
        ("produce MB/s", lambda r: r.produce_mb, "{:.1f}"),
        ("produce records/s", lambda r: r.produce_rate, "{:,.0f}"),
        ("consume MB/s", lambda r: r.consume_mb, "{:.1f}"),
        ("consume records/s", lambda r: r.consume_rate, "{:,.0f}"),
        ("produce latency p50 ms", lambda r: r.p50_ms, "{:.2f}"),
        ("produce latency p99 ms", lambda r: r.p99_ms, "{:.2f}"),
        ("consumer's CPU while consuming, cores", lambda r: r.consume_client_cores, "{:.2f}"),
        ("broker's CPU while consuming, cores", lambda r: r.consume_broker_cores, "{:.2f}"),
    ]
    lines = ["| case | metric | ours | Kafka | ours/Kafka |", "|---|---|---:|---:|---:|"]
    for case, ours, kafka in rows:
        for name, get, fmt in metrics:
            ratio = get(ours) / get(kafka) if get(kafka) else float("nan")
            lines.append(f"| {case} | {name} | {fmt.format(get(ours))} | {fmt.format(get(kafka))} | {ratio:.2f}x |")
    return "\n".join(lines)


def _single(small: int, large: int, latency_seconds: float, rate: int, tls: bool, consume_seconds: float) -> str:
    cases = [(100, small, "1"), (100, small, "all"), (1024, large, "1"), (1024, large, "all")]
    rows: list[tuple[str, Result, Result]] = []
    with tempfile.TemporaryDirectory(prefix="bench-broker-") as root, _brokers(Path(root), tls) as (ours, kafka):
        click.echo("warming up both brokers (the JVM's JIT, our imports) ...", err=True)
        for client in (ours, kafka):
            _measure(client, 1024, min(large, 10_000), "all", 1.0, rate, 1.0)
        for size, count, acks in cases:
            case = f"{size} B, acks={acks}, {count:,} records{', TLS' if tls else ''}"
            click.echo(f"running {case} ...", err=True)
            mine = _measure(ours, size, count, acks, latency_seconds, rate, consume_seconds)
            theirs = _measure(kafka, size, count, acks, latency_seconds, rate, consume_seconds)
            rows.append((case, mine, theirs))
    return _table(rows)


def _single_kafka_perf(small: int, large: int, latency_seconds: float, rate: int, rounds: int) -> str:
    cases = [(100, small, "1"), (100, small, "all"), (1024, large, "1"), (1024, large, "all")]
    rows: list[tuple[str, list[PerfRound], list[PerfRound]]] = []
    with tempfile.TemporaryDirectory(prefix="bench-broker-") as root, _brokers(Path(root), False) as (ours, kafka):
        sides = ((ours.client["bootstrap.servers"], ours.pid), (kafka.client["bootstrap.servers"], kafka.pid))
        click.echo("warming up both brokers ...", err=True)
        for bootstrap, _ in sides:
            perf_round(bootstrap, 1024, min(large, 100_000), "all", rate, 1.0)
        for size, count, acks in cases:
            case = f"{size} B, acks={acks}, {count:,} records"
            results: tuple[list[PerfRound], list[PerfRound]] = ([], [])
            for index in range(rounds):
                for (bootstrap, pid), found in zip(sides, results, strict=True):
                    click.echo(f"{case}: round {index + 1} of {rounds} against {bootstrap} ...", err=True)
                    found.append(perf_round(bootstrap, size, count, acks, rate, latency_seconds, pid))
            rows.append((case, *results))
    return perf_table(rows)


@contextlib.contextmanager
def _brokers(root: Path, tls: bool) -> Iterator[tuple[Side, Side]]:
    """Our broker and Kafka, both up; with `tls`, each serves an SSL listener (the same PEM key store, made here)
    and the clients connect through it, checking the certificate against the CA."""
    if not tls:
        ours = OwnBroker(root)
        ours.start()
        try:
            assert ours.process is not None
            with kafka_reference() as kafka:
                yield (Side({"bootstrap.servers": ours.bootstrap}, ours.process.pid),
                       Side({"bootstrap.servers": kafka.bootstrap_servers}, _java_pid(kafka)))
        finally:
            ours.stop()
        return
    ca = TestCA(root / "pki")
    server = ca.issue("broker", server=True)
    stores = {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(server.keystore),
              "ssl.truststore.type": "PEM", "ssl.truststore.location": str(ca.ca_file)}
    client = {"security.protocol": "SSL", "ssl.ca.location": str(ca.ca_file)}
    port, kafka_port = free_port(), free_port()
    (root / "ours").mkdir()
    process = start_broker(root / "ours", {**stores, "listeners": f"SSL://127.0.0.1:{port}",
                                           "message.max.bytes": str(MESSAGE_MAX_BYTES)})
    try:
        wait_until(lambda: port_open(port), timeout=60, what="our broker's SSL listener",
                   alive=lambda: process.poll() is None)
        with kafka_reference(stores, extra_listeners={"SSL": kafka_port}) as kafka:
            yield (Side({**client, "bootstrap.servers": f"127.0.0.1:{port}"}, process.pid),
                   Side({**client, "bootstrap.servers": f"127.0.0.1:{kafka_port}"}, _java_pid(kafka)))
    finally:
        stop_process(process)


def _many_round(bootstrap: str, pid: int, shape: ManyShape, who: str) -> ManyResult:
    click.echo(f"{who}: warm-up round ({shape.smaller().records:,} records) ...", err=True)
    measure_many(bootstrap, pid, shape.smaller())
    click.echo(f"{who}: {shape.records:,} records ...", err=True)
    return measure_many(bootstrap, pid, shape)


def _java_pid(kafka: KafkaReference) -> int:
    """The reference's JVM: the process whose command line names its server.properties."""
    properties = str(kafka.data_dir.parent / "server.properties")
    found = pids_whose_command_line_has(properties)
    if not found:
        raise click.ClickException(f"no process runs {properties}")
    return found[0]


def _many(shape: ManyShape) -> str:
    with tempfile.TemporaryDirectory(prefix="bench-broker-") as root:
        ours = OwnBroker(Path(root))
        ours.start()
        try:
            assert ours.process is not None
            mine = _many_round(ours.bootstrap, ours.process.pid, shape, "ours")
        finally:
            ours.stop()
    # The same group.initial.rebalance.delay.ms as OwnBroker's, so both groups form the same way.
    with kafka_reference({"group.initial.rebalance.delay.ms": "300"}) as kafka:
        theirs = _many_round(kafka.bootstrap_servers, _java_pid(kafka), shape, "Kafka")
    case = (f"{shape.partitions:,} partitions, {shape.producers} producers, {shape.consumers} consumers,"
            f" {shape.size} B keyed, acks={shape.acks}, {shape.records:,} records")
    return many_table(case, mine, theirs)


@click.command()
@click.option("--case", "which", type=click.Choice(["single", "many"]), default="single", show_default=True,
              help="single: one-partition topics, one client; many: --partitions with many producers and consumers")
@click.option("--small", default=150_000, show_default=True, help="records per produce/consume run at 100 B")
@click.option("--large", default=40_000, show_default=True, help="records per produce/consume run at 1 KiB")
@click.option("--latency-seconds", default=3.0, show_default=True)
@click.option("--rate", default=500, show_default=True, help="records/s during the latency runs (single)")
@click.option("--consume-seconds", default=5.0, show_default=True,
              help="single: read the records back, pass after pass, for at least this long")
@click.option("--partitions", default=1000, show_default=True, help="partitions of the topic (many)")
@click.option("--producers", default=20, show_default=True, help="producer processes (many)")
@click.option("--consumers", default=20, show_default=True, help="consumer processes in one group (many)")
@click.option("--records-per-producer", default=5000, show_default=True, help="1 KiB records per producer (many)")
@click.option("--many-rate", default=1000, show_default=True,
              help="records/s of all producers together during the latency run (many)")
@click.option("--tls", is_flag=True, help="single: clients connect to both brokers over an SSL listener")
@click.option("--client", type=click.Choice(["confluent", "kafka-perf"]), default="confluent", show_default=True,
              help="single: confluent-kafka from this process, or Kafka's kafka-producer/consumer-perf-test (Java)")
@click.option("--rounds", default=3, show_default=True, help="single with --client kafka-perf: rounds per case")
def main(which: str, small: int, large: int, latency_seconds: float, rate: int, consume_seconds: float,
         partitions: int, producers: int, consumers: int, records_per_producer: int, many_rate: int,
         tls: bool, client: str, rounds: int) -> None:
    """Print a table: our broker vs Apache Kafka, produce/consume throughput and produce latency."""
    if client == "kafka-perf" and (which != "single" or tls):
        raise click.UsageError("--client kafka-perf runs the single case over plain TCP; drop --case many and --tls")
    if which == "single" and client == "kafka-perf":
        click.echo(_single_kafka_perf(small, large, latency_seconds, rate, rounds))
    elif which == "single":
        click.echo(_single(small, large, latency_seconds, rate, tls, consume_seconds))
    else:
        click.echo(_many(ManyShape(partitions, producers, consumers, records_per_producer, 1024, "all", many_rate,
                                   latency_seconds)))


if __name__ == "__main__":
    main()

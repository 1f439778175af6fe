"""bench/broker.py's `--client kafka-perf`: Apache Kafka's own performance tools against both brokers.

`kafka-producer-perf-test` (org.apache.kafka.tools.ProducerPerformance) and `kafka-consumer-perf-test`
(org.apache.kafka.tools.ConsumerPerformance) from the Kafka 4.3 jars, the tools Kafka's own docs and users
measure a cluster with, run unchanged against our broker and the Kafka reference. Unlike the confluent-kafka
loop of the default client, the Java consumer is not bound by a Python `poll()` per record, so at 1 KiB the
brokers' Fetch answers set most of the pace; at 100 B the consumer's own per-record work still does (its
`fetch-latency-avg` metric, reported here, is the part of each fetch cycle a broker can change).

Per case and round, on a fresh one-partition topic of each broker in turn:
- produce: `--num-records N --record-size S --throughput -1` with the case's acks, `linger.ms=5`,
  `batch.size=160000` (as the default client): MB/s;
- consume: `--messages N` from the beginning in a new group, twice; the second read's `fetch.MB.sec` (after the
  group's join; the first warms the JVM's JIT) and the consumer's `fetch-latency-avg` (ms from sending a Fetch to
  having its answer, as the Java client measures it);
- latency: `--throughput RATE` for `--latency-seconds` with `linger.ms=0`: the tool's p50/p99 (send -> ack);
- CPU per MB of the measured produce run and read: the broker's (`/proc/PID/stat`, every thread, our process or
  Kafka's JVM) and the tool's (its JVM, waited for, less the CPU of the same tool moving one record: its
  start-up). The two share the machine's cores, so a rate is bounded by cores / (client + broker CPU per MB),
  whichever broker it is (docs/benchmarks.md, issue 18).
The table shows each figure's median over the rounds and the ratio of the medians.
"""

from __future__ import annotations

import re
import resource
import statistics
import subprocess
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import click
from _many_partitions import process_cpu_seconds
from confluent_kafka.admin import AdminClient, NewTopic

from lakefeed_testing.kafka_reference.jars import java_command

PRODUCER = "org.apache.kafka.tools.ProducerPerformance"
CONSUMER = "org.apache.kafka.tools.ConsumerPerformance"
_PRODUCED = re.compile(r"records/sec \(([\d.]+) MB/sec\).* (\d+) ms 50th, \d+ ms 95th, (\d+) ms 99th")
_FETCH_LATENCY = re.compile(r"consumer-fetch-manager-metrics:fetch-latency-avg:\{client-id=[^}]*\}\s*:\s*([\d.]+)")


@dataclass(frozen=True)
class PerfRound:
    produce_mb: float
    consume_mb: float
    fetch_latency_ms: float
    p50_ms: float
    p99_ms: float
    # CPU milliseconds per MB moved, of the broker (every thread) and of the tool's JVM (less a one-record run's:
    # its start-up), over the whole measured produce run and the measured read.
    produce_broker_ms: float = 0.0
    produce_client_ms: float = 0.0
    consume_broker_ms: float = 0.0
    consume_client_ms: float = 0.0


@dataclass(frozen=True)
class CpuUse:
    """CPU seconds of the broker and of the tool during one run of the tool."""

    broker_s: float
    client_s: float

    def less_client(self, start_up: CpuUse) -> CpuUse:
        return CpuUse(self.broker_s, max(0.0, self.client_s - start_up.client_s))

    def per_mb(self, megabytes: float) -> tuple[float, float]:
        return self.broker_s / megabytes * 1000, self.client_s / megabytes * 1000


def _children_cpu_s() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)  # the tool, once it has been waited for
    return used.ru_utime + used.ru_stime


def _run(main_class: str, args: Sequence[str], what: str, broker_pid: int = 0) -> tuple[str, CpuUse]:
    broker, client = process_cpu_seconds(broker_pid) if broker_pid else 0.0, _children_cpu_s()
    done = subprocess.run([*java_command(main_class, heap="512m"), *args], capture_output=True, text=True,
                          timeout=300)
    used = CpuUse((process_cpu_seconds(broker_pid) - broker) if broker_pid else 0.0, _children_cpu_s() - client)
    if done.returncode != 0:
        raise click.ClickException(f"{what}: exit {done.returncode}: {(done.stderr or done.stdout)[-1500:]}")
    return done.stdout, used


def _topic(bootstrap: str) -> str:
    name = f"perf-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, 1, 1)])[name].result(30)
    return name


def _produce(bootstrap: str, topic: str, records: int, size: int, throughput: int,
             props: Sequence[str], broker_pid: int = 0) -> tuple[re.Match[str], CpuUse]:
    out, used = _run(PRODUCER, ["--topic", topic, "--num-records", str(records), "--record-size", str(size),
                          "--throughput", str(throughput), "--producer-props", f"bootstrap.servers={bootstrap}",
                          *props], f"kafka-producer-perf-test against {bootstrap}", broker_pid)
    found = _PRODUCED.search(out.strip().splitlines()[-1])
    if found is None:
        raise click.ClickException(f"kafka-producer-perf-test printed no summary: {out[-500:]}")
    return found, used


def _consume(bootstrap: str, topic: str, records: int, broker_pid: int = 0) -> tuple[float, float, CpuUse]:
    """fetch.MB.sec (the read after the group's join), the consumer's fetch-latency-avg in ms, the CPU used."""
    out, used = _run(CONSUMER, ["--bootstrap-server", bootstrap, "--topic", topic, "--messages", str(records),
                                "--timeout", "60000", "--print-metrics"],
                     f"kafka-consumer-perf-test against {bootstrap}", broker_pid)
    lines = out.splitlines()
    header = next((i for i, line in enumerate(lines) if line.startswith("start.time")), None)
    latency = _FETCH_LATENCY.search(out)
    if header is None or latency is None:
        raise click.ClickException(f"kafka-consumer-perf-test printed no summary: {out[-500:]}")
    values = dict(zip(lines[header].split(", "), lines[header + 1].split(", "), strict=True))
    if int(values["data.consumed.in.nMsg"]) < records:
        raise click.ClickException(f"kafka-consumer-perf-test against {bootstrap}: read "
                                   f"{values['data.consumed.in.nMsg']} of {records} records")
    return float(values["fetch.MB.sec"]), float(latency.group(1)), used


def perf_round(bootstrap: str, size: int, records: int, acks: str, rate: int, latency_seconds: float,
               broker_pid: int = 0) -> PerfRound:
    topic = _topic(bootstrap)
    megabytes = records * size / 1024 / 1024  # the tools' MB
    settings = [f"acks={acks}", "linger.ms=5", "batch.size=160000"]
    produced, produce_cpu = _produce(bootstrap, topic, records, size, -1, settings, broker_pid)
    _consume(bootstrap, topic, records)  # the consumer JVM's JIT warms up on the first read
    consume_mb, fetch_latency, consume_cpu = _consume(bootstrap, topic, records, broker_pid)
    # The tools' own start-up (JVM, metadata, the group's join), measured on one record and taken off the client's
    # CPU: what is left is what moving the records cost it.
    produce_cpu = produce_cpu.less_client(_produce(bootstrap, _topic(bootstrap), 1, size, -1, settings)[1])
    consume_cpu = consume_cpu.less_client(_consume(bootstrap, topic, 1)[2])
    timed, _ = _produce(bootstrap, _topic(bootstrap), max(1, int(rate * latency_seconds)), size, rate,
                        [f"acks={acks}", "linger.ms=0"])
    return PerfRound(float(produced.group(1)), consume_mb, fetch_latency, float(timed.group(2)), float(timed.group(3)),
                     *produce_cpu.per_mb(megabytes), *consume_cpu.per_mb(megabytes))


def perf_table(rows: list[tuple[str, list[PerfRound], list[PerfRound]]]) -> str:
    metrics: list[tuple[str, Callable[[PerfRound], float], str]] = [
        ("produce MB/s", lambda r: r.produce_mb, "{:.1f}"),
        ("consume MB/s (fetch.MB.sec)", lambda r: r.consume_mb, "{:.1f}"),
        ("consumer's fetch-latency-avg ms", lambda r: r.fetch_latency_ms, "{:.2f}"),
        ("produce latency p50 ms", lambda r: r.p50_ms, "{:.0f}"),
        ("produce latency p99 ms", lambda r: r.p99_ms, "{:.0f}"),
        ("produce: broker CPU ms per MB", lambda r: r.produce_broker_ms, "{:.1f}"),
        ("produce: client CPU ms per MB", lambda r: r.produce_client_ms, "{:.1f}"),
        ("consume: broker CPU ms per MB", lambda r: r.consume_broker_ms, "{:.2f}"),
        ("consume: client CPU ms per MB", lambda r: r.consume_client_ms, "{:.2f}"),
    ]
    lines = ["| case | metric | ours (median; rounds) | Kafka (median; rounds) | ours/Kafka |",
             "|---|---|---:|---:|---:|"]
    for case, ours, kafka in rows:
        for name, get, fmt in metrics:
            mine, theirs = statistics.median(map(get, ours)), statistics.median(map(get, kafka))
            ratio = f"{mine / theirs:.2f}x" if theirs else "-"
            lines.append(f"| {case} | {name} | {fmt.format(mine)} ({', '.join(fmt.format(get(r)) for r in ours)}) | "
                         f"{fmt.format(theirs)} ({', '.join(fmt.format(get(r)) for r in kafka)}) | {ratio} |")
    return "\n".join(lines)

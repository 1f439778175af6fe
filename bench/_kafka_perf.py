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
- latency: `--throughput RATE` for `--latency-seconds` with `linger.ms=0`: the tool's p50/p99 (send -> ack).
The table shows each figure's median over the rounds and the ratio of the medians.
"""

from __future__ import annotations

import re
import statistics
import subprocess
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import click
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


def _run(main_class: str, args: Sequence[str], what: str) -> str:
    done = subprocess.run([*java_command(main_class, heap="512m"), *args], capture_output=True, text=True,
                          timeout=300)
    if done.returncode != 0:
        raise click.ClickException(f"{what}: exit {done.returncode}: {(done.stderr or done.stdout)[-1500:]}")
    return done.stdout


def _topic(bootstrap: str) -> str:
    name = f"perf-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, 1, 1)])[name].result(30)
    return name


def _produce(bootstrap: str, topic: str, records: int, size: int, throughput: int,
             props: Sequence[str]) -> re.Match[str]:
    out = _run(PRODUCER, ["--topic", topic, "--num-records", str(records), "--record-size", str(size),
                          "--throughput", str(throughput), "--producer-props", f"bootstrap.servers={bootstrap}",
                          *props], f"kafka-producer-perf-test against {bootstrap}")
    found = _PRODUCED.search(out.strip().splitlines()[-1])
    if found is None:
        raise click.ClickException(f"kafka-producer-perf-test printed no summary: {out[-500:]}")
    return found


def _consume(bootstrap: str, topic: str, records: int) -> tuple[float, float]:
    """fetch.MB.sec (the read after the group's join) and the consumer's fetch-latency-avg in ms."""
    out = _run(CONSUMER, ["--bootstrap-server", bootstrap, "--topic", topic, "--messages", str(records),
                          "--timeout", "60000", "--print-metrics"], f"kafka-consumer-perf-test against {bootstrap}")
    lines = out.splitlines()
    header = next((i for i, line in enumerate(lines) if line.startswith("start.time")), None)
    latency = _FETCH_LATENCY.search(out)
    if header is None or latency is None:
        raise click.ClickException(f"kafka-consumer-perf-test printed no summary: {out[-500:]}")
    values = dict(zip(lines[header].split(", "), lines[header + 1].split(", "), strict=True))
    if int(values["data.consumed.in.nMsg"]) < records:
        raise click.ClickException(f"kafka-consumer-perf-test against {bootstrap}: read "
                                   f"{values['data.consumed.in.nMsg']} of {records} records")
    return float(values["fetch.MB.sec"]), float(latency.group(1))


def perf_round(bootstrap: str, size: int, records: int, acks: str, rate: int, latency_seconds: float) -> PerfRound:
    topic = _topic(bootstrap)
    produced = _produce(bootstrap, topic, records, size, -1, [f"acks={acks}", "linger.ms=5", "batch.size=160000"])
    _consume(bootstrap, topic, records)  # the consumer JVM's JIT warms up on the first read
    consume_mb, fetch_latency = _consume(bootstrap, topic, records)
    timed = _produce(bootstrap, _topic(bootstrap), max(1, int(rate * latency_seconds)), size, rate,
                     [f"acks={acks}", "linger.ms=0"])
    return PerfRound(float(produced.group(1)), consume_mb, fetch_latency, float(timed.group(2)), float(timed.group(3)))


def perf_table(rows: list[tuple[str, list[PerfRound], list[PerfRound]]]) -> str:
    metrics: list[tuple[str, Callable[[PerfRound], float], str]] = [
        ("produce MB/s", lambda r: r.produce_mb, "{:.1f}"),
        ("consume MB/s (fetch.MB.sec)", lambda r: r.consume_mb, "{:.1f}"),
        ("consumer's fetch-latency-avg ms", lambda r: r.fetch_latency_ms, "{:.2f}"),
        ("produce latency p50 ms", lambda r: r.p50_ms, "{:.0f}"),
        ("produce latency p99 ms", lambda r: r.p99_ms, "{:.0f}"),
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

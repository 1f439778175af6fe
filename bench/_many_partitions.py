"""bench/broker.py's "many" case: one topic of P partitions, N producer processes writing keyed records, then M
consumers in one group reading everything back; then the same N producers at a fixed rate for latency.

Clients are processes, not threads (a forkserver that has imported confluent-kafka once forks them cheaply):
in one interpreter, 20 producers' `produce()` calls and delivery reports and 20 consumers' message objects
would all take turns on one GIL, so on a fast broker the Python client, not the broker, would set the rate
(bench/broker.py's single-client case is already partly client-bound at 100 B). Every client connects and
fetches the topic's metadata before the clock starts; consumers join the group with their partitions paused
and start fetching together once the whole group is assigned, so the consume rate measures the broker's
Fetch path, and the group's forming time is reported apart ("group ready s").
"""

from __future__ import annotations

import multiprocessing
import os
import statistics
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

_CONTEXT = multiprocessing.get_context("forkserver")
_CONTEXT.set_forkserver_preload(["confluent_kafka"])


@dataclass(frozen=True)
class ManyShape:
    partitions: int
    producers: int
    consumers: int
    records_per_producer: int
    size: int
    acks: str
    rate: int  # records/s of all producers together during the latency run
    latency_seconds: float

    @property
    def records(self) -> int:
        return self.producers * self.records_per_producer

    @property
    def latency_records_per_producer(self) -> int:
        return int(self.latency_seconds * self.rate / self.producers)

    @property
    def extra_records(self) -> int:
        """Records in the topic besides the measured ones: each producer's two warm-up records (one per
        client) and the latency run's, all read back with them (the consume rate counts them too)."""
        return self.producers * (2 + self.latency_records_per_producer)

    def smaller(self) -> ManyShape:
        """The warm-up round: the same clients and partitions, a tenth of the records, a short latency run."""
        return ManyShape(self.partitions, self.producers, self.consumers, max(self.records_per_producer // 10, 1),
                         self.size, self.acks, self.rate, min(self.latency_seconds, 1.0))


@dataclass(frozen=True)
class ManyResult:
    produce_mb: float
    produce_rate: float
    consume_mb: float
    consume_rate: float
    group_ready_s: float
    produce_client_cpu: float  # the clients' CPU seconds (every thread) per second of the phase, in cores
    consume_client_cpu: float
    produce_broker_cpu: float  # the broker process's, the same way
    consume_broker_cpu: float
    loaded_p99_ms: float  # every record of the throughput run: mostly time queued in the client
    p50_ms: float  # the fixed-rate run
    p99_ms: float


def _payload(size: int) -> bytes:
    return bytes(range(256)) * (size // 256) + b"x" * (size % 256)


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))] * 1000


def pids_whose_command_line_has(text: str) -> list[int]:
    """The processes whose command line (proc(5): /proc/PID/cmdline, arguments ended by NUL) contains `text`."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and text in (entry / "cmdline").read_bytes().decode(errors="replace"):
                found.append(int(entry.name))
        except OSError:
            continue  # exited meanwhile
    return found


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of every thread of process `pid` so far (proc(5): /proc/PID/stat fields 14, 15)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _produce_worker(bootstrap: str, topic: str, index: int, shape: ManyShape, barrier: Any, out: Any) -> None:
    # batch.size stays under the 200 kB message.max.bytes OwnBroker sets.
    common = {"bootstrap.servers": bootstrap, "acks": shape.acks, "enable.idempotence": False}
    bulk = Producer({**common, "linger.ms": 5, "batch.size": 160_000, "queue.buffering.max.messages": 1_000_000})
    steady = Producer({**common, "linger.ms": 0})
    payload = _payload(shape.size)
    keys = [f"p{index}-k{i}".encode() for i in range(shape.records_per_producer)]
    loaded: list[float] = []
    timed: list[float] = []
    errors: list[str] = []

    def into(latencies: list[float]) -> Callable[[Any, Any], None]:
        def report(error: Any, message: Any) -> None:
            if error is None:
                latencies.append(message.latency())
            else:
                errors.append(str(error))
        return report

    for producer in (bulk, steady):  # connections and the topic's metadata, outside the measurement
        producer.produce(topic, b"warm-up", key=b"warm-up")
        producer.flush(60)
    barrier.wait(300)
    started, cpu = time.monotonic(), time.process_time()
    report = into(loaded)
    for key in keys:
        try:
            bulk.produce(topic, payload, key=key, on_delivery=report)
        except BufferError:  # the local queue is full: let deliveries drain it
            bulk.poll(0.01)
            bulk.produce(topic, payload, key=key, on_delivery=report)
        bulk.poll(0)
    remaining = bulk.flush(300)
    out.put(("produce", index, started, time.monotonic(), remaining, errors[:3], loaded, time.process_time() - cpu))
    barrier.wait(300)
    interval = shape.producers / shape.rate
    report = into(timed)
    started = time.monotonic()
    for i in range(shape.latency_records_per_producer):
        delay = started + i * interval - time.monotonic()
        if delay > 0:
            steady.poll(delay)
        steady.produce(topic, payload, key=keys[i % len(keys)], on_delivery=report)
        steady.poll(0)
    remaining = steady.flush(60)
    out.put(("latency", index, remaining, errors[:3], timed))


def _consume_worker(bootstrap: str, topic: str, group: str, index: int, assigned: Any, progress: Any, cpu: Any,
                    go: Any, stop: Any) -> None:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False, "fetch.max.bytes": 52_428_800})

    def on_assign(client: Any, partitions: list[Any]) -> None:
        client.assign(partitions)
        if not go.is_set():
            client.pause(partitions)  # joined, but no fetching before every member has its share
        assigned[index] = len(partitions)

    def on_revoke(client: Any, partitions: list[Any]) -> None:
        assigned[index] = 0

    consumer.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke)
    resumed = False
    while not stop.is_set():
        if not resumed and go.is_set():
            consumer.resume(consumer.assignment())
            resumed, cpu_start = True, time.process_time()
        newest: dict[int, int] = {}
        for message in consumer.consume(10_000, 0.05):
            if message.error() is None:
                newest[message.partition()] = message.offset() + 1
        for partition, offset in newest.items():
            # One owner per partition at a time; max() keeps a re-read after a rebalance from counting twice.
            progress[partition] = max(progress[partition], offset)
        if resumed:
            cpu[index] = time.process_time() - cpu_start
    consumer.close()


def _create_topic(bootstrap: str, partitions: int) -> str:
    name = f"bench-many-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(120)
    # Kafka answers CreateTopics before every partition has a leader; producers that start earlier spend
    # the first second in retries and metadata refreshes. Both brokers start the clock with all leaders known.
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        found = admin.list_topics(name, timeout=30).topics[name]
        if found.error is None and len(found.partitions) == partitions and all(
                p.leader >= 0 and p.error is None for p in found.partitions.values()):
            return name
        time.sleep(0.2)
    raise click.ClickException(f"topic {name} on {bootstrap}: not every partition had a leader after 120 s")


def _produce(bootstrap: str, broker_pid: int, topic: str,
             shape: ManyShape) -> tuple[float, float, float, list[float], list[float]]:
    """Seconds from the first producer's start to the last one's final acknowledgement, the producers' CPU
    seconds meanwhile, the broker's CPU cores used meanwhile; latencies in s."""
    barrier, out = _CONTEXT.Barrier(shape.producers + 1), _CONTEXT.Queue()
    workers = [_CONTEXT.Process(target=_produce_worker, args=(bootstrap, topic, i, shape, barrier, out))
               for i in range(shape.producers)]
    for worker in workers:
        worker.start()
    try:
        barrier.wait(300)
        broker_cpu, began = process_cpu_seconds(broker_pid), time.monotonic()
        done = [out.get(timeout=600) for _ in workers]
        broker_cores = (process_cpu_seconds(broker_pid) - broker_cpu) / (time.monotonic() - began)
        failed = [d for d in done if d[4] or d[5]]
        if failed:
            raise click.ClickException(f"produce to {bootstrap}: {failed[0][4]} unacknowledged, errors {failed[0][5]}")
        barrier.wait(300)
        timed = [out.get(timeout=300) for _ in workers]
    finally:
        for worker in workers:
            worker.join(60)
            if worker.is_alive():
                worker.kill()
    seconds = max(d[3] for d in done) - min(d[2] for d in done)
    loaded = [x for d in done for x in d[6]]
    return seconds, sum(d[7] for d in done), broker_cores, loaded, [x for t in timed for x in t[4]]


def _wait_for_group(assigned: Any, partitions: int, deadline: float) -> None:
    """Until every partition is assigned and the assignment held still for a second (no rebalance under way)."""
    stable_since = None
    while time.monotonic() < deadline:
        if sum(assigned) == partitions:
            stable_since = stable_since or time.monotonic()
            if time.monotonic() - stable_since >= 1.0:
                return
        else:
            stable_since = None
        time.sleep(0.05)
    raise click.ClickException(f"consumer group: {sum(assigned)} of {partitions} partitions assigned after 180 s")


def _consume(bootstrap: str, broker_pid: int, topic: str, shape: ManyShape) -> tuple[float, float, float, float]:
    """(seconds to read every record once all members started fetching, seconds the group took to form, the
    consumers' CPU seconds while reading, the broker's CPU cores used meanwhile)."""
    assigned = _CONTEXT.Array("i", shape.consumers, lock=False)
    cpu = _CONTEXT.Array("d", shape.consumers, lock=False)
    progress = _CONTEXT.Array("q", shape.partitions, lock=False)
    go, stop = _CONTEXT.Event(), _CONTEXT.Event()
    group = f"bench-many-{uuid.uuid4().hex[:6]}"
    workers = [_CONTEXT.Process(target=_consume_worker,
                                args=(bootstrap, topic, group, i, assigned, progress, cpu, go, stop))
               for i in range(shape.consumers)]
    started = time.monotonic()
    for worker in workers:
        worker.start()
    try:
        _wait_for_group(assigned, shape.partitions, started + 180)
        ready = time.monotonic() - started
        expected = shape.records + shape.extra_records
        broker_cpu = process_cpu_seconds(broker_pid)
        go.set()
        began = time.monotonic()
        deadline = began + 300
        while sum(progress) < expected:
            if time.monotonic() > deadline:
                raise click.ClickException(f"consume from {bootstrap}: {sum(progress)} of {expected} in 300 s")
            time.sleep(0.005)
        seconds = time.monotonic() - began
        cpu_seconds = sum(cpu)
        broker_cores = (process_cpu_seconds(broker_pid) - broker_cpu) / seconds
    finally:
        stop.set()
        for worker in workers:
            worker.join(60)
            if worker.is_alive():
                worker.kill()
    return seconds, ready, cpu_seconds, broker_cores


def measure_many(bootstrap: str, broker_pid: int, shape: ManyShape) -> ManyResult:
    topic = _create_topic(bootstrap, shape.partitions)
    produce_s, produce_cpu, broker_produce, loaded, timed = _produce(bootstrap, broker_pid, topic, shape)
    consume_s, ready_s, consume_cpu, broker_consume = _consume(bootstrap, broker_pid, topic, shape)
    megabytes = shape.size * shape.records / 1e6
    consumed = shape.records + shape.extra_records
    return ManyResult(
        megabytes / produce_s, shape.records / produce_s, shape.size * consumed / 1e6 / consume_s,
        consumed / consume_s, ready_s, produce_cpu / produce_s, consume_cpu / consume_s, broker_produce,
        broker_consume,
        _percentile(loaded, 0.99), statistics.median(timed) * 1000, _percentile(timed, 0.99),
    )


def many_table(case: str, ours: ManyResult, kafka: ManyResult) -> str:
    metrics: list[tuple[str, Callable[[ManyResult], float], str]] = [
        ("produce MB/s", lambda r: r.produce_mb, "{:.1f}"),
        ("produce records/s", lambda r: r.produce_rate, "{:,.0f}"),
        ("consume MB/s", lambda r: r.consume_mb, "{:.1f}"),
        ("consume records/s", lambda r: r.consume_rate, "{:,.0f}"),
        ("consumer group ready s (not in consume rate)", lambda r: r.group_ready_s, "{:.2f}"),
        (f"producers' CPU, cores of {os.cpu_count()}", lambda r: r.produce_client_cpu, "{:.2f}"),
        (f"consumers' CPU, cores of {os.cpu_count()}", lambda r: r.consume_client_cpu, "{:.2f}"),
        ("broker's CPU while producing, cores", lambda r: r.produce_broker_cpu, "{:.2f}"),
        ("broker's CPU while consuming, cores", lambda r: r.consume_broker_cpu, "{:.2f}"),
        ("produce latency p99 ms at full load", lambda r: r.loaded_p99_ms, "{:.1f}"),
        ("produce latency p50 ms at fixed rate", lambda r: r.p50_ms, "{:.2f}"),
        ("produce latency p99 ms at fixed rate", lambda r: r.p99_ms, "{:.2f}"),
    ]
    lines = ["| case | metric | ours | Kafka | ours/Kafka |", "|---|---|---:|---:|---:|"]
    for name, get, fmt in metrics:
        ratio = get(ours) / get(kafka) if get(kafka) else float("nan")
        lines.append(f"| {case} | {name} | {fmt.format(get(ours))} | {fmt.format(get(kafka))} | {ratio:.2f}x |")
    return "\n".join(lines)

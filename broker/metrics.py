"""Prometheus metrics of one broker, named as the Prometheus JMX exporter names Apache Kafka's MBeans.

Operators' dashboards and alerts for Kafka are written against the JMX exporter's names (`kafka.server:
type=ReplicaManager,name=UnderReplicatedPartitions` -> `kafka_server_replicamanager_underreplicatedpartitions`);
this broker serves the same names so they work unchanged. Meters become `_total` counters and the request
timers (Kafka's `TotalTimeMs` histograms in ms) one Prometheus histogram in seconds. Consumer-group lag is
not a Kafka MBean: it follows kafka_exporter's `kafka_consumergroup_lag` (label `group`).
The table of every family is in docs/broker.md#metrics.

State is read at scrape time from the event loop (the endpoint is served there), so a scrape sees the
partitions, ISRs and offsets as one consistent moment and needs no locks.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from broker.cluster.member import ClusterMember
from broker.protocol.errors import KafkaApiError
from broker.protocol.spliced import SplicedResponse

if TYPE_CHECKING:
    from broker.handlers.context import BrokerState

log = logging.getLogger(__name__)

# Request latencies of a broker run from well under a millisecond (metadata) to a fetch's max.wait.ms.
_LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


def request_name(api_name: str, body: Any) -> str:
    """Kafka's `request` tag: the API's name in PascalCase; Fetch splits into FetchConsumer/FetchFollower
    as in `kafka.network:type=RequestMetrics,name=RequestsPerSec,request=...` (Kafka's RequestChannel)."""
    name = "".join(part.capitalize() for part in api_name.split("_"))
    if name == "Fetch":
        state = getattr(body, "replica_state", None)
        replica = int(state.replica_id) if state is not None else int(getattr(body, "replica_id", -1))
        return "FetchFollower" if replica >= 0 else "FetchConsumer"
    return name


def _records_size(records: Any) -> int:
    """Bytes of a request's or response's `records` field: bytes, or the fetch path's chunks/file ranges."""
    if records is None:
        return 0
    if isinstance(records, bytes | bytearray | memoryview):
        return len(records)
    if isinstance(records, tuple | list):
        return sum(_records_size(chunk) for chunk in records)
    return int(getattr(records, "size", 0))


class BrokerMetrics:
    """Counters fed by the request path (`observe_request`) plus gauges computed from `BrokerState` per scrape."""

    def __init__(self, state: BrokerState) -> None:
        self.state = state
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "kafka_network_requestmetrics_requests", "Requests handled, per API (Kafka's RequestsPerSec)",
            ["request"], registry=self.registry)
        self.request_time = Histogram(
            "kafka_network_requestmetrics_totaltime_seconds",
            "Time from a request's arrival to its response being ready, per API (Kafka's TotalTimeMs)",
            ["request"], buckets=_LATENCY_BUCKETS, registry=self.registry)
        self.bytes_in = Counter(
            "kafka_server_brokertopicmetrics_bytesin",
            "Record bytes produced to this broker, per topic (BytesInPerSec)",
            ["topic"], registry=self.registry)
        self.bytes_out = Counter(
            "kafka_server_brokertopicmetrics_bytesout",
            "Record bytes fetched from this broker, per topic (BytesOutPerSec)",
            ["topic"], registry=self.registry)
        self.isr_shrinks = Counter(
            "kafka_server_replicamanager_isrshrinks",
            "ISR shrinks of partitions this broker leads (IsrShrinksPerSec)",
            registry=self.registry)
        self.isr_expands = Counter(
            "kafka_server_replicamanager_isrexpands",
            "ISR expansions of partitions this broker leads (IsrExpandsPerSec)",
            registry=self.registry)
        self.registry.register(_StateCollector(state))

    def observe_request(self, api_name: str, request: Any, response: Any, seconds: float) -> None:
        """Count one handled request: rate and latency per API, record bytes per topic for Produce/Fetch."""
        name = request_name(api_name, request)
        self.requests.labels(name).inc()
        self.request_time.labels(name).observe(seconds)
        if name == "Produce":
            for topic in getattr(request, "topic_data", ()):
                size = sum(_records_size(p.records) for p in topic.partition_data)
                self.bytes_in.labels(topic.name).inc(size)
        elif name == "FetchConsumer" and response is not None:  # Kafka leaves replication out of BytesOut too
            spliced = isinstance(response, SplicedResponse)  # records sent from files: tokens in the response
            sizes = {insert.token: insert.size for insert in response.inserts} if spliced else {}
            for topic in getattr(response.response if spliced else response, "responses", ()):
                size = sum(sizes.get(p.records, 0) if spliced and isinstance(p.records, bytes)
                           else _records_size(p.records) for p in topic.partitions)
                if size:
                    self.bytes_out.labels(self._topic_name(topic)).inc(size)

    def on_isr_change(self, old: tuple[int, ...], new: tuple[int, ...]) -> None:
        """Kafka's Partition.maybeShrinkIsr/maybeExpandIsr count one per applied change, not per replica."""
        if set(new) < set(old):
            self.isr_shrinks.inc()
        elif set(new) > set(old):
            self.isr_expands.inc()

    def _topic_name(self, topic: Any) -> str:
        name = getattr(topic, "topic", None)
        if name:
            return str(name)
        found = self.state.topics.by_id(topic.topic_id)  # Fetch v13+ names topics by id
        return found.name if found is not None else str(topic.topic_id)

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


class _StateCollector(Collector):
    """Gauges read from the broker's state at scrape time."""

    def __init__(self, state: BrokerState) -> None:
        self.state = state

    def collect(self) -> Iterator[GaugeMetricFamily]:
        state = self.state
        cluster = state.role.node if isinstance(state.role, ClusterMember) else None
        under = GaugeMetricFamily("kafka_server_replicamanager_underreplicatedpartitions",
                                  "Partitions led here whose ISR is smaller than their replica set")
        under_min = GaugeMetricFamily("kafka_server_replicamanager_underminisrpartitioncount",
                                      "Partitions led here whose ISR is below min.insync.replicas")
        leaders = GaugeMetricFamily("kafka_server_replicamanager_leadercount", "Partitions this broker leads")
        partitions = GaugeMetricFamily("kafka_server_replicamanager_partitioncount",
                                       "Partitions with a replica on this broker")
        active = GaugeMetricFamily("kafka_controller_kafkacontroller_activecontrollercount",
                                   "1 on the active controller, 0 elsewhere (sums to 1 over a healthy cluster)")
        offline = GaugeMetricFamily("kafka_controller_kafkacontroller_offlinepartitionscount",
                                    "Partitions without a live leader (reported by the active controller)")
        size = GaugeMetricFamily("kafka_log_log_size", "Bytes of a partition's log on disk",
                                 labels=["topic", "partition"])
        end = GaugeMetricFamily("kafka_log_log_logendoffset", "A partition's log end offset",
                                labels=["topic", "partition"])
        start = GaugeMetricFamily("kafka_log_log_logstartoffset", "A partition's log start offset",
                                  labels=["topic", "partition"])
        lag = GaugeMetricFamily("kafka_consumergroup_lag",
                                "High watermark minus the group's committed offset (groups coordinated here)",
                                labels=["group", "topic", "partition"])
        if cluster is None:  # a single node leads every partition and is its own controller
            count = sum(t.partitions for t in state.topics.all())
            under.add_metric([], 0)
            under_min.add_metric([], 0)
            leaders.add_metric([], count)
            partitions.add_metric([], count)
            active.add_metric([], 1)
            offline.add_metric([], 0)
        else:
            led = list(cluster.replicas.leaders.values())
            under.add_metric([], sum(len(r.isr) < len(r.replicas) for r in led))
            under_min.add_metric([], sum(len(r.isr) < r.min_insync_replicas for r in led))
            leaders.add_metric([], len(led))
            partitions.add_metric([], len(state.partitions.open_logs()))
            is_active = cluster.active_controller() == cluster.node_id
            active.add_metric([], 1 if is_active else 0)
            offline.add_metric([], _offline_partitions(cluster) if is_active else 0)
        for (topic, partition), plog in state.partitions.open_logs():
            labels = [topic, str(partition)]
            segments = getattr(plog, "segments", None)  # the disk log; the in-memory test log has none
            if segments is not None:
                size.add_metric(labels, sum(segment.size for segment in segments))
            end.add_metric(labels, plog.log_end_offset)
            start.add_metric(labels, plog.log_start_offset)
        for group, topic, partition, value in self._lags():
            lag.add_metric([group, topic, str(partition)], value)
        yield from (under, under_min, leaders, partitions, active, offline, size, end, start, lag)

    def _lags(self) -> Iterator[tuple[str, str, int, int]]:
        state = self.state
        for group in state.offsets.groups():
            try:
                state.check_coordinator(group)
            except KafkaApiError:
                continue  # another broker coordinates it and reports its lag
            for topic_name, partition in state.offsets.partitions(group):
                committed = state.offsets.fetch(group, topic_name, partition)
                topic = state.topics.get(topic_name)
                if committed is None or topic is None or not 0 <= partition < topic.partitions:
                    continue
                if not state.partitions.is_open((topic_name, partition)):
                    continue
                plog = state.partitions.log(topic, partition)
                high_watermark = state.high_watermark(topic_name, partition, plog)
                yield group, topic_name, partition, max(0, high_watermark - committed.offset)


def _offline_partitions(cluster: Any) -> int:
    """Kafka's rule: a partition is offline when it has no leader or its leader is not a live broker."""
    fenced = {b.broker_id for b in cluster.meta.brokers.values() if b.fenced}
    return sum(
        part.leader < 0 or part.leader in fenced
        for info in list(cluster.meta.topics.values())
        for part in info.partitions
    )


class MetricsEndpoint:
    """GET /metrics on HOST:PORT, served on the broker's event loop (Prometheus text format 0.0.4)."""

    def __init__(self, metrics: BrokerMetrics, host: str, port: int) -> None:
        self.metrics, self.host, self.port = metrics, host, port
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        log.info("metrics endpoint listening", extra={"host": self.host, "port": self.port})

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2.0)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request_line = await asyncio.wait_for(reader.readline(), 5.0)
            while (await asyncio.wait_for(reader.readline(), 5.0)).strip():
                pass  # headers: nothing in them changes the answer
            parts = request_line.decode("latin-1").split()
            if len(parts) >= 2 and parts[0] == "GET" and parts[1].split("?")[0] == "/metrics":
                status, content_type, body = "200 OK", CONTENT_TYPE_LATEST, self.metrics.exposition()
            else:
                status, content_type, body = "404 Not Found", "text/plain", b"only GET /metrics is served here\n"
            writer.write(f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
                         "Connection: close\r\n\r\n".encode() + body)
            await writer.drain()
        except (TimeoutError, ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

"""The asyncio TCP server: one task per connection, requests handled in order, one at a time.

Kafka itself mutes a connection while one of its requests is in flight, so handling each
connection's requests sequentially gives "responses in request order" for free; concurrency comes from
many connections. Bad frames close only their own connection (after one WARNING line).

Memory: a request's bytes are reserved in the broker-wide `MemoryPool` (queued.max.request.bytes)
before its body is read and released once its response is built; while the pool is spent, connections
are not read (Kafka mutes their channels). Each connection's stream buffer is small (`_STREAM_LIMIT`),
so a muted or stalled connection holds little more than that.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from typing import Any

from kio.schema.errors import ErrorCode

from broker.cluster.member import ClusterMember
from broker.config import BrokerConfig
from broker.coordinator.groups import GroupCoordinator
from broker.coordinator.offsets import OffsetStore
from broker.coordinator.producers import ProducerIdAllocator
from broker.coordinator.transactions import TransactionCoordinator
from broker.core.single_node import SingleNode
from broker.core.transaction_effects import BrokerTxnEffects
from broker.handlers.api_versions import api_versions_response
from broker.handlers.context import BrokerState, Request
from broker.handlers.registry import HANDLERS
from broker.log_store import LogStore
from broker.metrics import BrokerMetrics, MetricsEndpoint
from broker.protocol.apis import API_VERSIONS_KEY, SUPPORTED
from broker.protocol.errors import FrameError
from broker.protocol.framing import (
    RequestReceived,
    UnsupportedRequest,
    decode_request,
    encode_response,
    frame_size,
)
from broker.protocol.memory_pool import MemoryPool
from broker.protocol.spliced import SplicedResponse, splice
from broker.security.layer import SecurityLayer, raw_token_size
from broker.security.listeners import CURRENT_LISTENER, ListenerSpec
from broker.security.session import Session
from broker.tasks import cancel_and_wait
from broker.topics import TopicRegistry
from broker.zero_copy import ResponseSender, supports_sendfile

log = logging.getLogger("broker.server")
_READ_SIZE = 256 * 1024
# asyncio stops reading a socket once its StreamReader holds 2 * limit bytes not yet consumed.
_STREAM_LIMIT = 64 * 1024
_EXPIRY_INTERVAL = 0.5


def build_state(config: BrokerConfig, store: LogStore) -> BrokerState:
    data_dir = config.data_dir
    data_dir.mkdir(parents=True, exist_ok=True)
    state = BrokerState(
        config=config,
        topics=TopicRegistry(data_dir / "topics.json"),
        store=store,
        groups=GroupCoordinator(
            initial_rebalance_delay_ms=config.int("group.initial.rebalance.delay.ms"),
            min_session_timeout_ms=config.int("group.min.session.timeout.ms"),
            max_session_timeout_ms=config.int("group.max.session.timeout.ms"),
        ),
        offsets=OffsetStore(),
        producer_ids=ProducerIdAllocator(data_dir / "producer-id-block"),
    )
    state.role = SingleNode(state)  # a cluster member's CLI replaces it with a ClusterMember
    state.transactions = TransactionCoordinator(BrokerTxnEffects(state), config.int("transaction.max.timeout.ms"))
    state.offsets.journal = state.write_offsets
    state.groups.store.journal = state.write_group
    # Before the listener opens (as Kafka's LogManager starts before its SocketServer): recovery runs in a
    # thread pool while nothing is served yet.
    started = time.monotonic()
    partitions = state.load_logs()
    log.info("partition logs loaded", extra={"partitions": partitions,
                                              "seconds": round(time.monotonic() - started, 3)})
    replayed = state.load_transactions()
    if replayed:
        log.info("transaction state loaded",
                 extra={"records": replayed, "transactional_ids": len(state.transactions.all())})
    loaded = state.load_offsets()
    if loaded:
        log.info("committed offsets loaded", extra={"records": loaded, "groups": len(state.offsets.groups())})
    return state


class BrokerServer:
    def __init__(self, config: BrokerConfig, store: LogStore) -> None:
        self.config = config
        self.state = build_state(config, store)
        self.security = SecurityLayer(config)
        self._servers: list[asyncio.Server] = []
        self._tasks: set[asyncio.Task[Any]] = set()
        self._max_request_bytes = config.int("socket.request.max.bytes")
        self.memory = MemoryPool(config.int("queued.max.request.bytes"))
        self.metrics = BrokerMetrics(self.state)
        metrics_port = config.int("metrics.port")
        self.metrics_endpoint = (
            MetricsEndpoint(self.metrics, config.listener.host, metrics_port) if metrics_port >= 0 else None
        )

    async def start(self) -> None:
        if isinstance(self.state.role, ClusterMember):
            self.state.role.replicas.isr_listener = self.metrics.on_isr_change
        if self.metrics_endpoint is not None:
            await self.metrics_endpoint.start()
        for spec in self.security.listeners:
            self._servers.append(await asyncio.start_server(
                functools.partial(self._serve_connection, spec), spec.host, spec.port, limit=_STREAM_LIMIT,
                ssl=self.security.ssl_context(spec),
            ))
            log.info("listening", extra={"listener": spec.name, "protocol": spec.protocol, "host": spec.host,
                                         "port": spec.port})
        self._tasks.add(asyncio.create_task(self._expire_sessions()))
        self._tasks.add(asyncio.create_task(self._maintain_logs()))
        self._tasks.add(asyncio.create_task(self._finish_transactions()))

    async def close(self) -> None:
        for server in self._servers:
            server.close()
        if self.metrics_endpoint is not None:
            await self.metrics_endpoint.close()
        await cancel_and_wait(list(self._tasks), 5.0, "broker shutdown")
        self.state.store.close()
        log.info("stopped")

    async def _maintain_logs(self) -> None:
        # In a worker thread: compaction reads and rewrites whole segments. Each log's lock keeps
        # retention and segment swaps atomic with respect to appends on the event loop.
        interval = self.config.int("log.retention.check.interval.ms") / 1000
        while True:
            await asyncio.sleep(interval)
            try:
                await asyncio.to_thread(self.state.store.maintain)
            except Exception:
                log.exception("log maintenance failed; retrying at the next interval")

    async def _finish_transactions(self) -> None:
        """Abort transactions past their timeout and retry the markers of prepared ones (after a failed
        write, or on a coordinator that took over), every
        transaction.abort.timed.out.transaction.cleanup.interval.ms (prepared ones every second)."""
        interval = self.config.int("transaction.abort.timed.out.transaction.cleanup.interval.ms") / 1000
        next_timeout_check = time.monotonic() + interval
        while True:
            await asyncio.sleep(min(interval, 1.0))
            try:
                await self.state.transactions.complete_prepared()
                if time.monotonic() >= next_timeout_check:
                    next_timeout_check = time.monotonic() + interval
                    await self.state.transactions.abort_expired()
            except Exception:
                log.exception("finishing transactions failed; retrying")

    async def _expire_sessions(self) -> None:
        while True:
            await asyncio.sleep(_EXPIRY_INTERVAL)
            for member in self.state.groups.expire_sessions():
                log.info("group member session expired", extra={"member": member})

    async def _serve_connection(
        self, spec: ListenerSpec, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        peer = writer.get_extra_info("peername") or ("?", 0)
        # Each connection runs in its own task, hence its own context: handlers answer with this listener's
        # advertised address (broker/handlers/_placement.py).
        CURRENT_LISTENER.set(spec.name)
        session = self.security.open_session(spec, peer[0], writer.get_extra_info("ssl_object"))
        # Fetch data by sendfile if the transport can (plain TCP)
        responses = ResponseSender(writer, supports_sendfile(writer))
        try:
            while True:
                size = await self._read_size(reader, session.raw_tokens)
                if size is None:
                    break
                await self.memory.reserve(size)
                try:
                    frame = await _read_exactly(reader, size)
                    response: list[Any] | None
                    if session.raw_tokens:  # SASL tokens after SaslHandshake v0: not Kafka requests
                        token = self.security.raw_token(session, frame)
                        response = None if token is None else [token]
                    else:
                        response = await self._respond(decode_request(frame), session)
                finally:
                    self.memory.release(size)
                if response is not None:
                    await responses.send(response)
        except FrameError as exc:
            log.warning("closing the connection from %s:%s: %s", peer[0], peer[1], exc)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        except asyncio.CancelledError:
            # Only the server's close() cancels connections; say so, so a closed connection is never silent.
            log.info("connection cancelled", extra={"peer": f"{peer[0]}:{peer[1]}"})
        except Exception:
            log.exception("closing connection after an internal error", extra={"peer": f"{peer[0]}:{peer[1]}"})
        finally:
            responses.flush()
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()
            if task is not None:
                self._tasks.discard(task)

    async def _read_size(self, reader: asyncio.StreamReader, raw_token: bool = False) -> int | None:
        """The next frame's size, or None when the client closed the connection between requests.
        A raw SASL token (after SaslHandshake v0) may be shorter than any request header."""
        try:
            prefix = await reader.readexactly(4)
        except asyncio.IncompleteReadError as exc:
            if exc.partial:
                raise
            return None
        if raw_token:
            return raw_token_size(prefix, self._max_request_bytes)
        return frame_size(prefix, self._max_request_bytes)

    async def _respond(self, event: RequestReceived | UnsupportedRequest, session: Session) -> list[Any] | None:
        """The response frame as parts: bytes, and file ranges where a handler sends data from segments."""
        header = event.header
        if isinstance(event, UnsupportedRequest):
            if header.api_key == API_VERSIONS_KEY:
                # Clients probe with their newest ApiVersions; answer v0 so they can pick a version.
                return [encode_response(header.correlation_id,
                                        api_versions_response(0, ErrorCode.unsupported_version))]
            raise _Unsupported(
                f"api key {header.api_key} v{header.api_version} from client {header.client_id!r} is not supported"
            )
        request = Request(header, event.body, session.client_host)
        started = time.perf_counter()
        response = await self.security.respond(self.state, session, request, HANDLERS.get(header.api_key))
        self.metrics.observe_request(SUPPORTED[header.api_key].name, event.body, response,
                                     time.perf_counter() - started)
        if response is None:
            return None
        if isinstance(response, SplicedResponse):
            return splice(encode_response(header.correlation_id, response.response), response.inserts)
        return [encode_response(header.correlation_id, response)]


async def _read_exactly(reader: asyncio.StreamReader, size: int) -> bytes:
    # Chunks, not readexactly(size): that would let the StreamReader buffer the whole frame and then copy it.
    chunks: list[bytes] = []
    remaining = size
    while remaining:
        chunk = await reader.read(min(remaining, _READ_SIZE))
        if not chunk:
            raise asyncio.IncompleteReadError(b"".join(chunks), size)
        chunks.append(chunk)
        remaining -= len(chunk)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


class _Unsupported(FrameError):
    pass

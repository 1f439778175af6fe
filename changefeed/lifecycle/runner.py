"""A running changefeed, as the owner loop sees it, and the adapter that runs one in a thread.

The owner only needs `FeedRunner`: start, stop within a second, the acknowledged checkpoint, stats,
the error that ended it, and whether its target was reached. `PipelineRunner` wires capture ->
delivery -> Kafka sink behind that interface; another runner (e.g. a reusable one from the sink
work) plugs in by implementing the same Protocol.
"""

from __future__ import annotations

import logging
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Protocol

from changefeed.codec.canal_json import CanalJsonEncoder, CanalJsonOptions
from changefeed.config import ChangefeedConfig
from changefeed.delivery import Delivery
from changefeed.dispatch.router import Router
from changefeed.errors import SourceConnectionError
from changefeed.lifecycle.source_uri import parse_source_uri
from changefeed.model import CaptureEvent, Checkpoint, RowChange, TransactionCommit
from changefeed.source.capture import CaptureOptions, CaptureSource
from sink.claim_check import FileClaimCheckStorage
from sink.kafka import KafkaSink, prepare_topic
from sink.uri import KafkaSinkConfig, parse_sink_uri

log = logging.getLogger(__name__)


class FeedRunner(Protocol):
    def start(self) -> None: ...

    def stop(self, timeout: float = 1.0) -> None:
        """Cancel everything (capture, retries, producer); returns within about `timeout` seconds."""
        ...

    @property
    def checkpoint(self) -> Checkpoint | None: ...

    @property
    def error(self) -> BaseException | None: ...

    @property
    def finished(self) -> bool: ...

    @property
    def ready_since(self) -> float | None:
        """Monotonic time at which source and sink were both reached (None: still setting up)."""
        ...

    def stats(self) -> dict[str, dict[str, int]]:
        """Cumulative {"schema.table": {"rows": n, "bytes": n}} since start."""
        ...


@dataclass(frozen=True)
class RunSpec:
    changefeed_id: str
    source: str
    sink_uri: str
    config: ChangefeedConfig
    start: Checkpoint
    target_ts: int | None
    metadata_url: str  # schema history lives beside the changefeed's other metadata
    delivery_timeout_ms: int = 30_000


class _Partitions(dict[str, int]):
    """Topic -> partition count; topics from `{schema}`/`{table}` expressions are checked on first use."""

    def __init__(self, config: KafkaSinkConfig) -> None:
        super().__init__()
        self.config = config
        self.limit = config.max_message_bytes

    def __missing__(self, topic: str) -> int:
        info = prepare_topic(self.config, topic)
        self[topic] = info.partitions
        self.limit = min(self.limit, info.max_message_bytes)
        return info.partitions


class PipelineRunner:
    def __init__(self, spec: RunSpec) -> None:
        self.spec = spec
        self._cancel = threading.Event()  # the owner stopped us: pause, remove, lease lost
        self._stop = threading.Event()  # ends capture: on cancel, or on the first failed delivery
        self._error: BaseException | None = None
        self._finished = False
        self._ready_since: float | None = None
        self._delivery: Delivery | None = None
        self._sink: KafkaSink | None = None
        self._tables: dict[str, dict[str, int]] = {}
        self._thread = threading.Thread(target=self._run, name=f"changefeed-{spec.changefeed_id}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 1.0) -> None:
        self._cancel.set()
        self._stop.set()
        if self._sink is not None:
            self._sink.close()  # purges in-flight messages and wakes a blocked send
        self._thread.join(timeout)

    @property
    def checkpoint(self) -> Checkpoint | None:
        return None if self._delivery is None else self._delivery.checkpoint

    @property
    def error(self) -> BaseException | None:
        if self._error is not None:
            return self._error
        if self._delivery is not None and self._delivery.tracker.error is not None:
            return self._delivery.tracker.error
        if self._thread.ident is not None and not self._thread.is_alive() and not self._finished \
                and not self._cancel.is_set():
            return SourceConnectionError("the capture ended without an error; restarting from the checkpoint")
        return None

    @property
    def finished(self) -> bool:
        return self._finished and self._delivery is not None and self._delivery.tracker.in_flight == 0

    @property
    def ready_since(self) -> float | None:
        return self._ready_since

    def stats(self) -> dict[str, dict[str, int]]:
        return {table: dict(values) for table, values in self._tables.items()}

    def _run(self) -> None:
        spec = self.spec
        source: CaptureSource | None = None
        try:
            settings = parse_source_uri(spec.source)
            sink_config = parse_sink_uri(spec.sink_uri)
            partitions = _Partitions(sink_config)
            partitions[sink_config.topic]  # checks (and creates) the default topic now
            sink = KafkaSink(sink_config, message_limit=partitions.limit, memory_quota=spec.config.memory_quota,
                             delivery_timeout_ms=spec.delivery_timeout_ms)
            self._sink = sink
            if self._stop.is_set():
                sink.close()
                return
            options = spec.config.sink
            # The YAML's large-message policy wins over the sink URI's large-message-handle-option.
            policy = options.large_message_handle if options.large_message_handle != "none" \
                else sink_config.large_message_handle
            storage = options.claim_check_storage_uri or sink_config.claim_check_storage_uri
            self._delivery = Delivery(
                sink, CanalJsonEncoder(CanalJsonOptions(
                    enable_tidb_extension=options.enable_tidb_extension or sink_config.enable_tidb_extension,
                    content_compatible=sink_config.content_compatible)),
                Router(sink_config.topic, options.dispatchers), partitions, message_limit=partitions.limit,
                start=spec.start, output_raw_change_event=options.output_raw_change_event,
                large_message_handle=policy,
                claim_check=FileClaimCheckStorage(storage) if policy == "claim-check" and storage else None,
                on_failure=self._stop.set)
            source = CaptureSource(settings, CaptureOptions(
                server_id=1_000_000 + zlib.crc32(spec.changefeed_id.encode()) % 1_000_000_000,
                snapshot_mode=spec.config.snapshot_mode, change_filter=spec.config.change_filter(),
                schema_store_url=spec.metadata_url, changefeed_id=spec.changefeed_id,
            ), start=spec.start, stop=self._stop)
            log.info("changefeed %s: running from %s", spec.changefeed_id, spec.start.position)
            self._ready_since = time.monotonic()
            self._delivery.run(self._counted(source.events()))
            if not self._cancel.is_set() and self._delivery.tracker.error is None:
                sink.flush(30)
                if spec.target_ts is not None and self._delivery.tracker.error is None:
                    self._finished = True
                    log.info("changefeed %s: target reached", spec.changefeed_id)
        except BaseException as exc:  # reported to the owner, which decides warning or failed
            if not self._cancel.is_set():
                log.warning("changefeed %s: stopped by error: %s", spec.changefeed_id, exc)
                self._error = exc
        finally:
            if source is not None:
                source.close()

    def _counted(self, events: Iterable[CaptureEvent]) -> Iterator[CaptureEvent]:
        """Count rows and encoded bytes per table; stop at the target commit timestamp."""
        assert self._delivery is not None
        delivery = self._delivery
        last_table: str | None = None
        last_bytes = 0
        for event in events:
            if last_table is not None:
                entry = self._tables.setdefault(last_table, {"rows": 0, "bytes": 0})
                entry["rows"] += 1
                entry["bytes"] += delivery.stats.bytes - last_bytes
                last_table = None
            if isinstance(event, RowChange):
                last_table, last_bytes = str(event.table.name), delivery.stats.bytes
            yield event
            if (isinstance(event, TransactionCommit) and self.spec.target_ts is not None
                    and event.checkpoint.commit_ts >= self.spec.target_ts):
                return


RunnerFactory = Callable[[RunSpec], FeedRunner]


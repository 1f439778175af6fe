"""Experiment: does moving binlog decoding + canal-JSON encoding into a second process pay on 2 cores?

    .venv/bin/python bench/changefeed_split.py [--rows 30000] [--table sysbench] [--rounds 2]

Same binlog slice, alternating rounds, side by side:
- one process: the changefeed runner (capture -> encode -> batched delivery, one Python process)
- split after encoding: a spawned child runs CaptureSource + router + canal-JSON encoder and hands one
  batch per transaction (message tuples + the commit's checkpoint) over a bounded multiprocessing queue,
  in order; this process builds MessageBatches, sends them through KafkaSink and tracks acknowledgements.
The split after capture, which the runner adopted, is measured by bench/changefeed.py in the runner itself.
The split is measured twice: from the start (including the child's spawn and imports, paid on every
attempt) and from the first batch received (streaming rate). CPU per row for the parent alone shows
how much of the work moved. Not part of the runner: docs/benchmarks.md says why.
"""

from __future__ import annotations

import importlib.util
import multiprocessing as mp
import sys
import tempfile
import time
import uuid
from multiprocessing.queues import Queue
from pathlib import Path
from typing import Any

import click

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from changefeed.ack_tracker import MessageAckTracker
from changefeed.codec.canal_json import CanalJsonEncoder, split_key_changing_update
from changefeed.dispatch.router import Router
from changefeed.model import Checkpoint, Position, RowChange, TransactionCommit
from changefeed.source.capture import CaptureSource, start_position
from changefeed.source.server import ConnectionSettings
from sink.base import BatchCallback
from sink.errors import SinkError
from sink.kafka import KafkaSink, prepare_topic
from sink.message import Message, MessageBatch
from sink.uri import parse_sink_uri

_spec = importlib.util.spec_from_file_location("bench_changefeed", Path(__file__).with_name("changefeed.py"))
assert _spec is not None and _spec.loader is not None
bench = importlib.util.module_from_spec(_spec)
sys.modules["bench_changefeed"] = bench
_spec.loader.exec_module(bench)

Encoded = tuple[str, int, bytes | None, bytes]
Item = tuple[list[Encoded], Checkpoint] | None


class _Encode:
    """Route and encode row changes into (topic, partition, key, value), in the child."""

    def __init__(self, topic: str) -> None:
        self.encoder, self.router, self.partitions = CanalJsonEncoder(), Router(topic), {topic: 3}

    def __call__(self, event: RowChange) -> list[Encoded]:
        out = []
        for change in split_key_changing_update(event):
            to, partition = self.router.route(change, self.partitions)
            encoded = self.encoder.encode_row(change)
            out.append((to, partition, encoded.key, encoded.value))
        return out


def _child(settings: ConnectionSettings, start: Checkpoint, topic: str, queue: Queue[Item]) -> None:
    """Capture, route and encode, one queue item per transaction."""
    source = CaptureSource(settings, bench._options(False), start=start)
    encoder = _Encode(topic)
    pending: list[Encoded] = []
    for event in source.events():
        if isinstance(event, RowChange):
            pending.extend(encoder(event))
        elif isinstance(event, TransactionCommit):
            queue.put((pending, event.checkpoint))
            pending = []
    queue.put(None)
    source.close()


def _on_ack(tracker: MessageAckTracker, seq: int) -> BatchCallback:
    def done(error: SinkError | None) -> None:
        if error is None:
            tracker.acked(seq)
        else:
            tracker.failed(error)

    return done


def _split(settings: ConnectionSettings, broker: Any, start: Checkpoint) -> tuple[int, float, float, float]:
    """(rows, seconds from start, seconds from the first batch, parent CPU us/row)."""
    topic = f"split-{uuid.uuid4().hex[:6]}"
    config = parse_sink_uri(broker.uri(topic, partition_num=3))
    info = prepare_topic(config)
    sink = KafkaSink(config, message_limit=info.max_message_bytes)
    tracker = MessageAckTracker()
    context = mp.get_context("spawn")  # never fork a process that runs librdkafka threads
    queue: Queue[Item] = context.Queue(maxsize=64)  # bounded: the child waits when delivery is behind
    began = time.perf_counter()
    child = context.Process(target=_child, args=(settings, start, topic, queue), daemon=True)
    child.start()
    rows, first, cpu = 0, 0.0, 0.0
    while (item := queue.get(timeout=600)) is not None:
        if not first:
            first, cpu = time.perf_counter(), time.process_time()
        messages, checkpoint = item
        if messages:
            seq = tracker.sent()
            batch = MessageBatch.of([Message(t, p, k, v) for t, p, k, v in messages])
            sink.send_batch(batch, _on_ack(tracker, seq))
            rows += len(messages)
        tracker.transaction_done(checkpoint)
    while sink.flush(0.1) > 0:
        pass
    end = time.perf_counter()
    cpu = time.process_time() - cpu
    sink.close()
    child.join(10)
    if tracker.error is not None or tracker.in_flight:
        raise SystemExit(f"split run lost acknowledgements: {tracker.error}")
    return rows, end - began, end - first, cpu / rows * 1e6


@click.command()
@click.option("--rows", default=30_000, show_default=True)
@click.option("--table", type=click.Choice(sorted(bench.TABLES)), default="sysbench", show_default=True)
@click.option("--rounds", default=2, show_default=True)
def main(rows: int, table: str, rounds: int) -> None:
    with bench.mysql_server() as mysql, tempfile.TemporaryDirectory() as tmp:
        broker = bench.OwnBroker(Path(tmp))
        broker.start()
        try:
            settings = ConnectionSettings(mysql.host, mysql.port, mysql.user, mysql.password, tls=False)
            mysql.execute(f"DROP DATABASE IF EXISTS {bench.DATABASE}", f"CREATE DATABASE {bench.DATABASE}")
            chosen = bench.TABLES[table]
            mysql.execute(chosen.create, database=bench.DATABASE)
            start = Checkpoint(start_position(settings), 0)
            bench._load(mysql, chosen, 0, rows)
            target: Position = start_position(settings)
            print(f"{rows} rows, table {chosen.name}; rows/s (CPU us/row)")
            for _ in range(rounds):
                delivered, timing, _rss = bench._end_to_end(settings, broker, start, target, None,
                                                            capture_process=False)
                print(f"one process: {delivered / timing.wall_s:8.0f} rows/s ({timing.cpu_s / delivered * 1e6:.1f})")
                count, total_s, stream_s, parent_cpu = _split(settings, broker, start)
                print(f"split after encoding: {count / total_s:8.0f} rows/s from start, {count / stream_s:8.0f} from "
                      f"the first batch (parent alone {parent_cpu:.1f})", flush=True)
        finally:
            broker.stop()


if __name__ == "__main__":
    main()

"""franz-go's transactions against our broker and against Apache Kafka 4.3 (the reference): the same Go
program (tests/broker/franz_txn, built here with the machine's Go from the module cache scripts/setup.sh
filled) must pass against both.

Its session mode is kgo.GroupTransactSession's consume-transform-produce: every input record becomes exactly
one committed output record although every other transaction is aborted (the aborted output stays in the log,
invisible to read_committed, and the aborted input offsets are consumed again), and the group's committed
offsets end at the input's end. Its client mode is a plain kgo.Client's BeginTransaction/EndTransaction.
"""

from __future__ import annotations

import json
import subprocess
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.broker import go_clients
from tests.broker.conftest import Target

PROGRAM_DIR = Path(__file__).parent / "franz_txn"
pytestmark = pytest.mark.integration

INPUT_RECORDS = 2000
PARTITIONS = 3


@pytest.fixture(scope="session")
def franz_txn(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return go_clients.build(tmp_path_factory, PROGRAM_DIR)


def _topic(target: Target, partitions: int) -> str:
    name = f"fz-{uuid.uuid4().hex[:10]}"
    admin = AdminClient({"bootstrap.servers": target.bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(20)
    return name


def _run(franz_txn: Path, target: Target, *args: str, timeout: float = 150, exit_code: int = 0) -> dict[str, Any]:
    """Runs the program to its end (it gives up by itself after `timeout`); its JSON summary."""
    command = [str(franz_txn), "-brokers", target.bootstrap, "-timeout", f"{int(timeout)}s", *args]
    started = time.monotonic()
    result = subprocess.run(command, capture_output=True, text=True, timeout=timeout + 30)
    assert result.returncode == exit_code, (f"{target.name}: franz_txn exited {result.returncode} after "
                                    f"{time.monotonic() - started:.1f} s\n{result.stderr[-12000:]}"
                                    f"{target.log_tail()}")
    summary: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return summary


def _read(target: Target, topic: str, isolation: str, at_least: int, quiet: float = 2.0) -> list[Any]:
    """Every message a consumer of `isolation` reads from the start: at least `at_least`, then until `quiet`
    seconds pass without one (so duplicates would show), within 60 s."""
    consumer = Consumer({"bootstrap.servers": target.bootstrap, "group.id": f"r-{uuid.uuid4().hex[:8]}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "isolation.level": isolation})
    consumer.subscribe([topic])
    messages: list[Any] = []
    deadline = time.monotonic() + 60
    quiet_until = deadline
    try:
        while time.monotonic() < min(deadline, quiet_until):
            batch = consumer.consume(500, 0.3)
            for message in batch:
                assert message.error() is None, message.error()
                messages.append(message)
            if batch or len(messages) < at_least:
                quiet_until = time.monotonic() + quiet if len(messages) >= at_least else deadline
    finally:
        consumer.close()
    return messages


def _input(target: Target, count: int) -> tuple[str, dict[str, str]]:
    """An input topic of PARTITIONS partitions with `count` keyed records; its values -> keys."""
    source = _topic(target, PARTITIONS)
    producer = Producer({"bootstrap.servers": target.bootstrap, "linger.ms": 5})
    inputs = {f"v-{index}": f"k-{index % 97}" for index in range(count)}
    for value, key in inputs.items():
        producer.produce(source, key=key.encode(), value=value.encode())
    assert producer.flush(30) == 0
    return source, inputs


def _assert_exactly_once(target: Target, source: str, sink: str, group: str, inputs: dict[str, str],
                         aborted_records: int) -> None:
    """read_committed sees one output per input, read_uncommitted the aborted ones too, and the group's committed
    offsets are the input's end offsets."""
    committed = _read(target, sink, "read_committed", len(inputs))
    values = Counter(m.value().decode() for m in committed)
    duplicates = {value: n for value, n in values.items() if n > 1}
    assert not duplicates, f"{target.name}: {len(duplicates)} duplicated outputs {list(duplicates.items())[:10]}"
    assert set(values) == {f"out:{value}" for value in inputs}, (
        f"{target.name}: {len(values)} distinct outputs of {len(inputs)}; missing "
        f"{sorted({f'out:{value}' for value in inputs} - set(values))[:10]}, unexpected "
        f"{sorted(set(values) - {f'out:{value}' for value in inputs})[:10]}")
    assert all(m.key().decode() == inputs[m.value().decode()[4:]] for m in committed), target.name

    everything = _read(target, sink, "read_uncommitted", len(inputs) + aborted_records)
    assert len(everything) >= len(inputs) + aborted_records, (target.name, len(everything), aborted_records)
    assert {m.value().decode() for m in everything} == set(values), target.name

    consumer = Consumer({"bootstrap.servers": target.bootstrap, "group.id": group, "enable.auto.commit": False,
                         "isolation.level": "read_committed"})
    try:
        partitions = [TopicPartition(source, p) for p in range(PARTITIONS)]
        offsets = {tp.partition: tp.offset for tp in consumer.committed(partitions, timeout=20)}
        ends = {p: consumer.get_watermark_offsets(TopicPartition(source, p), timeout=10, cached=False)[1]
                for p in range(PARTITIONS)}
    finally:
        consumer.close()
    assert sum(ends.values()) == len(inputs)
    assert offsets == ends, f"{target.name}: the group's committed offsets are the input's end offsets"


def test_group_transact_session_is_exactly_once_with_every_other_transaction_aborted(
        target: Target, franz_txn: Path) -> None:
    source, inputs = _input(target, INPUT_RECORDS)
    sink = _topic(target, PARTITIONS)
    group, transactional_id = f"g-{uuid.uuid4().hex[:8]}", f"fz-{uuid.uuid4().hex[:8]}"
    summary = _run(franz_txn, target, "-mode", "session", "-input", source, "-output", sink, "-group", group,
                   "-txn-id", transactional_id, "-expected", str(INPUT_RECORDS), "-batch", "100",
                   "-abort-every-other")
    assert summary["committed"] == INPUT_RECORDS, summary
    assert summary["aborted_batches"] >= 1 and summary["reconsumed_aborted"] == summary["aborted_distinct"], summary
    _assert_exactly_once(target, source, sink, group, inputs, summary["aborted_records"])


def test_a_crash_with_offsets_pending_in_the_transaction_then_a_restart_is_exactly_once(
        target: Target, franz_txn: Path) -> None:
    """The first instance dies right after its TxnOffsetCommit: the group's offsets stay pending in its open
    transaction, so the restarted instance's OffsetFetch (require_stable) answers UNSTABLE_OFFSET_COMMIT until the
    coordinator aborts the transaction at its timeout; the restart (same transactional id) then gets a new epoch
    and consumes again from the offsets the last committed transaction left."""
    source, inputs = _input(target, 1000)
    sink, group = _topic(target, PARTITIONS), f"g-{uuid.uuid4().hex[:8]}"
    args = ("-mode", "session", "-input", source, "-output", sink, "-group", group,
            "-txn-id", f"fz-{uuid.uuid4().hex[:8]}", "-batch", "100", "-abort-every-other", "-session-timeout", "6s",
            "-txn-timeout", "5s")
    first = _run(franz_txn, target, *args, "-expected", "1000", "-crash-after", "3", "-crash-at", "offsets",
                 exit_code=3)
    assert first["committed_batches"] == 3 and 0 < first["committed"] < 1000, first
    second = _run(franz_txn, target, *args, "-expected", str(1000 - first["committed"]))
    assert second["committed"] == 1000 - first["committed"], second
    # the crashed transaction's output is aborted (at least one record of it reached the log)
    _assert_exactly_once(target, source, sink, group, inputs,
                         first["aborted_records"] + second["aborted_records"] + 1)


def test_kgo_client_transactions_commit_and_abort(target: Target, franz_txn: Path) -> None:
    sink = _topic(target, PARTITIONS)
    summary = _run(franz_txn, target, "-mode", "client", "-output", sink, "-txn-id", f"fz-{uuid.uuid4().hex[:8]}",
                   "-expected", "500", "-batch", "50", "-abort-every-other")
    assert summary["committed"] == 500 and summary["aborted_batches"] >= 9, summary
    committed = sorted(m.value().decode() for m in _read(target, sink, "read_committed", 500))
    assert committed == sorted(f"rec-{index}" for index in range(500)), target.name
    everything = [m.value().decode() for m in _read(target, sink, "read_uncommitted", 500 + summary["aborted_records"])]
    assert len(everything) == 500 + summary["aborted_records"], target.name
    assert sum(value.startswith("aborted-") for value in everything) == summary["aborted_records"], target.name

"""Kafka Streams with processing.guarantee=exactly_once_v2 (lakefeed_testing/kafka_streams/WordCount.java)
killed with SIGKILL mid-run and started again with a fresh state directory (its store restored from the
changelog, a new transactional.id, the dead member's open transaction aborted by the coordinator): the
committed word counts are exact. The same test against our broker and against Apache Kafka 4.3 (the
reference), so the assertion is Kafka's behaviour.

The record cache is off, so every occurrence of a word emits its next count; read_committed, the output for
each word must be exactly 1, 2, ..., n (n its number of occurrences in the input): nothing counted twice
after the kill, nothing lost, no count above n. Read_uncommitted, the aborted transactions' records show
what the crash would have double counted without exactly-once.

LAKEFEED_STREAMS_LINES (default 3000) and LAKEFEED_STREAMS_KILLS (default 1) make a longer run; restarts
after the first alternate between a fresh and the same state directory.
"""

from __future__ import annotations

import os
import random
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from lakefeed_testing.kafka_streams import WordCountApp
from tests.broker.conftest import Target

pytestmark = pytest.mark.integration

LINES = int(os.environ.get("LAKEFEED_STREAMS_LINES", "3000"))
KILLS = int(os.environ.get("LAKEFEED_STREAMS_KILLS", "1"))
CHUNK = 100
VOCABULARY = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo",
              "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango", "uniform", "victor",
              "whiskey", "xray", "yankee", "zulu", "lake", "feed", "kafka", "stream"]


@dataclass
class Output:
    """The output topic as one isolation level reads it: per word, the counts in the order written."""

    consumer: Consumer
    counts: dict[str, list[int]] = field(default_factory=dict)

    @classmethod
    def open(cls, target: Target, topic: str, partitions: int, isolation: str) -> Output:
        consumer = Consumer({"bootstrap.servers": target.bootstrap, "group.id": f"check-{uuid.uuid4().hex[:8]}",
                             "enable.auto.commit": False, "isolation.level": isolation})
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        return cls(consumer)

    def drain(self, seconds: float = 0.3) -> int:
        """Read what is readable now (about `seconds`); the number of records read."""
        read = 0
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            messages = self.consumer.consume(1000, 0.1)
            for message in messages:
                assert message.error() is None, message.error()
                key, value = message.key(), message.value()
                assert key is not None and value is not None
                self.counts.setdefault(key.decode(), []).append(int(value))
            read += len(messages)
        return read

    def records(self) -> int:
        return sum(map(len, self.counts.values()))

    def last(self) -> dict[str, int]:
        return {word: counts[-1] for word, counts in self.counts.items()}


def _lines(seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(VOCABULARY) for _ in range(rng.randint(1, 8))) for _ in range(count)]


def _produce(producer: Producer, topic: str, lines: list[str], partitions: int) -> None:
    for index, line in enumerate(lines):
        producer.produce(topic, value=line.encode(), partition=index % partitions)
    assert producer.flush(30) == 0


def _wait(what: str, check: Callable[[], bool], app: WordCountApp, output: Output, timeout: float) -> None:
    """Drain `output` until `check()` holds; fail with the app's log if the app dies or time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        output.drain()
        if check():
            return
        assert app.alive(), f"WordCount exited while waiting for {what}:\n{app.log_text()[-4000:]}"
    pytest.fail(f"{what}: not after {timeout:.0f} s ({output.records()} committed records):\n"
                f"{app.log_text()[-4000:]}")


def test_exactly_once_v2_word_count_survives_kill_9(target: Target, tmp_path: Path) -> None:
    name = uuid.uuid4().hex[:8]
    input_topic, output_topic = f"wc-in-{name}", f"wc-out-{name}"
    input_partitions, output_partitions = 3, 2
    admin = AdminClient({"bootstrap.servers": target.bootstrap})
    for topic, partitions in ((input_topic, input_partitions), (output_topic, output_partitions)):
        admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(20)

    lines = _lines(seed=20240917, count=LINES)
    expected = Counter(word for line in lines for word in line.split())
    chunks = [lines[i:i + CHUNK] for i in range(0, len(lines), CHUNK)]
    runs = [chunks[len(chunks) * r // (KILLS + 1):len(chunks) * (r + 1) // (KILLS + 1)] for r in range(KILLS + 1)]
    producer = Producer({"bootstrap.servers": target.bootstrap, "acks": "all", "linger.ms": 5})
    committed = Output.open(target, output_topic, output_partitions, "read_committed")
    live = Output.open(target, output_topic, output_partitions, "read_uncommitted")
    app = WordCountApp(target.bootstrap, f"wc-{name}", input_topic, output_topic, tmp_path / "wordcount.log")
    produced = 0
    started = time.monotonic()
    try:
        for run, run_chunks in enumerate(runs):
            # the first restart gets a fresh state dir (restore from the changelog, a new transactional.id);
            # later ones alternate with the one before (local state that EOS must not trust after a crash)
            state_dir = tmp_path / f"state-{run if run % 2 == 1 or run == 0 else run - 1}"
            app.start(state_dir)
            app.wait_running(timeout=90)
            last_run = run == len(runs) - 1
            half = len(run_chunks) // 2 if not last_run else len(run_chunks)
            for chunk in run_chunks[:half]:
                _produce(producer, input_topic, chunk, input_partitions)
                produced += len(chunk)
            if last_run:
                break
            # this instance committed some of its work, more is on the way: kill it in the middle
            before = committed.records()
            _wait(f"run {run}: output to grow", lambda: committed.records() > before + 200,  # noqa: B023
                  app, committed, 90)
            # Kill inside a transaction: as soon as output of the new input shows uncommitted (the app was idle,
            # so that output opened a fresh transaction, which stays open for the 1 s commit interval).
            live.drain(0.1)
            base = live.records()
            for chunk in run_chunks[half:]:
                _produce(producer, input_topic, chunk, input_partitions)
                produced += len(chunk)
            _wait(f"run {run}: uncommitted output of the new input", lambda: live.records() > base,  # noqa: B023
                  app, live, 60)
            app.kill()
        assert produced == LINES
        _wait("every count", lambda: committed.last() == dict(expected), app, committed, 120)
        elapsed = time.monotonic() - started
        committed.drain(1.0)  # anything after the final counts would be a double count
    finally:
        app.stop()
        committed.consumer.close()
        live.consumer.close()

    over = {word: max(counts) for word, counts in committed.counts.items() if max(counts) > expected[word]}
    assert not over, f"{target.name}: counts above the input's ({dict(expected)}): {over}"
    wrong = {word: counts for word, counts in committed.counts.items()
             if counts != list(range(1, expected[word] + 1))}
    assert not wrong, f"{target.name}: committed counts per word must be 1..n; not so for {sorted(wrong)}"
    assert committed.records() == sum(expected.values())

    uncommitted = Output.open(target, output_topic, output_partitions, "read_uncommitted")
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if not uncommitted.drain(0.5) and uncommitted.records() >= committed.records():
                break
    finally:
        uncommitted.consumer.close()
    aborted = uncommitted.records() - committed.records()
    print(f"{target.name}: {LINES} lines, {KILLS} kill(s), {committed.records()} committed counts, "
          f"{aborted} aborted, {elapsed:.1f} s")
    assert aborted > 0, f"{target.name}: the kill hit no open transaction, so it showed nothing"

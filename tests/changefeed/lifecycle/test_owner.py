"""The owner loop with an in-memory runner: leases, takeover, epochs, error -> warning/failed, recovery."""

import time
from pathlib import Path
from typing import ClassVar

import pytest

from changefeed.errors import SourceConnectionError
from changefeed.lifecycle.owner import Owner, OwnerSettings
from changefeed.lifecycle.runner import RunGauges, RunSpec
from changefeed.lifecycle.state import State
from changefeed.lifecycle.store import MetadataStore
from changefeed.model import Checkpoint, Position
from sink.errors import SinkConfigError
from sink.retry import Backoff

START = Checkpoint(Position("bin.000001", 4), 1)


class StubRunner:
    """Stands in for capture -> Kafka: the test moves its checkpoint and injects errors."""

    instances: ClassVar[list["StubRunner"]] = []

    def __init__(self, spec: RunSpec) -> None:
        self.spec = spec
        self.checkpoint: Checkpoint | None = spec.start
        self.error: BaseException | None = None
        self.finished = False
        self.ready_since: float | None = time.monotonic()
        self.stopped = False
        StubRunner.instances.append(self)

    def start(self) -> None:
        pass

    def stop(self, timeout: float = 1.0) -> None:
        self.stopped = True

    def stats(self) -> dict[str, dict[str, int]]:
        return {"db.t": {"rows": 3, "bytes": 300}}

    def gauges(self) -> RunGauges:
        return RunGauges(self.ready_since is not None, 0, 64 << 20)


@pytest.fixture
def setup(tmp_path: Path) -> tuple[MetadataStore, Owner, Owner]:
    StubRunner.instances.clear()
    url = f"sqlite:///{tmp_path / 'meta.db'}"
    store = MetadataStore(url)
    store.create("cf", "mysql://u@h:1", "kafka://h:1/t", "", START, None)
    fast = Backoff(initial=0.2, maximum=0.4)
    a = Owner(store, url, StubRunner, OwnerSettings("A", lease_ttl=0.5, backoff=fast, healthy_after=60))
    b = Owner(MetadataStore(url), url, StubRunner, OwnerSettings("B", lease_ttl=0.5, backoff=fast))
    return store, a, b


def test_one_owner_and_takeover_from_the_checkpoint(setup: tuple[MetadataStore, Owner, Owner]) -> None:
    store, a, b = setup
    a.tick()
    b.tick()
    assert len(StubRunner.instances) == 1  # B did not start a second runner
    moved = Checkpoint(Position("bin.000001", 900), 5)
    StubRunner.instances[0].checkpoint = moved
    a.tick()
    record = store.get("cf")
    assert record is not None and record.checkpoint == moved and record.owner == "A"
    assert record.stats["db.t"]["rows"] == 3
    time.sleep(0.6)  # A goes silent
    b.tick()
    assert len(StubRunner.instances) == 2 and StubRunner.instances[1].spec.start == moved
    a.tick()  # A notices it lost the lease and stops its runner
    assert StubRunner.instances[0].stopped


def test_retriable_error_backs_off_then_recovers_on_progress(setup: tuple[MetadataStore, Owner, Owner]) -> None:
    store, a, _ = setup
    a.tick()
    StubRunner.instances[0].error = SourceConnectionError("lost")
    a.tick()
    record = store.get("cf")
    assert record is not None and record.state is State.WARNING and record.retry_count == 1
    assert record.next_retry is not None and record.error is not None and "lost" in record.error
    a.tick()
    assert len(StubRunner.instances) == 1  # still backing off
    time.sleep(0.35)
    a.tick()
    assert len(StubRunner.instances) == 2
    StubRunner.instances[1].checkpoint = Checkpoint(Position("bin.000002", 4), 9)
    a.tick()
    record = store.get("cf")
    assert record is not None and record.state is State.NORMAL and record.error is None


def test_non_retriable_error_fails_and_pause_stops(setup: tuple[MetadataStore, Owner, Owner]) -> None:
    store, a, _ = setup
    a.tick()
    StubRunner.instances[0].error = SinkConfigError("bad")
    a.tick()
    record = store.get("cf")
    assert record is not None and record.state is State.FAILED and record.next_retry is None
    assert store.operator_set("cf", state=State.NORMAL, error=None)
    a.tick()
    assert len(StubRunner.instances) == 2
    store.operator_set("cf", restart=False, state=State.STOPPED)
    a.tick()
    assert StubRunner.instances[1].stopped
    record = store.get("cf")
    assert record is not None and record.owner is None  # lease released while stopped

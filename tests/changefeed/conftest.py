"""Helpers for capture tests against the session MariaDB."""

import random
from collections.abc import Iterator

import pytest

from changefeed.model import CaptureEvent, Checkpoint, RowChange
from changefeed.source.capture import CaptureOptions, CaptureSource, start_position
from changefeed.source.server import ConnectionSettings
from lakefeed_testing import MySQLServer
from lakefeed_testing.own_broker import OwnBroker


@pytest.fixture
def settings(mysql: MySQLServer) -> ConnectionSettings:
    return ConnectionSettings(mysql.host, mysql.port, mysql.user, mysql.password, tls=False)


@pytest.fixture
def here(settings: ConnectionSettings) -> Checkpoint:
    """A checkpoint at the server's current binlog position."""
    return Checkpoint(start_position(settings), 0)


def options(**overrides: object) -> CaptureOptions:
    values: dict[str, object] = {
        "server_id": random.randint(10_000, 2**31),
        "blocking": False,
        "snapshot_mode": "never",
    }
    values.update(overrides)
    return CaptureOptions(**values)  # type: ignore[arg-type]


def capture(
    settings: ConnectionSettings, start: Checkpoint | None, **overrides: object
) -> list[CaptureEvent]:
    source = CaptureSource(settings, options(**overrides), start=start)
    try:
        return list(source.events())
    finally:
        source.close()


def rows_of(events: list[CaptureEvent], table: str) -> Iterator[RowChange]:
    return (e for e in events if isinstance(e, RowChange) and e.table.table == table)


@pytest.fixture(scope="session")
def own_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OwnBroker]:
    """One bundled-broker process shared by the changefeed tests that do not restart it."""
    broker = OwnBroker(tmp_path_factory.mktemp("own-broker"))
    broker.start()
    try:
        yield broker
    finally:
        broker.stop()

"""Kill the capture at random points and resume from the last acknowledged checkpoint:
no transaction is ever missed; the only repeats are transactions after the checkpoint."""

import random
from pathlib import Path

import pytest

from changefeed.checkpoint import AckTracker
from changefeed.model import CaptureEvent, Checkpoint, RowChange, RowKind, TransactionCommit
from changefeed.source.capture import CaptureSource
from changefeed.source.server import ConnectionSettings
from lakefeed_testing import MySQLServer
from tests.changefeed.conftest import capture, options

TRANSACTIONS = 120


def _write(mysql: MySQLServer, database: str) -> None:
    rng = random.Random(7)
    mysql.execute("CREATE TABLE k (id int PRIMARY KEY, v int NOT NULL)", database=database)
    with mysql.connect(database, autocommit=False) as conn, conn.cursor() as cur:
        for n in range(TRANSACTIONS):
            for _ in range(rng.randint(1, 5)):
                key = rng.randint(1, 40)
                cur.execute("INSERT INTO k VALUES (%s, %s) ON DUPLICATE KEY UPDATE v = v + 1", (key, n))
            if rng.random() < 0.2:
                cur.execute("DELETE FROM k WHERE id = %s", (rng.randint(1, 40),))
            conn.commit()


def _apply(state: dict[int, int], change: RowChange) -> None:
    if change.kind is not RowKind.INSERT:
        assert change.before is not None
        state.pop(int(change.before["id"]), None)  # type: ignore[arg-type]
    if change.after is not None:
        state[int(change.after["id"])] = int(change.after["v"])  # type: ignore[arg-type]


def _transactions(events: list[CaptureEvent | None]) -> list[tuple[int, tuple[RowChange, ...]]]:
    """Group rows by commit: [(commit_ts, rows)] in order, one entry per TransactionCommit.
    None marks a crash: rows of a transaction cut short by it are dropped (never committed)."""
    out: list[tuple[int, tuple[RowChange, ...]]] = []
    rows: list[RowChange] = []
    for e in events:
        if e is None:
            rows = []
        elif isinstance(e, RowChange):
            rows.append(e)
        elif isinstance(e, TransactionCommit):
            out.append((e.checkpoint.commit_ts, tuple(rows)))
            rows = []
    return out


@pytest.mark.parametrize("use_gtid", [False, True], ids=["file-pos", "gtid"])
def test_kill_and_resume(
    mysql: MySQLServer,
    database: str,
    settings: ConnectionSettings,
    here: Checkpoint,
    use_gtid: bool,
    tmp_path: Path,
) -> None:
    _write(mysql, database)
    store = f"sqlite:///{tmp_path / 'schemas.db'}"
    reference = _transactions([*capture(settings, here, schema_store_url=store, use_gtid=use_gtid)])
    assert sum(len(rows) for _, rows in reference) >= TRANSACTIONS

    rng = random.Random(11)
    checkpoint, kills = here, 0
    delivered: list[CaptureEvent | None] = []
    while True:
        source = CaptureSource(settings, options(schema_store_url=store, use_gtid=use_gtid), start=checkpoint)
        acks = AckTracker(checkpoint)
        stream = source.events()
        budget = rng.randint(1, 60)  # events until the "crash"
        finished = True
        for event in stream:
            delivered.append(event)
            if isinstance(event, TransactionCommit):
                acks.issued(event)
                if rng.random() < 0.7:  # the sink acknowledges most, but not all, before the crash
                    acks.acknowledge(event)
            budget -= 1
            if budget == 0:
                finished = False
                break
        stream.close()  # type: ignore[attr-defined]
        source.close()
        if finished:
            break
        kills += 1
        delivered.append(None)
        assert acks.checkpoint is not None
        checkpoint = acks.checkpoint
    assert kills >= 5

    seen = _transactions(delivered)
    # No gap: every reference transaction arrives, in order, with identical rows and commit_ts.
    distinct = []
    for txn in seen:
        if txn not in distinct:
            distinct.append(txn)
    assert distinct == reference
    # Duplicates are whole re-read transactions, never invented ones.
    assert len(seen) > len(reference)
    assert all(t in reference for t in seen)

    state: dict[int, int] = {}
    for _, rows in reference:
        for change in rows:
            _apply(state, change)
    with mysql.connect(database) as conn, conn.cursor() as cur:
        cur.execute("SELECT id, v FROM k")
        assert state == {int(i): int(v) for i, v in cur.fetchall()}

"""A large transaction streams through capture with bounded memory: rows are handed on as they are
decoded, never gathered until the commit."""

import tracemalloc

from changefeed.model import Checkpoint, RowChange, TransactionCommit
from changefeed.source.capture import CaptureSource
from changefeed.source.server import ConnectionSettings
from lakefeed_testing import MySQLServer
from tests.changefeed.conftest import options

ROWS = 30_000


def test_large_transaction_streams_in_bounded_memory(
    mysql: MySQLServer, database: str, settings: ConnectionSettings, here: Checkpoint
) -> None:
    mysql.execute("CREATE TABLE wide (id INT PRIMARY KEY, pad VARCHAR(500) NOT NULL)", database=database)
    with mysql.connect(database, autocommit=False) as conn, conn.cursor() as cur:
        cur.executemany("INSERT INTO wide VALUES (%s, %s)", [(i, f"{i:0500d}") for i in range(ROWS)])
        conn.commit()

    source = CaptureSource(settings, options(), start=here)
    rows = commits = 0
    tracemalloc.start()
    try:
        for event in source.events():
            if isinstance(event, RowChange):
                rows += 1
            elif isinstance(event, TransactionCommit):
                commits += 1
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        source.close()

    assert rows == ROWS
    # 30k rows of 500 characters are 15 MB of payload and far more as Python objects; a streaming
    # capture holds one binlog event's rows (about 8 KB) at a time.
    assert peak < 8 * 1024 * 1024, f"peak traced memory {peak / 2**20:.1f} MiB"
    assert commits == 2  # CREATE TABLE and the transaction

"""Start by time against the real MariaDB: binlog event times are set with SET TIMESTAMP, so the
transactions found are known exactly; files are rotated between them so the search crosses files."""

import time

import pytest

from changefeed.errors import BinlogPurgedError
from changefeed.filter import ChangeFilter, TableFilter
from changefeed.model import Checkpoint, RowChange
from changefeed.source.capture import start_position
from changefeed.source.server import ConnectionSettings
from changefeed.source.start_time import position_at_time
from lakefeed_testing import MySQLServer
from tests.changefeed.conftest import capture


def test_position_at_time_is_the_boundary_before_the_first_transaction_at_or_after_it(
    mysql: MySQLServer, database: str, settings: ConnectionSettings
) -> None:
    mysql.execute("CREATE TABLE t (id INT PRIMARY KEY)", database=database)
    base = int(time.time()) + 1000  # after every real transaction on the server
    for i, offset in enumerate((0, 10, 20)):
        with mysql.connect(database) as conn, conn.cursor() as cur:
            cur.execute(f"SET TIMESTAMP = {base + offset}")
            cur.execute("INSERT INTO t VALUES (%s), (%s)", (2 * i, 2 * i + 1))
            cur.execute("FLUSH BINARY LOGS")
    end = start_position(settings)

    def ids_from(seconds: int) -> list[int]:
        position = position_at_time(settings, seconds)
        events = capture(settings, Checkpoint(position, 0), change_filter=ChangeFilter(TableFilter([f"{database}.*"])))
        return sorted(int(e.after["id"]) for e in events if isinstance(e, RowChange) and e.after)

    assert ids_from(base - 1) == [0, 1, 2, 3, 4, 5]
    assert ids_from(base) == [0, 1, 2, 3, 4, 5]
    assert ids_from(base + 5) == [2, 3, 4, 5]
    assert ids_from(base + 10) == [2, 3, 4, 5]
    assert ids_from(base + 11) == [4, 5]
    assert position_at_time(settings, base + 21).file == end.file  # nothing after: the newest file
    assert ids_from(base + 21) == []
    with pytest.raises(BinlogPurgedError, match="starts after that time"):
        position_at_time(settings, 1000)

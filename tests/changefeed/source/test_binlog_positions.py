"""Start positions checked against the real MariaDB: kept file, inside it, at an event start."""

import pytest

from changefeed.errors import BinlogPurgedError, ConfigError
from changefeed.model import Position
from changefeed.source.binlog_positions import check_start_position
from changefeed.source.server import ConnectionSettings, session
from lakefeed_testing import MySQLServer
from tests.changefeed.binlogs import purge_all_but_a_new_binlog


def _events(settings: ConnectionSettings) -> tuple[str, int, list[tuple[int, int]]]:
    """The newest binlog, its size, and (start, end) of its events."""
    with session(settings) as cur:
        cur.execute("SHOW BINARY LOGS")
        name, size = cur.fetchall()[-1][:2]
        cur.execute("SHOW BINLOG EVENTS IN %s", (name,))
        return str(name), int(size), [(int(r[1]), int(r[4])) for r in cur.fetchall()]


def test_event_starts_pass_and_other_offsets_name_the_nearest(
    mysql: MySQLServer, database: str, settings: ConnectionSettings
) -> None:
    mysql.execute("CREATE TABLE t (id INT PRIMARY KEY)", "INSERT INTO t VALUES (1), (2)", database=database)
    name, size, events = _events(settings)
    start, end = events[-2]
    checked = check_start_position(settings, Position(name, start))
    assert (checked.file, checked.pos) == (name, start)
    assert checked.gtid != ""  # MariaDB: BINLOG_GTID_POS fills the GTID state
    assert check_start_position(settings, Position(name, size)).pos == size  # the end is a boundary too
    with pytest.raises(ConfigError) as inside:
        check_start_position(settings, Position(name, start + 1))
    assert "is not the start of an event" in str(inside.value)
    assert f"nearest event starts are {name}:{start} or {name}:{end}" in str(inside.value)
    for pos in (0, 3, size + 1):
        with pytest.raises(ConfigError, match=rf"position {pos} is outside binlog {name}, which has events "
                                              rf"from 4 to {size}"):
            check_start_position(settings, Position(name, pos))
    missing = name.rsplit(".", 1)[0] + ".999999"
    with pytest.raises(ConfigError, match=rf"binlog {missing} does not exist; the server has .*{name} \("):
        check_start_position(settings, Position(missing, 4))


def test_a_file_older_than_the_oldest_kept_is_purged(mysql: MySQLServer, settings: ConnectionSettings) -> None:
    files = purge_all_but_a_new_binlog(mysql)
    first, newest = files[0], files[-1]
    with pytest.raises(BinlogPurgedError, match=rf"binlog {first} was purged; the oldest binlog on the server "
                                                rf"is {newest}") as purged:
        check_start_position(settings, Position(first, 4))
    assert not purged.value.retriable

"""Start by GTID set against the real MariaDB: the position found is where the GTID event of the first
transaction outside the set starts, across binlog files; sets ahead of the server, of MySQL's form,
or leaving out purged transactions are refused."""

import pytest

from changefeed.errors import BinlogPurgedError, ConfigError
from changefeed.filter import ChangeFilter, TableFilter
from changefeed.model import Checkpoint, RowChange
from changefeed.source.capture import start_position
from changefeed.source.gtid_set import parse_gtid_set
from changefeed.source.server import ConnectionSettings
from changefeed.source.start_gtid import position_after_gtids
from lakefeed_testing import MySQLServer
from tests.changefeed.binlogs import purge_all_but_a_new_binlog
from tests.changefeed.conftest import capture


def _insert(mysql: MySQLServer, database: str, ids: tuple[int, ...], flush: bool) -> str:
    """One transaction; its GTID (MariaDB's @@last_gtid)."""
    with mysql.connect(database) as conn, conn.cursor() as cur:
        cur.execute("INSERT INTO t VALUES " + ", ".join(f"({i})" for i in ids))
        cur.execute("SELECT @@last_gtid")
        gtid = str(cur.fetchone()[0])
        if flush:
            cur.execute("FLUSH BINARY LOGS")
    return gtid


def test_position_is_the_first_transaction_outside_the_set(
    mysql: MySQLServer, database: str, settings: ConnectionSettings
) -> None:
    mysql.execute("CREATE TABLE t (id INT PRIMARY KEY)", database=database)
    gtids = [_insert(mysql, database, (0, 1), True), _insert(mysql, database, (2, 3), False),
             _insert(mysql, database, (4, 5), True)]
    end = start_position(settings)

    def ids_after(text: str) -> list[int]:
        position = position_after_gtids(settings, parse_gtid_set(text))
        events = capture(settings, Checkpoint(position, 0), change_filter=ChangeFilter(TableFilter([f"{database}.*"])))
        return sorted(int(e.after["id"]) for e in events if isinstance(e, RowChange) and e.after)

    before = gtids[0].rsplit("-", 1)[0] + f"-{int(gtids[0].rsplit('-', 1)[1]) - 1}"
    assert ids_after(before) == [0, 1, 2, 3, 4, 5]
    assert ids_after(gtids[0]) == [2, 3, 4, 5]  # crosses into the next file
    assert ids_after(gtids[1]) == [4, 5]
    last = position_after_gtids(settings, parse_gtid_set(gtids[2]))
    # Everything in the set: the binlog's end. MariaDB may append a Binlog_checkpoint event after a rotation at
    # any moment, so the end can have moved past `end`, but no transaction may lie between.
    assert last.file == end.file and last.pos >= end.pos
    with mysql.connect() as conn, conn.cursor() as cur:
        cur.execute("SHOW BINLOG EVENTS IN %s FROM %s", (end.file, end.pos))
        assert [r for r in cur.fetchall() if r[2] == "Gtid" and int(r[1]) < last.pos] == []
    assert last.gtid == gtids[2]  # the GTID state at the boundary is filled in, as for FILE:POS

    # Exactly at the GTID event: SHOW BINLOG EVENTS names where it starts.
    found = position_after_gtids(settings, parse_gtid_set(gtids[0]))
    with mysql.connect() as conn, conn.cursor() as cur:
        cur.execute("SHOW BINLOG EVENTS IN %s", (found.file,))
        gtid_events = {str(r[5]): int(r[1]) for r in cur.fetchall() if r[2] == "Gtid"}
    assert gtid_events[f"BEGIN GTID {gtids[1]}"] == found.pos


def test_sets_the_server_cannot_start_from_are_refused(
    mysql: MySQLServer, database: str, settings: ConnectionSettings
) -> None:
    mysql.execute("CREATE TABLE t (id INT PRIMARY KEY)", database=database)
    first = _insert(mysql, database, (1,), False)
    domain, server, seq = first.split("-")
    with pytest.raises(ConfigError, match=r"holds transactions the server has not written.*@@gtid_binlog_pos"):
        position_after_gtids(settings, parse_gtid_set(f"{domain}-{server}-{int(seq) + 1000}"))
    with pytest.raises(ConfigError, match="holds transactions the server has not written"):
        position_after_gtids(settings, parse_gtid_set(f"{int(domain) + 7}-1-1,{first}"))
    with pytest.raises(ConfigError, match=r"is a MySQL GTID set, but the server is .*MariaDB"):
        position_after_gtids(settings, parse_gtid_set("3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5"))

    purge_all_but_a_new_binlog(mysql)
    with pytest.raises(BinlogPurgedError, match="transactions after the set were purged"):
        position_after_gtids(settings, parse_gtid_set(f"{domain}-{server}-{int(seq) - 1}"))
    after = _insert(mysql, database, (2,), False)
    found = position_after_gtids(settings, parse_gtid_set(first))  # everything up to the purge is in the set
    events = capture(settings, Checkpoint(found, 0), change_filter=ChangeFilter(TableFilter([f"{database}.*"])))
    assert [int(e.after["id"]) for e in events if isinstance(e, RowChange) and e.after] == [2], after

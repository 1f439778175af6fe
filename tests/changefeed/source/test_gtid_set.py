"""GTID sets in both servers' documented forms (gtid_set docstring: MariaDB KB "Global Transaction ID",
MySQL 8.4 manual 19.1.3.1 "GTID Format and Storage"), and the GTID bounds each server version is asked
for (server_version), with the answers the MySQL manual documents and the real MariaDB."""

from typing import Any

import pytest

from changefeed.errors import ServerConfigError
from changefeed.source.gtid_set import GtidSetError, MariadbGtids, MysqlGtids, parse_gtid_set
from changefeed.source.server import ConnectionSettings, session
from changefeed.source.server_version import (
    binlog_start_gtids,
    gtid_bounds,
    parse_server_version,
    server_version,
)

U1 = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
U2 = "4f22fb58-82db-22f2-af44-d91bb5530673"


def test_mariadb_position_holds_each_domain_up_to_its_seq() -> None:
    position = parse_gtid_set(" 1-2-7, 0-1-100 ")
    assert isinstance(position, MariadbGtids) and str(position) == "0-1-100,1-2-7"
    assert position.contains("0-1-100") and position.contains("0-9-3")  # any server, seq within the domain
    assert not position.contains("0-1-101") and not position.contains("2-1-1")  # unlisted domain: none
    assert position.contains("1-2-7") and not position.contains("1-2-8")
    assert parse_gtid_set("0-1-50").issubset(position)  # type: ignore[arg-type]
    assert not parse_gtid_set("0-1-50,2-1-1").issubset(position)  # type: ignore[arg-type]
    assert not position.issubset(parse_gtid_set("0-1-100"))  # type: ignore[arg-type]


def test_mysql_set_intervals_merge_and_contain() -> None:
    gtids = parse_gtid_set(f"{U1.upper()}:1-5:6-9:20,\n{U2.replace('-', '')}:3")
    assert isinstance(gtids, MysqlGtids)
    assert str(gtids) == f"{U1}:1-9:20,{U2}:3"  # adjacent intervals joined, uuids canonical as MySQL prints
    assert gtids.contains(f"{U1}:1") and gtids.contains(f"{U1}:9") and gtids.contains(f"{U1}:20")
    assert not gtids.contains(f"{U1}:10") and not gtids.contains(f"{U2}:4") and not gtids.contains("0-1-1")
    assert parse_gtid_set(f"{U1}:2-4:20").issubset(gtids)  # type: ignore[arg-type]
    assert not parse_gtid_set(f"{U1}:8-11").issubset(gtids)  # type: ignore[arg-type]


def test_mysql_tags_apply_to_the_intervals_after_them() -> None:
    gtids = parse_gtid_set(f"{U1}:1-5:Blue:1-3")  # MySQL 8.3+: tags are case-insensitive
    assert gtids.contains(f"{U1}:4") and gtids.contains(f"{U1}:blue:3")
    assert not gtids.contains(f"{U1}:blue:4") and not gtids.contains(f"{U1}:red:1")
    assert str(gtids) == f"{U1}:1-5,{U1}:blue:1-3"


@pytest.mark.parametrize(("text", "message"), [
    ("", "the GTID set is empty"),
    ("0-1", "'0-1' is not a GTID; use MariaDB 'domain-server-seq"),
    ("0-1-5,0-2-9", "domain 0 is given twice (0-1-5 and 0-2-9)"),
    ("0-1-99999999999999999999", "out of range"),
    ("zzz:1-5", "'zzz' is not a source uuid; use MariaDB 'domain-server-seq[,domain-server-seq...]' such as "
                "0-1-100, or MySQL 'uuid:1-100[:200-300][,uuid:...]'"),
    (f"{U1}", "is not a GTID"),  # no colon: read as MariaDB, which it is not either
    (f"{U1}:", "names a source but no transactions"),
    (f"{U1}:5-3", "interval '5-3' must be n or n-m with 1 <= n <= m"),
    (f"{U1}:0", "interval '0' must be"),
    (f"{U1}:1-x", "'1-x' is neither an interval"),
    (f"{U1}:1:tag", "tag 'tag' of source"),
])
def test_malformed_sets_say_what_is_expected(text: str, message: str) -> None:
    with pytest.raises(GtidSetError) as raised:
        parse_gtid_set(text)
    assert message in str(raised.value)


class Answers:
    """A cursor that answers each statement as the MySQL manual documents (19.1.6.5 "Global Transaction
    ID System Variables"; SHOW BINLOG EVENTS columns Log_name, Pos, Event_type, Server_id, End_log_pos,
    Info), recording what was asked."""

    def __init__(self, answers: dict[str, list[tuple[Any, ...]]]) -> None:
        self.answers, self.asked, self.rows = answers, [], []  # type: ignore[var-annotated]

    def execute(self, sql: str, args: Any = None) -> None:
        self.asked.append(sql)
        self.rows = self.answers[sql]

    def fetchone(self) -> tuple[Any, ...]:
        return self.rows[0]

    def fetchall(self) -> list[tuple[Any, ...]]:
        return self.rows


def test_mysql_bounds_come_from_its_variables() -> None:
    mysql84 = parse_server_version("8.4.3", "MySQL Community Server - GPL")
    cur = Answers({
        "SELECT @@gtid_mode, @@gtid_executed, @@gtid_purged": [("ON", f"{U1}:1-100,\n{U2}:1-7", f"{U1}:1-40")],
        "SHOW BINLOG EVENTS IN %s LIMIT 4": [
            ("binlog.000002", 4, "Format_desc", 1, 127, "Server ver: 8.4.3, Binlog ver: 4"),
            ("binlog.000002", 127, "Previous_gtids", 1, 198, f"{U1}:1-40"),
            ("binlog.000002", 198, "Gtid", 1, 277, f"SET @@SESSION.GTID_NEXT= '{U1}:41'")],
    })
    bounds = gtid_bounds(cur, mysql84, "binlog.000002")
    assert (bounds.executed, bounds.purged) == (f"{U1}:1-100,{U2}:1-7", f"{U1}:1-40")
    assert binlog_start_gtids(cur, mysql84, "binlog.000002") == f"{U1}:1-40"


def test_mysql_without_gtid_mode_is_refused() -> None:
    cur = Answers({"SELECT @@gtid_mode, @@gtid_executed, @@gtid_purged": [("OFF", "", "")]})
    with pytest.raises(ServerConfigError, match=r"gtid_mode is OFF on this server.*start by binlog position"):
        gtid_bounds(cur, parse_server_version("8.0.36"), "binlog.000001")


def test_real_mariadb_bounds(settings: ConnectionSettings) -> None:
    with session(settings) as cur:
        version = server_version(cur)
        cur.execute("SHOW BINARY LOGS")
        files = [str(r[0]) for r in cur.fetchall()]
        cur.execute("SELECT @@gtid_binlog_pos")
        pos = str(cur.fetchone()[0])
        bounds = gtid_bounds(cur, version, files[0])
        newest_start = binlog_start_gtids(cur, version, files[-1])
    assert bounds.executed == pos and pos  # MariaDB gives every transaction a GTID
    assert parse_gtid_set(bounds.executed).contains(pos.split(",")[0])
    if newest_start:  # an earlier file wrote transactions: the newest file's list holds them
        assert isinstance(parse_gtid_set(newest_start), MariadbGtids)

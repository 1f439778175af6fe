"""Generated invisible primary keys (MySQL >= 8.0.30, `sql_generate_invisible_primary_key=ON`).

MySQL adds `my_row_id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT INVISIBLE PRIMARY KEY` as the first column
of a table created without a primary key (MySQL 8.4 Reference Manual, 15.1.20.11 "Generated Invisible
Primary Keys"). It is a real column: in the binlogged CREATE TABLE, in every row image and, unless
`show_gipk_in_create_table_and_information_schema=OFF`, in information_schema. Capture treats it as the
primary key it is, as for any other primary key (the key of canal-JSON's pkNames and of the Delta merge):
without it such a table has no row identity at all (TiCDC refuses it as ineligible). Sessions on
MySQL >= 8.0.30 turn the show variable ON so the schema matches the row images
(ServerVersion.session_sql, tested in test_server_version.py).

MySQL 8 is not available here: the information_schema answers below are those MySQL documents for a GIPK
table; the same shape (an invisible AUTO_INCREMENT primary key) runs for real on MariaDB, which has
INVISIBLE columns since 10.3 and, like MySQL, leaves them out of SELECT *.
"""

from collections.abc import Sequence
from typing import Any, ClassVar

from changefeed.filter import ChangeFilter, TableFilter
from changefeed.model import Checkpoint, RowChange, RowKind, TableName
from changefeed.source.capture import start_position
from changefeed.source.server import ConnectionSettings, fetch_table_info
from lakefeed_testing import MySQLServer
from tests.changefeed.conftest import capture


class DocumentedAnswers:
    """A cursor answering the three information_schema queries of fetch_table_info as MySQL 8.0.30+
    does for `CREATE TABLE t (v INT, note VARCHAR(20))` under sql_generate_invisible_primary_key=ON."""

    ANSWERS: ClassVar[dict[str, Sequence[tuple[Any, ...]]]] = {
        "information_schema.COLUMNS": [
            ("my_row_id", "bigint", "bigint unsigned", "NO", None, None, None, "auto_increment INVISIBLE"),
            ("v", "int", "int", "YES", None, None, None, ""),
            ("note", "varchar", "varchar(20)", "YES", "utf8mb4", "utf8mb4_0900_ai_ci", 20, ""),
        ],
        "information_schema.CHECK_CONSTRAINTS": [],
        "information_schema.STATISTICS": [("PRIMARY", "my_row_id")],
    }

    def __init__(self) -> None:
        self._rows: Sequence[tuple[Any, ...]] = []

    def execute(self, sql: str, args: object = None) -> None:
        self._rows = next(rows for table, rows in self.ANSWERS.items() if table in sql)

    def fetchall(self) -> Sequence[tuple[Any, ...]]:
        return self._rows


def test_gipk_is_the_primary_key_from_documented_answers() -> None:
    info = fetch_table_info(DocumentedAnswers(), TableName("shop", "t"))
    assert info is not None
    assert [c.name for c in info.columns] == ["my_row_id", "v", "note"]
    assert info.primary_key == ("my_row_id",)


def test_invisible_auto_increment_key_on_mariadb(mysql: MySQLServer, database: str,
                                                 settings: ConnectionSettings) -> None:
    """The GIPK's shape on the real MariaDB: snapshot (explicit column list, not SELECT *) and binlog
    both carry the invisible key, and updates and deletes are keyed by it."""
    mysql.execute("CREATE TABLE g (my_row_id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT INVISIBLE PRIMARY KEY, "
                  "v INT, note VARCHAR(20))", "INSERT INTO g (v, note) VALUES (1, 'before')", database=database)
    flt = ChangeFilter(TableFilter([f"{database}.g"]))
    snapshot = [e for e in capture(settings, None, snapshot_mode="initial_only", change_filter=flt)
                if isinstance(e, RowChange)]
    assert [(e.kind, e.after) for e in snapshot] == [(RowKind.INSERT, {"my_row_id": 1, "v": 1, "note": "before"})]
    assert snapshot[0].table.primary_key == ("my_row_id",)

    start = Checkpoint(start_position(settings), 0)
    mysql.execute("INSERT INTO g (v, note) VALUES (2, 'new')", "UPDATE g SET note = 'changed' WHERE v = 1",
                  "DELETE FROM g WHERE v = 2", database=database)
    rows = [e for e in capture(settings, start, change_filter=flt) if isinstance(e, RowChange)]
    assert [(e.kind, e.before, e.after) for e in rows] == [
        (RowKind.INSERT, None, {"my_row_id": 2, "v": 2, "note": "new"}),
        (RowKind.UPDATE, {"my_row_id": 1, "v": 1, "note": "before"}, {"my_row_id": 1, "v": 1, "note": "changed"}),
        (RowKind.DELETE, {"my_row_id": 2, "v": 2, "note": "new"}, None),
    ]
    assert {e.table.primary_key for e in rows} == {("my_row_id",)}

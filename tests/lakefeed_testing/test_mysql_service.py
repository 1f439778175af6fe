"""The MariaDB fixture: binlog settings in force, and a row insert is readable as a binlog row event."""

from pymysqlreplication import BinLogStreamReader
from pymysqlreplication.row_event import WriteRowsEvent

from changefeed.source.server_version import binlog_status
from lakefeed_testing import MySQLServer


def test_binlog_settings_are_row_based_and_full(mysql: MySQLServer) -> None:
    with mysql.connect() as conn, conn.cursor() as cur:
        cur.execute(
            "SELECT @@log_bin, @@binlog_format, @@binlog_row_image, @@binlog_row_metadata, @@server_id"
        )
        assert cur.fetchone() == (1, "ROW", "FULL", "FULL", 1)


def test_inserted_row_is_read_back_from_the_binlog(mysql: MySQLServer, database: str) -> None:
    with mysql.connect() as conn, conn.cursor() as cur:
        status = binlog_status(cur)
        assert status is not None
        log_file, log_pos = status.file, status.pos
    mysql.execute(
        "CREATE TABLE users (id INT PRIMARY KEY, name VARCHAR(40), score DECIMAL(10,2))",
        "INSERT INTO users VALUES (7, 'zoë', 12.50)",
        database=database,
    )
    stream = BinLogStreamReader(
        connection_settings={"host": mysql.host, "port": mysql.port, "user": mysql.user,
                             "password": mysql.password},
        server_id=4242,
        log_file=log_file,
        log_pos=log_pos,
        resume_stream=True,
        blocking=False,
        only_events=[WriteRowsEvent],
        only_schemas=[database],
    )
    try:
        rows = [(event.table, r["values"]) for event in stream for r in event.rows]
    finally:
        stream.close()
    assert len(rows) == 1
    table, values = rows[0]
    assert table == "users"
    assert values["id"] == 7
    assert values["name"] == "zoë"
    assert str(values["score"]) == "12.50"

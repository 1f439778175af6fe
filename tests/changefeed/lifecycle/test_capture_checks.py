"""Through a real `changefeed server`, broker and MariaDB: what would fail later is refused at create
(unknown topic placeholders, tables without a key unless force-replicate), the source URI's database
path limits the capture, an idle changefeed's lag stays small, and DML logged as a statement fails
the changefeed before its checkpoint passes the statement."""

import time
import uuid
from pathlib import Path
from urllib.parse import quote

from lakefeed_testing import MySQLServer
from tests.changefeed.lifecycle.conftest import (
    Process,
    StartServer,
    TopicReader,
    cli,
    cli_json,
    insert_rows,
    wait_for,
)


def _source(mysql: MySQLServer, database: str = "") -> str:
    path = f"/{database}" if database else ""
    return f"mysql://{quote(mysql.user)}:{quote(mysql.password)}@{mysql.host}:{mysql.port}{path}?tls=false"


def test_create_refuses_unknown_placeholders_and_ineligible_tables(
    mysql: MySQLServer, database: str, broker: Process, start_server: StartServer, tmp_path: Path
) -> None:
    mysql.execute("CREATE TABLE t (id INT PRIMARY KEY, v TEXT)", "CREATE TABLE nokey (a INT, b INT)",
                  "CREATE TABLE nullable_uk (a INT, UNIQUE KEY (a))",
                  "CREATE TABLE notnull_uk (a INT NOT NULL, UNIQUE KEY (a))", database=database)
    server = start_server()
    sink = f"kafka://{broker.bootstrap}/c-{database}"
    rules = f"filter:\n  rules: ['{database}.*']\n"

    placeholders = tmp_path / "placeholders.yaml"
    placeholders.write_text(rules + "sink:\n  dispatchers:\n    - matcher: ['*.*']\n      topic: cdc_{db}_{table}\n")
    result = cli(server, "create", "-c", "bad", "--source", _source(mysql), "--sink-uri", sink,
                 "--config", str(placeholders), output="table")
    assert result.returncode == 1, result.stderr
    for part in ("sink.dispatchers[0].topic", "{db}", "valid placeholders: {schema}, {table}"):
        assert part in result.stderr, result.stderr
    result = cli(server, "create", "-c", "bad", "--source", _source(mysql),
                 "--sink-uri", f"kafka://{broker.bootstrap}/cdc_{{db}}", output="table")
    assert result.returncode == 1 and "{db}" in result.stderr and "valid placeholders" in result.stderr

    keyless = tmp_path / "keyless.yaml"
    keyless.write_text(rules)
    result = cli(server, "create", "-c", "bad", "--source", _source(mysql), "--sink-uri", sink,
                 "--config", str(keyless), output="table")
    assert result.returncode == 1, result.stderr
    assert "ineligible tables" in result.stderr and "force-replicate: true" in result.stderr
    named = result.stderr.split("ineligible tables", 1)[1].split(";", 1)[0]
    assert f"{database}.nokey" in named and f"{database}.nullable_uk" in named
    assert f"{database}.notnull_uk" not in named and f"{database}.t," not in named
    assert cli_json(server, "list", "--all") == []

    forced = tmp_path / "forced.yaml"
    forced.write_text(rules + "force-replicate: true\n")
    created = cli_json(server, "create", "-c", "forced", "--source", _source(mysql), "--sink-uri", sink,
                       "--config", str(forced))
    assert any(f"{database}.nokey" in w and "force-replicate" in w for w in created["warnings"]), created
    cli_json(server, "remove", "-c", "forced")


def test_database_path_idle_lag_and_statement_dml(
    mysql: MySQLServer, database: str, broker: Process, start_server: StartServer
) -> None:
    other = f"t_{uuid.uuid4().hex[:10]}"
    mysql.execute(f"CREATE DATABASE `{other}`")
    try:
        for db in (database, other):
            mysql.execute("CREATE TABLE t (id INT PRIMARY KEY, v TEXT)", database=db)
        mysql.execute("CREATE TABLE nokey (a INT)", database=other)  # outside the path: not refused
        server = start_server()
        topic = f"p-{database}"
        cli_json(server, "create", "-c", "path", "--source", _source(mysql, database),
                 "--sink-uri", f"kafka://{broker.bootstrap}/{topic}")
        reader = TopicReader(broker.bootstrap, topic)
        try:
            insert_rows(mysql, database, range(1, 4))
            insert_rows(mysql, other, range(100, 103))
            insert_rows(mysql, database, range(4, 5))
            reader.wait_ids({1, 2, 3, 4}, timeout=60)
            assert sorted(reader.inserts) == [1, 2, 3, 4], reader.inserts  # nothing from the other database

            time.sleep(8)  # idle: heartbeats keep the checkpoint near now
            lag = cli_json(server, "statistics", "-c", "path")["checkpoint_lag_seconds"]
            assert lag is not None and lag < 5.0, f"checkpoint lag {lag} s on an idle source"

            with mysql.connect(database) as conn, conn.cursor() as cur:
                cur.execute("SET SESSION binlog_format=STATEMENT")
                cur.execute("SHOW MASTER STATUS")
                file, pos = cur.fetchone()[:2]  # where the statement's event group will start
                cur.execute("INSERT INTO t VALUES (50, 'statement')")
            failed = wait_for(lambda: (q := cli_json(server, "query", "-c", "path"))["state"] == "failed" and q,
                              30, "state failed")
            message = failed["error"]["message"]
            for part in (f"{database}.t", "INSERT INTO t VALUES (50", "SET GLOBAL binlog_format=ROW"):
                assert part in message, message
            checkpoint = failed["checkpoint"]
            assert (checkpoint["file"], checkpoint["pos"]) <= (file, int(pos)), (checkpoint, file, pos)
            reader.poll(2.0)
            assert 50 not in reader.inserts
        finally:
            reader.close()
    finally:
        mysql.execute(f"DROP DATABASE IF EXISTS `{other}`")

"""A non-retriable error makes a changefeed failed (no retry); update fixes it and resume runs it again.
A target makes it finished; `list` hides finished changefeeds unless --all."""

import datetime
import time
from pathlib import Path

from lakefeed_testing import MySQLServer
from tests.changefeed.lifecycle.conftest import (
    Process,
    StartServer,
    TopicReader,
    cli_json,
    insert_rows,
    source_uri,
    wait_for,
)


def test_failed_then_updated_and_resumed(
    mysql: MySQLServer, database: str, broker: Process, start_server: StartServer, tmp_path: Path
) -> None:
    mysql.execute("CREATE TABLE t (id INT PRIMARY KEY, v TEXT)", database=database)
    server = start_server()
    topic = f"big-{database}"
    cli_json(server, "create", "-c", "big", "--source", source_uri(mysql),
             "--sink-uri", f"kafka://{broker.bootstrap}/{topic}?max-message-bytes=2048")
    insert_rows(mysql, database, range(0, 5))
    mysql.execute(f"INSERT INTO t VALUES (5, '{'x' * 5000}')", database=database)
    failed = wait_for(lambda: (q := cli_json(server, "query", "-c", "big"))["state"] == "failed" and q, 30,
                      "state failed")
    assert "large-message-handle" in failed["error"]["message"] and failed["next_retry"] is None

    config = tmp_path / "cf.yaml"
    config.write_text("sink:\n  large-message-handle: handle-key-only\n")
    assert cli_json(server, "update", "-c", "big", "--config", str(config))["state"] == "failed"
    assert cli_json(server, "resume", "-c", "big")["state"] == "normal"
    reader = TopicReader(broker.bootstrap, topic)
    try:
        reader.wait_ids(set(range(6)), timeout=60)
    finally:
        reader.close()
    assert cli_json(server, "query", "-c", "big")["error"] is None


def test_target_reached_is_finished(
    mysql: MySQLServer, database: str, broker: Process, start_server: StartServer
) -> None:
    mysql.execute("CREATE TABLE t (id INT PRIMARY KEY, v TEXT)", database=database)
    server = start_server()
    # Far enough ahead that a slow CLI start on a loaded machine still creates it before the target.
    target = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=8)
    cli_json(server, "create", "-c", "tgt", "--source", source_uri(mysql),
             "--sink-uri", f"kafka://{broker.bootstrap}/tgt-{database}", "--target", target.isoformat())
    insert_rows(mysql, database, range(0, 10))
    time.sleep(max(0.0, (target - datetime.datetime.now(datetime.UTC)).total_seconds()) + 1.5)
    insert_rows(mysql, database, range(10, 20))  # committed after the target: ends the run
    wait_for(lambda: cli_json(server, "query", "-c", "tgt")["state"] == "finished", 30, "state finished")
    assert cli_json(server, "list") == []
    assert [c["id"] for c in cli_json(server, "list", "--all")] == ["tgt"]

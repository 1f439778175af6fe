"""The whole lifecycle through the CLI against a real server process, MariaDB and our broker:
create -> rows flow -> pause -> no progress -> resume -> no loss, no gap -> update -> remove."""

import time
from pathlib import Path

from lakefeed_testing import MySQLServer
from tests.changefeed.lifecycle.conftest import (
    Process,
    StartServer,
    TopicReader,
    cli,
    cli_json,
    insert_rows,
    source_uri,
    wait_for,
)


def test_lifecycle_through_the_cli(
    mysql: MySQLServer, database: str, broker: Process, start_server: StartServer, tmp_path: Path
) -> None:
    mysql.execute("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(40))", database=database)
    server = start_server()
    topic = f"cdc-{database}"
    config = tmp_path / "cf.yaml"
    config.write_text(f"filter:\n  rules: ['{database}.*']\n")
    created = cli_json(server, "create", "--changefeed-id", "orders", "--source", source_uri(mysql),
                       "--sink-uri", f"kafka://{broker.bootstrap}/{topic}?partition-num=2",
                       "--config", str(config))
    assert created["state"] == "normal" and "***" in created["source"]
    # The source password never leaves the server: not in listings, not in details (and not in its log, below).
    shown = cli(server, "query", "-c", "orders").stdout + cli(server, "list").stdout
    assert f":{mysql.password}@" not in shown and "***" in shown

    reader = TopicReader(broker.bootstrap, topic)
    try:
        insert_rows(mysql, database, range(0, 200))
        reader.wait_ids(set(range(200)), timeout=60)
        wait_for(lambda: cli_json(server, "statistics", "-c", "orders")["tables"].get(f"{database}.t", {})
                 .get("rows", 0) >= 200, 20, "statistics to count 200 rows")
        table = cli(server, "statistics", "-c", "orders", output="table")
        assert f"{database}.t" in table.stdout and "rows_per_second" in table.stdout

        # pause answers once the runner stopped and its last checkpoint is saved: no wait needed after it
        paused = cli_json(server, "pause", "-c", "orders")
        assert (paused["state"], paused["owner"]) == ("stopped", None)
        before = cli_json(server, "query", "-c", "orders", "--simple")
        assert before["checkpoint"] == paused["checkpoint"]
        seen = len(reader.inserts)
        insert_rows(mysql, database, range(200, 400))
        time.sleep(4)
        reader.poll(1)
        after = cli_json(server, "query", "-c", "orders", "--simple")
        assert after["state"] == "stopped"
        assert after["checkpoint"] == before["checkpoint"], "checkpoint moved while stopped"
        assert len(reader.inserts) == seen, "rows were delivered while stopped"

        assert cli_json(server, "resume", "-c", "orders")["state"] == "normal"
        reader.wait_ids(set(range(400)), timeout=60)  # no loss, no gap (duplicates allowed)
        assert cli_json(server, "query", "-c", "orders", "--simple")["state"] == "normal"

        # update only when stopped or failed; exit code 4 otherwise
        refused = cli(server, "update", "-c", "orders", "--config", str(config))
        assert refused.returncode == 4 and "pause it before update" in refused.stderr
        cli_json(server, "pause", "-c", "orders")
        config.write_text(f"filter:\n  rules: ['{database}.*']\nsink:\n  enable-tidb-extension: true\n")
        updated = cli_json(server, "update", "-c", "orders", "--config", str(config))
        assert "enable-tidb-extension: true" in updated["config"] and updated["state"] == "stopped"
        cli_json(server, "resume", "-c", "orders")
        insert_rows(mysql, database, range(400, 450))
        reader.wait_ids(set(range(450)), timeout=60)

        # resume --overwrite-checkpoint: replay from the creation position (duplicates, nothing missing)
        cli_json(server, "pause", "-c", "orders")
        origin = f"{created['checkpoint']['file']}:{created['checkpoint']['pos']}"
        before_replay = len(reader.inserts)
        replayed = cli_json(server, "resume", "-c", "orders", "--overwrite-checkpoint", origin)
        assert replayed["checkpoint"]["pos"] == created["checkpoint"]["pos"]
        wait_for(lambda: reader.poll(1) or len(reader.inserts) >= before_replay + 450, 60, "the replay")
        bad = cli(server, "resume", "-c", "orders", "--overwrite-checkpoint", "nowhere")
        assert bad.returncode == 1 and "FILE:POS" in bad.stderr

        listed = cli(server, "list", output="table")
        assert listed.returncode == 0 and "orders" in listed.stdout and "normal" in listed.stdout
        assert cli_json(server, "remove", "-c", "orders")["removed"] is True
        gone = cli(server, "query", "-c", "orders")
        assert gone.returncode == 3 and "does not exist" in gone.stderr
        assert cli_json(server, "list", "--all") == []
        metrics = cli(server, "list")  # the server stays healthy after remove
        assert metrics.returncode == 0
    finally:
        reader.close()
    assert "Traceback" not in server.log(), server.log()[-3000:]
    assert f":{mysql.password}@" not in server.log()

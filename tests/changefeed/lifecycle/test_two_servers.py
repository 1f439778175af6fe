"""Two servers on one metadata database share the work; kill -9 the owner of a changefeed and the other
takes it over from the checkpoint: the topic holds every row (duplicates only: at-least-once)."""

import threading
from pathlib import Path
from urllib.parse import quote

import pytest

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


@pytest.mark.parametrize("metadata", ["sqlite", "mariadb"])
def test_kill_the_owner_and_the_other_server_takes_over(
    mysql: MySQLServer, database: str, broker: Process, start_server: StartServer, tmp_path: Path, metadata: str,
    request: pytest.FixtureRequest,
) -> None:
    mysql.execute("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(40))", database=database)
    if metadata == "sqlite":
        url = f"sqlite:///{tmp_path / 'shared-metadata.db'}"
    else:  # a metadata database on the same MariaDB (its own schema: it must not be captured itself)
        mysql.execute(f"CREATE DATABASE `{database}_meta`")
        request.addfinalizer(lambda: mysql.execute(f"DROP DATABASE IF EXISTS `{database}_meta`"))
        url = f"mysql+pymysql://{quote(mysql.user)}:{quote(mysql.password)}@{mysql.host}:{mysql.port}/{database}_meta"
    servers = {name: start_server(name, url) for name in ("s1", "s2")}
    topic = f"ha-{database}"
    config = tmp_path / "cf.yaml"
    config.write_text(f"filter:\n  rules: ['{database}.*']\n")
    cli_json(servers["s1"], "create", "--changefeed-id", "ha", "--source", source_uri(mysql),
             "--sink-uri", f"kafka://{broker.bootstrap}/{topic}", "--config", str(config))
    # Both servers see it through the shared database; exactly one owns it.
    owner = wait_for(lambda: cli_json(servers["s2"], "query", "-c", "ha")["owner"], 20, "an owner")
    survivor_id = "s2" if owner == "s1" else "s1"
    survivor = servers[survivor_id]

    stop = threading.Event()
    written: list[int] = []

    def writer() -> None:
        next_id = 0
        while not stop.is_set():
            insert_rows(mysql, database, range(next_id, next_id + 20))
            written.extend(range(next_id, next_id + 20))
            next_id += 20
            stop.wait(0.05)

    reader = TopicReader(broker.bootstrap, topic)
    thread = threading.Thread(target=writer)
    thread.start()
    try:
        reader.wait_ids({0}, timeout=30)
        servers[owner].kill()
        wait_for(lambda: cli_json(survivor, "query", "-c", "ha")["owner"] == survivor_id, 30,
                 f"{survivor_id} to take the changefeed over")
        wait_for(lambda: len(written) > 400, 30, "more writes after the takeover")
    finally:
        stop.set()
        thread.join(30)
    try:
        reader.wait_ids(set(written), timeout=60)
        query = cli_json(survivor, "query", "-c", "ha")
        assert query["state"] == "normal" and query["owner"] == survivor_id
    finally:
        reader.close()
    assert f"changefeed ha: started on {survivor_id}" in survivor.log()

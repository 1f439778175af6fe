"""Through real `changefeed server` processes, MariaDB and our broker: snapshot-mode initial copies the
rows that exist before the changefeed, then the binlog follows without a gap (also across a restart
mid-snapshot and a restart after it); bad start positions are refused at once and nothing is stored."""

import time
from collections import Counter
from pathlib import Path

from lakefeed_testing import MySQLServer
from tests.changefeed.binlogs import purge_all_but_a_new_binlog
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


def _config(tmp_path: Path, database: str, mode: str = "initial") -> Path:
    path = tmp_path / f"cf-{mode}.yaml"
    path.write_text(f"snapshot-mode: {mode}\nfilter:\n  rules: ['{database}.*']\n")
    return path


def _binlogs(mysql: MySQLServer) -> list[tuple[str, int]]:
    with mysql.connect() as conn, conn.cursor() as cur:
        cur.execute("SHOW BINARY LOGS")
        return [(str(r[0]), int(r[1])) for r in cur.fetchall()]


def test_initial_snapshot_then_binlog_across_restarts(
    mysql: MySQLServer, database: str, broker: Process, start_server: StartServer, tmp_path: Path
) -> None:
    mysql.execute("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(40))",
                  "CREATE TABLE u (id INT PRIMARY KEY, v VARCHAR(40))",
                  "INSERT INTO u VALUES (100000, 'u'), (100001, 'u')", database=database)
    insert_rows(mysql, database, range(0, 2000))  # before the changefeed: only a snapshot has them
    # The snapshot reads t, then waits for u (a consistent read still needs u's metadata lock): the
    # server is killed there, mid-snapshot, with every row of t already in the topic.
    locker = mysql.connect(database)
    locker.cursor().execute("LOCK TABLES u WRITE")
    server = start_server("s1")
    topic = f"snap-{database}"
    created = cli_json(server, "create", "--changefeed-id", "snap", "--source", source_uri(mysql),
                       "--sink-uri", f"kafka://{broker.bootstrap}/{topic}?partition-num=2",
                       "--config", str(_config(tmp_path, database)))
    assert created["checkpoint"]["file"] == "", "no binlog position until the snapshot is acknowledged"
    reader = TopicReader(broker.bootstrap, topic)
    try:
        reader.wait_ids(set(range(2000)), timeout=60)
        server.kill()
        pending = wait_for(lambda: _query_store(tmp_path), 10, "the stored checkpoint")
        assert pending["file"] == "", "a checkpoint with a position before the snapshot of u was read"
        locker.close()  # releases u
        insert_rows(mysql, database, range(2000, 2100))  # while no server runs
        server = start_server("s1")  # takes the snapshot again: t twice (at least once), u, then the binlog
        reader.wait_ids({*range(2100), 100000, 100001}, timeout=120)
        wait_for(lambda: _caught_up(server, mysql), 30, "the checkpoint to reach the binlog end")

        # A restart after the snapshot resumes from the checkpoint: the old rows are not sent again.
        server.stop()
        before = Counter(reader.inserts)
        assert before[100000] == 1 and before[0] == 2, before  # u once; t in both snapshots
        server = start_server("s1")
        insert_rows(mysql, database, range(2100, 2200))
        reader.wait_ids(set(range(2200)), timeout=60)
        time.sleep(2)
        reader.poll(1)
        again = Counter(reader.inserts) - before
        assert sorted(again) == list(range(2100, 2200)), "rows before the checkpoint were sent again"
    finally:
        reader.close()
        if locker.open:
            locker.close()
    cli_json(server, "remove", "-c", "snap")


def _caught_up(server: Process, mysql: MySQLServer) -> bool:
    checkpoint = cli_json(server, "query", "-c", "snap")["checkpoint"]
    name, size = _binlogs(mysql)[-1]
    return bool(checkpoint["file"] == name and checkpoint["pos"] >= size)


def _query_store(tmp_path: Path) -> dict[str, object] | None:
    """The checkpoint the killed server left in its metadata database (read without a server)."""
    from changefeed.lifecycle.store import MetadataStore

    store = MetadataStore(f"sqlite:///{tmp_path / 's1' / 'metadata.db'}")
    try:
        rec = store.get("snap")
    finally:
        store.close()
    if rec is None or rec.checkpoint is None:
        return None
    return {"file": rec.checkpoint.position.file, "pos": rec.checkpoint.position.pos}


def test_bad_start_positions_are_refused_at_once(
    mysql: MySQLServer, database: str, broker: Process, start_server: StartServer, tmp_path: Path
) -> None:
    mysql.execute("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(40))", database=database)
    insert_rows(mysql, database, range(0, 10))
    server = start_server()
    files = purge_all_but_a_new_binlog(mysql)
    insert_rows(mysql, database, range(10, 20))
    name, size = _binlogs(mysql)[-1]
    base = name.rsplit(".", 1)[0]
    with mysql.connect() as conn, conn.cursor() as cur:
        cur.execute("SHOW BINLOG EVENTS IN %s", (name,))
        starts = [int(r[1]) for r in cur.fetchall()]
    inside = starts[-2] + 1
    never = _config(tmp_path, database, "never")
    common = ["--source", source_uri(mysql), "--sink-uri", f"kafka://{broker.bootstrap}/bad-{database}",
              "--config", str(never)]
    cases = [
        (f"{base}.000099:4", [f"binlog {base}.000099 does not exist", f"{name} ({size} bytes)"]),
        (f"{name}:5", [f"{name}:5 is not the start of an event", f"nearest event starts are {name}:4 or"]),
        (f"{name}:{inside}", ["is not the start of an event", f"{name}:{starts[-2]} or {name}:{starts[-1]}"]),
        (f"{name}:{size + 1000}", [f"outside binlog {name}, which has events from 4 to"]),
        (f"{files[0]}:4", [f"binlog {files[0]} was purged", f"oldest binlog on the server is {name}"]),
    ]
    for start, expected in cases:
        result = cli(server, "create", "--changefeed-id", "bad", *common, "--start", start, output="table")
        assert result.returncode == 1, (start, result.returncode, result.stderr)
        for part in expected:
            assert part in result.stderr, (start, result.stderr)
        assert cli_json(server, "list", "--all") == [], f"{start} left a changefeed behind"

    # A good position is accepted; resume --overwrite-checkpoint is checked the same way.
    good = f"{name}:{starts[-1]}"
    created = cli_json(server, "create", "--changefeed-id", "ok", *common, "--start", good)
    assert (created["checkpoint"]["file"], created["checkpoint"]["pos"]) == (name, starts[-1])
    cli_json(server, "pause", "-c", "ok")
    stored = cli_json(server, "query", "-c", "ok")
    for start, expected in cases:
        result = cli(server, "resume", "-c", "ok", "--overwrite-checkpoint", start, output="table")
        assert result.returncode == 1, (start, result.returncode, result.stderr)
        for part in expected:
            assert part in result.stderr.replace("overwrite_checkpoint", "start"), (start, result.stderr)
        after = cli_json(server, "query", "-c", "ok")
        assert (after["state"], after["checkpoint"]) == ("stopped", stored["checkpoint"]), start
    resumed = cli_json(server, "resume", "-c", "ok", "--overwrite-checkpoint", f"{name}:{starts[-2]}")
    assert (resumed["state"], resumed["checkpoint"]["pos"]) == ("normal", starts[-2])
    cli_json(server, "remove", "-c", "ok")


def test_start_at_a_time(
    mysql: MySQLServer, database: str, broker: Process, start_server: StartServer, tmp_path: Path
) -> None:
    mysql.execute("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(40))", database=database)
    insert_rows(mysql, database, range(0, 50))  # before the start time: not wanted
    time.sleep(1.1)  # binlog times are whole seconds
    moment = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time()))
    time.sleep(1.1)
    insert_rows(mysql, database, range(50, 100))
    server = start_server()
    topic = f"time-{database}"
    common = ["--source", source_uri(mysql), "--sink-uri", f"kafka://{broker.bootstrap}/{topic}",
              "--config", str(_config(tmp_path, database, "never"))]
    for start, expected in [("2999-01-01T00:00:00", "is in the future"),
                            ("1971-01-01T00:00:00", "changes before then are no longer there"),
                            ("last tuesday", "or a time: ISO-8601")]:
        result = cli(server, "create", "--changefeed-id", "bad", *common, "--start", start, output="table")
        assert result.returncode == 1 and expected in result.stderr, (start, result.stderr)
    assert cli_json(server, "list", "--all") == []
    created = cli_json(server, "create", "--changefeed-id", "at", *common, "--start", moment)
    assert created["checkpoint"]["file"], created
    reader = TopicReader(broker.bootstrap, topic)
    try:
        reader.wait_ids(set(range(50, 100)), timeout=60)
        time.sleep(1)
        reader.poll(1)
        assert not any(i < 50 for i in reader.inserts), "rows from before the start time were sent"
    finally:
        reader.close()
    cli_json(server, "remove", "-c", "at")


def _transaction(mysql: MySQLServer, database: str, ids: range) -> str:
    """insert_rows as one transaction; its GTID (MariaDB's @@last_gtid)."""
    with mysql.connect(database, autocommit=False) as conn, conn.cursor() as cur:
        cur.executemany("INSERT INTO t (id, v) VALUES (%s, %s)", [(i, f"row-{i}") for i in ids])
        conn.commit()
        cur.execute("SELECT @@last_gtid")
        return str(cur.fetchone()[0])


def _gtid_event_start(mysql: MySQLServer, gtid: str) -> tuple[str, int]:
    """Where the GTID event of `gtid` starts, as SHOW BINLOG EVENTS tells (the newest binlog)."""
    name, _ = _binlogs(mysql)[-1]
    with mysql.connect() as conn, conn.cursor() as cur:
        cur.execute("SHOW BINLOG EVENTS IN %s", (name,))
        return name, next(int(r[1]) for r in cur.fetchall() if r[2] == "Gtid" and str(r[5]).endswith(f" {gtid}"))


def test_start_after_a_gtid_set(
    mysql: MySQLServer, database: str, broker: Process, start_server: StartServer, tmp_path: Path
) -> None:
    mysql.execute("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(40))", database=database)
    purged = _transaction(mysql, database, range(0, 10))
    purge_all_but_a_new_binlog(mysql)
    first = _transaction(mysql, database, range(10, 20))  # in the set: not delivered
    second = _transaction(mysql, database, range(20, 30))  # the first transaction outside the set
    third = _transaction(mysql, database, range(30, 40))
    domain, server_id, seq = (int(n) for n in first.split("-"))
    server = start_server()
    topic = f"gtid-{database}"
    common = ["--source", source_uri(mysql), "--sink-uri", f"kafka://{broker.bootstrap}/{topic}",
              "--config", str(_config(tmp_path, database, "never"))]
    cases = [
        ("gtid:0-1", ["'0-1' is not a GTID", "MariaDB 'domain-server-seq[,domain-server-seq...]'",
                      "MySQL 'uuid:1-100[:200-300][,uuid:...]'"]),
        ("gtid:3e11fa47-71ca-11e1-9e33-c80aa9429562:1-x", ["'1-x' is neither an interval"]),
        (f"gtid:{domain}-{server_id}-{seq + 1000}", ["holds transactions the server has not written",
                                                    "@@gtid_binlog_pos"]),
        (f"gtid:{domain}-{server_id}-{int(purged.rsplit('-', 1)[1]) - 1}",
         ["transactions after the set were purged", "snapshot-mode 'initial'"]),
    ]
    for start, expected in cases:
        result = cli(server, "create", "--changefeed-id", "bad", *common, "--start", start, output="table")
        assert result.returncode == 1, (start, result.returncode, result.stderr)
        for part in expected:
            assert part in result.stderr, (start, result.stderr)
        assert cli_json(server, "list", "--all") == [], f"{start} left a changefeed behind"

    created = cli_json(server, "create", "--changefeed-id", "g", *common, "--start", f"gtid:{first}")
    assert (created["checkpoint"]["file"], created["checkpoint"]["pos"]) == _gtid_event_start(mysql, second)
    reader = TopicReader(broker.bootstrap, topic)
    try:
        reader.wait_ids(set(range(20, 40)), timeout=60)
        time.sleep(1)
        reader.poll(1)
        assert min(reader.inserts) == 20, "rows of transactions inside the GTID set were sent"

        # resume --overwrite-checkpoint takes the same form, with the same checks.
        cli_json(server, "pause", "-c", "g")
        # The stopping run may still save one heartbeat checkpoint (same position, newer commit ts):
        # compare against the checkpoint once it holds still.
        stored = cli_json(server, "query", "-c", "g")
        for _ in range(20):
            time.sleep(0.5)
            again = cli_json(server, "query", "-c", "g")
            if again["checkpoint"] == stored["checkpoint"]:
                break
            stored = again
        for start, expected in cases:
            result = cli(server, "resume", "-c", "g", "--overwrite-checkpoint", start, output="table")
            assert result.returncode == 1, (start, result.returncode, result.stderr)
            for part in expected:
                assert part in result.stderr, (start, result.stderr)
            after = cli_json(server, "query", "-c", "g")
            assert (after["state"], after["checkpoint"]) == ("stopped", stored["checkpoint"]), start
        resumed = cli_json(server, "resume", "-c", "g", "--overwrite-checkpoint", f"gtid:{second}")
        assert resumed["state"] == "normal"
        assert (resumed["checkpoint"]["file"], resumed["checkpoint"]["pos"]) == _gtid_event_start(mysql, third)
        sent = len(reader.inserts)
        reader.wait_ids(set(range(30, 40)), timeout=60)
        wait_for(lambda: (reader.poll(0.5), len(reader.inserts) >= sent + 10)[1], 60, "the replay after resume")
        time.sleep(1)
        reader.poll(1)
        assert sorted(reader.inserts[sent:]) == list(range(30, 40)), "resume did not start after the set"
    finally:
        reader.close()
    cli_json(server, "remove", "-c", "g")

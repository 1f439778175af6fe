"""Capture in a child process (changefeed/source/capture_process.py), through a real MariaDB and broker:
the same events as in-process capture, failures carried over as themselves, the child killed -9 mid-stream
(the runner starts again from its checkpoint: no row missing, per-key order kept), and the child gone when
its parent is killed -9."""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from dataclasses import replace
from pathlib import Path

import pytest

from changefeed.errors import ChangefeedError
from changefeed.filter import ChangeFilter, TableFilter
from changefeed.model import CaptureEvent, Checkpoint, Position, TransactionCommit
from changefeed.runner import Changefeed, ChangefeedSpec
from changefeed.source import capture_process
from changefeed.source.capture import CaptureSource, start_position
from changefeed.source.capture_process import CaptureProcess
from changefeed.source.server import ConnectionSettings
from changefeed.source.snapshot import SnapshotProgress
from lakefeed_testing import MySQLServer
from lakefeed_testing.own_broker import OwnBroker
from sink.retry import Backoff
from tests.changefeed.conftest import options
from tests.changefeed.consume import read_topic, rebuild

ROOT = Path(__file__).resolve().parents[2]


def _workload(mysql: MySQLServer, database: str) -> None:
    mysql.execute(
        "CREATE TABLE t (id INT PRIMARY KEY, n INT NOT NULL, s VARCHAR(30), d DECIMAL(9,2), at DATETIME(3))",
        "INSERT INTO t VALUES " + ", ".join(f"({i}, 0, 's{i}', {i}.25, '2026-01-0{1 + i % 9} 10:00:00.5')"
                                            for i in range(300)),
        "UPDATE t SET n = n + 1, s = NULL WHERE id % 3 = 0",
        "ALTER TABLE t ADD COLUMN extra JSON",
        "UPDATE t SET extra = JSON_OBJECT('k', id) WHERE id < 20",
        "DELETE FROM t WHERE id % 7 = 0",
        database=database)


def _events(source: CaptureSource | CaptureProcess) -> list[CaptureEvent]:
    try:
        return list(source.events())
    finally:
        source.close()


def _clockless(event: CaptureEvent) -> CaptureEvent:
    """The event without the server clock's reading (two snapshots a second apart read different seconds)."""
    if isinstance(event, TransactionCommit):
        return replace(event, checkpoint=replace(event.checkpoint, commit_ts=0))
    return replace(event, commit_ts=0)


def test_the_child_yields_the_events_in_process_capture_yields(
    mysql: MySQLServer, database: str, settings: ConnectionSettings, caplog: pytest.LogCaptureFixture
) -> None:
    _workload(mysql, database)  # a snapshot of it first, then its binlog from the start
    keep = ChangeFilter(TableFilter([f"{database}.*"]))
    runs = []
    caplog.set_level(logging.INFO)
    for source_type in (CaptureSource, CaptureProcess):
        caplog.clear()
        progress: list[SnapshotProgress] = []
        source = source_type(settings, options(snapshot_mode="initial_only", change_filter=keep,
                                               snapshot_chunk_size=100), on_progress=progress.append)
        events = [_clockless(e) for e in _events(source)]
        logged = [(r.name, r.levelno, r.getMessage()) for r in caplog.records if r.name.startswith("changefeed.source")]
        runs.append((events, progress, logged))
    (in_process, progress, logged), (child, child_progress, child_logged) = runs
    assert len(in_process) > 250 and child == in_process
    assert child_progress == progress and progress[-1].done
    # the child's log lines reach this process's logging, under their own logger and level
    assert any("snapshot consistent with binlog" in message for _, _, message in logged)
    assert child_logged == logged

    start = Checkpoint(start_position(settings), 0)
    mysql.execute("UPDATE t SET n = n + 10 WHERE id < 50", "DROP TABLE t", database=database)
    streamed = [_events(source_type(settings, options(change_filter=keep), start=start))
                for source_type in (CaptureSource, CaptureProcess)]
    assert len(streamed[0]) > 40 and streamed[1] == streamed[0]


def test_a_failure_in_the_child_is_raised_here_as_itself(settings: ConnectionSettings) -> None:
    gone = Checkpoint(Position("no-such-binlog.000001", 4), 0)
    errors = []
    for source_type in (CaptureSource, CaptureProcess):
        source = source_type(settings, options(), start=gone)
        with pytest.raises(ChangefeedError) as raised:
            _events(source)
        errors.append((type(raised.value), str(raised.value), raised.value.retriable))
    assert errors[1] == errors[0]


def test_a_child_whose_capture_ends_exits_cleanly(
    mysql: MySQLServer, database: str, settings: ConnectionSettings, capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The child's main thread ends (capture reached the binlog's end, or failed) before this side closes its
    stdin, so its thread that waits for that EOF is still blocked reading: the interpreter must still exit
    cleanly, not abort at shutdown over that thread's buffered stdin ("Fatal Python error:
    _enter_buffered_busy", seen under a slow, profiled parent). Here this side waits for the child's exit
    before it closes the child's stdin."""
    end_process = capture_process._end_process

    def slow_parent(process: subprocess.Popen[bytes]) -> None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(30)
        end_process(process)

    monkeypatch.setattr(capture_process, "_end_process", slow_parent)
    mysql.execute("CREATE TABLE t (id INT PRIMARY KEY)", "INSERT INTO t VALUES (1), (2)", database=database)
    start = Checkpoint(start_position(settings), 0)
    gone = Checkpoint(Position("no-such-binlog.000001", 4), 0)
    for begin in (start, gone):
        source = CaptureProcess(settings, options(), start=begin)
        with pytest.raises(ChangefeedError) if begin is gone else contextlib.nullcontext():
            _events(source)
        assert source.exit_code == 0
    assert "Fatal Python error" not in capfd.readouterr().err


def _capture_children(parent: int) -> list[int]:
    found = subprocess.run(["pgrep", "-P", str(parent), "-f", "changefeed.source.capture_child"],
                           capture_output=True, text=True).stdout.split()
    return [int(pid) for pid in found]


def _kill_capture_child() -> int:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        children = _capture_children(os.getpid())
        if children:
            os.kill(children[0], signal.SIGKILL)
            return children[0]
        time.sleep(0.01)
    raise AssertionError("no capture child process appeared")


def test_the_capture_child_killed_mid_stream_loses_nothing_and_keeps_per_key_order(
    mysql: MySQLServer, database: str, settings: ConnectionSettings, own_broker: OwnBroker, tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    mysql.execute("CREATE TABLE k (id INT PRIMARY KEY, n INT NOT NULL)", database=database)
    start = Checkpoint(start_position(settings), 0)
    keys, rounds = 50, 200
    with mysql.connect(database, autocommit=False) as conn, conn.cursor() as cur:
        cur.executemany("INSERT INTO k VALUES (%s, 0)", [(i,) for i in range(keys)])
        conn.commit()
        for _ in range(rounds):  # one transaction per round: n counts 1..rounds per key
            cur.executemany("UPDATE k SET n = n + 1 WHERE id = %s", [(i,) for i in range(keys)])
            conn.commit()
    target = start_position(settings)
    topic = f"cp-{uuid.uuid4().hex[:8]}"
    feed = Changefeed(ChangefeedSpec(
        "cp-kill", settings, own_broker.uri(topic, partition_num=3),
        capture=options(change_filter=ChangeFilter(TableFilter([f"{database}.k"])), blocking=True),
        start=start, target=target, checkpoint_store_url=f"sqlite:///{tmp_path / 'cp.db'}",
        checkpoint_interval_s=0.05, backoff=Backoff(initial=0.2, maximum=0.5)))
    feed.create()
    caplog.set_level(logging.WARNING)
    feed.start()
    deadline = time.monotonic() + 30
    while (checkpoint := feed.checkpoint) is None or checkpoint.position.sort_key <= start.position.sort_key:
        assert time.monotonic() < deadline and feed.state != "failed", feed.error
        time.sleep(0.001)  # some rows acknowledged: kill the capture now, mid-stream
    killed = _kill_capture_child()
    reached = feed.checkpoint
    assert reached is not None and reached.position.sort_key < target.sort_key, "killed after the last row"
    assert feed.wait(90), "the changefeed did not reach its target after its capture child was killed"
    assert feed.state == "finished" and feed.error is None and feed.retries >= 1
    assert f"(pid {killed}) ended with exit code -9" in caplog.text

    records = read_topic(own_broker.bootstrap, topic, 3, expected=keys * (rounds + 1))
    with mysql.connect(database) as conn, conn.cursor() as cur:
        cur.execute("SELECT CAST(id AS CHAR), CAST(n AS CHAR) FROM k")
        assert rebuild(records) == {i: {"id": i, "n": n} for i, n in cur.fetchall()}
    seen: dict[str, list[int]] = {}
    for record in records:  # in partition order, and a key's records are all in one partition
        if not record.message["isDdl"]:
            row = record.message["data"][0]
            seen.setdefault(row["id"], []).append(int(row["n"]))
    assert len(seen) == keys
    for key, values in seen.items():
        assert set(values) == set(range(rounds + 1)), f"key {key}: a value is missing"
        # a value follows its predecessor, or is sent again from the checkpoint on (at least once): never a jump
        assert all(b <= a + 1 for a, b in itertools.pairwise(values)), f"key {key} out of order: {values}"
        assert values[-1] == rounds


def test_the_capture_child_dies_with_its_parent(settings: ConnectionSettings, tmp_path: Path) -> None:
    """Also: a script without a `__main__` guard (as users write them) gets one capture child, not a child
    that runs the script again."""
    script = tmp_path / "capture_parent.py"
    script.write_text(textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(ROOT)!r})
        from changefeed.source.capture import CaptureOptions
        from changefeed.source.capture_process import CaptureProcess
        from changefeed.source.server import ConnectionSettings
        settings = ConnectionSettings({settings.host!r}, {settings.port}, {settings.user!r}, {settings.password!r},
                                      tls=False)
        source = CaptureProcess(settings, CaptureOptions(server_id=4242, snapshot_mode="never"))
        for event in source.events():
            pass
    """))
    parent = subprocess.Popen([sys.executable, str(script)], cwd=tmp_path)
    try:
        deadline = time.monotonic() + 30
        while not (children := _capture_children(parent.pid)):
            assert time.monotonic() < deadline and parent.poll() is None, "the capture child never started"
            time.sleep(0.05)
        time.sleep(1.5)  # the child is up, reading the binlog (blocking at its end)
        assert parent.poll() is None, "the parent script ended"
        assert _capture_children(parent.pid) == children and len(children) == 1
        assert not _capture_children(children[0]), "the child started a capture of its own"
        parent.kill()
        parent.wait(10)
        deadline = time.monotonic() + 10
        while _alive(children[0]):
            assert time.monotonic() < deadline, f"the capture child {children[0]} outlived its parent killed -9"
            time.sleep(0.05)
    finally:
        if parent.poll() is None:
            parent.kill()


def _alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "State:\tZ" not in status

"""Merge-on-read (target.merge_every_seconds) against the pipeline's MERGE per micro-batch, on real Delta.

The reference is the default job (one MERGE per batch), which the equality harness compares with MySQL. The
same seeded batches go to both; after every batch the buffered job's `current_rows` must equal the reference's
live rows, table by table, and after each merge of the buffer so must its plain Delta tables. The batches mix
inserts, updates, deletes and key changes over three tables, with an ADD COLUMN and a TRUNCATE (schema changes
merge the buffer at once), a batch re-run after a crash, and a replay from a new checkpoint."""

import functools
import random
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from delta.tables import DeltaTable
from pyspark.sql import functions as F

from spark_pipelines.config import Maintenance, PipelineConfig, SourceConfig, parse_config
from spark_pipelines.errors import ConfigError, MessageError
from spark_pipelines.io.change_buffer import VACUUM_EVERY_S, buffer_location, pending_messages
from spark_pipelines.io.current import current_rows
from spark_pipelines.io.delta import live_rows
from spark_pipelines.jobs.apply import ApplyBatch
from spark_pipelines.jobs.buffer_merger import BufferMerger, merging_session
from spark_pipelines.transforms.parse import parse_messages
from tests.spark_pipelines.canal import ddl, dml, records

TABLES = ("a", "b", "c")
NEVER = 10**9  # seconds: the buffer is merged only when the test says, or by a schema change


def _history(seed: int, batches: int) -> list[list[str]]:
    """Seeded batches of canal-JSON messages; table a gains a column n in batch 2, table b is truncated in
    batch 4 (each a schema change in the middle of its batch), both inside a buffered stretch."""
    rng = random.Random(seed)
    live: dict[str, set[int]] = {t: set() for t in TABLES}
    with_n = False
    ts = 1
    out: list[list[str]] = []
    for number in range(batches):
        batch = []
        for step in range(rng.randint(8, 20)):
            ts += 1
            if number == 2 and step == 4:
                batch.append(ddl("a", "ALTER", "ALTER TABLE a ADD COLUMN n INT DEFAULT 7", commit_ts=ts << 18, es=ts))
                with_n = True
                continue
            if number == 4 and step == 3:
                batch.append(ddl("b", "TRUNCATE", "TRUNCATE TABLE b", commit_ts=ts << 18, es=ts))
                live["b"].clear()
                continue
            table = rng.choice(TABLES)
            extra = {"n": str(rng.randint(0, 9))} if table == "a" and with_n else {}
            types = {"id": "int", "name": "varchar(20)", **({"n": "int"} if extra else {})}
            key = rng.randint(1, 12)
            name = f"{table}{key}-{ts}"
            if key not in live[table]:
                kind, old = "INSERT", None
                live[table].add(key)
            elif rng.random() < 0.3:
                kind, old = "DELETE", None
                live[table].discard(key)
            elif rng.random() < 0.3 and (moved := rng.randint(13, 20)) not in live[table]:
                kind, old = "UPDATE", {"id": str(key)}
                live[table].discard(key)
                live[table].add(moved)
                key = moved
            else:
                kind, old = "UPDATE", {"name": "before"}
            batch.append(dml(table, kind, {"id": str(key), "name": name, **extra}, old=old, types=types,
                             commit_ts=ts << 18, es=ts))
        out.append(batch)
    return out


def _rows(frame: Any) -> list[tuple[Any, ...]]:
    return sorted((tuple(row) for row in frame.collect()), key=repr)


def _offset(spark: Any, values: list[str], first: int) -> Any:
    return records(spark, values).selectExpr("topic", "partition", f"offset + {first} AS offset", "key", "value")


@pytest.mark.parametrize("seed", [1])
def test_buffered_batches_read_and_merge_to_what_merging_every_batch_gives(spark: Any, tmp_path: Path,
                                                                           seed: int) -> None:
    reference = PipelineConfig(SourceConfig("unused:9092", ("cdc",)), str(tmp_path / "ref"), str(tmp_path / "c1"))
    buffered = PipelineConfig(SourceConfig("unused:9092", ("cdc",)), str(tmp_path / "mor"), str(tmp_path / "c2"),
                              merge_every_seconds=NEVER)
    merge_each, merge_on_read = ApplyBatch(reference), ApplyBatch(buffered)
    buffer = buffer_location(str(tmp_path / "mor"))

    def tagged(read: Any) -> Any:
        """Every table's rows in one DataFrame (one Spark action to compare them all), as JSON text."""
        frames = [read(table).select(F.lit(table).alias("t"), F.to_json(F.struct("*")).alias("row"))
                  for table in TABLES]
        return functools.reduce(lambda a, b: a.unionByName(b), frames)

    def same(read: Any) -> None:
        expected = _rows(tagged(lambda table: live_rows(spark, reference.table_path("shop", table))))
        assert _rows(tagged(read)) == expected

    history = _history(seed, 5)
    starts = [sum(len(values) for values in history[:i]) for i in range(len(history))]
    for batch_id, values in enumerate(history):
        merge_each(_offset(spark, values, starts[batch_id]), batch_id)
        merge_on_read(_offset(spark, values, starts[batch_id]), batch_id)
        schema_change = any('"isDdl": true' in value for value in values)
        assert (pending_messages(spark, buffer) is None) == schema_change, batch_id  # DDL merges at once
        if batch_id == 3:
            # A crash before the checkpoint: the batch runs again, its changes already buffered.
            ApplyBatch(buffered)(_offset(spark, values, starts[batch_id]), batch_id)
        same(lambda table: current_rows(spark, buffered, "shop", table))
        if batch_id == 1:
            merge_on_read.merge_buffer(spark, force=True)
            assert pending_messages(spark, buffer) is None
            same(lambda table: live_rows(spark, buffered.table_path("shop", table)))
    # A replay from a new checkpoint buffers changes older than the stored rows: reads and the merge skip them.
    replay = ApplyBatch(PipelineConfig(SourceConfig("unused:9092", ("cdc",)), str(tmp_path / "mor"),
                                       str(tmp_path / "c3"), merge_every_seconds=NEVER))
    replay(_offset(spark, history[1], starts[1]), 0)
    assert pending_messages(spark, buffer) is not None
    same(lambda table: current_rows(spark, buffered, "shop", table))
    replay.merge_buffer(spark, force=True)
    same(lambda table: live_rows(spark, buffered.table_path("shop", table)))


def test_the_buffer_is_merged_when_due_and_idle_merges_wait_for_it(spark: Any, tmp_path: Path) -> None:
    config = PipelineConfig(SourceConfig("unused:9092", ("cdc",)), str(tmp_path / "mor"), str(tmp_path / "c"),
                            merge_every_seconds=NEVER)
    job = ApplyBatch(config)
    assert job.buffer is not None
    now = [0.0]
    job.buffer._clock = lambda: now[0]
    job.buffer._merged_at = job.buffer._vacuumed_at = now[0]  # the intervals start at 0 on the fake clock
    path, buffer = config.table_path("shop", "a"), buffer_location(str(tmp_path / "mor"))
    job(records(spark, [dml("a", "INSERT", {"id": "1", "name": "x"}, commit_ts=2 << 18, es=2)]), 0)
    assert pending_messages(spark, buffer) is not None
    assert job.merge_buffer(spark) is None  # not due yet: nothing written
    assert _rows(current_rows(spark, config, "shop", "a")) == [(1, "x")]
    now[0] = NEVER
    assert job.merge_buffer(spark) is not None
    assert pending_messages(spark, buffer) is None and _rows(live_rows(spark, path)) == [(1, "x")]
    now[0] = 2 * NEVER  # due: a batch still only appends (the merger merges, on its own thread)
    job(_offset(spark, [dml("a", "UPDATE", {"id": "1", "name": "y"}, old={"name": "x"}, commit_ts=3 << 18,
                            es=3)], 1), 1)
    assert pending_messages(spark, buffer) is not None and _rows(live_rows(spark, path)) == [(1, "x")]
    assert job.merge_buffer(spark) is not None
    assert pending_messages(spark, buffer) is None and _rows(live_rows(spark, path)) == [(1, "y")]
    # An hour on, a merge also vacuums the buffer (Delta logs VACUUM START and END); rows stay as they were.
    now[0] = 2 * NEVER + VACUUM_EVERY_S
    assert job.merge_buffer(spark, force=True) is None  # nothing was pending
    operations = [row["operation"] for row in DeltaTable.forPath(spark, buffer).history().collect()]
    assert "VACUUM END" in operations, operations
    assert _rows(live_rows(spark, path)) == [(1, "y")]


def _insert(table: str, key: int, ts: int) -> str:
    return dml(table, "INSERT", {"id": str(key), "name": f"{table}{key}-{ts}"}, commit_ts=ts << 18, es=ts)


def test_rows_of_a_table_created_in_the_batch_wait_in_the_buffer(spark: Any, tmp_path: Path) -> None:
    """A batch whose only schema change is CREATE TABLE creates the table at once and buffers its rows; a plain
    CREATE TABLE again (a snapshot taken again) keeps the older buffered rows out of `current_rows` and of the
    merge, as the reference job (a MERGE per batch) keeps them out of the table."""
    reference = ApplyBatch(PipelineConfig(SourceConfig("unused:9092", ("cdc",)), str(tmp_path / "ref"),
                                          str(tmp_path / "c1")))
    config = PipelineConfig(SourceConfig("unused:9092", ("cdc",)), str(tmp_path / "mor"), str(tmp_path / "c2"),
                            merge_every_seconds=NEVER)
    job, buffer = ApplyBatch(config), buffer_location(str(tmp_path / "mor"))
    create = "CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(20))"
    batches = [
        [ddl("t", "CREATE", create, commit_ts=2 << 18, es=2), _insert("t", 1, 3), _insert("t", 2, 4)],
        [dml("t", "UPDATE", {"id": "1", "name": "t1-5"}, old={"name": "t1-3"}, commit_ts=5 << 18, es=5)],
        [ddl("t", "CREATE", create, commit_ts=6 << 18, es=6), _insert("t", 2, 7)],
    ]
    for batch_id, values in enumerate(batches):
        reference(_offset(spark, values, batch_id * 10), batch_id)
        job(_offset(spark, values, batch_id * 10), batch_id)
        assert pending_messages(spark, buffer) is not None, batch_id  # nothing merged the buffer
        expected = _rows(live_rows(spark, reference.config.table_path("shop", "t")))
        assert _rows(current_rows(spark, config, "shop", "t")) == expected, batch_id
    assert expected == [(2, "t2-7")]
    job.merge_buffer(spark, force=True)
    assert _rows(live_rows(spark, config.table_path("shop", "t"))) == expected


def test_maintenance_keeps_its_cadence_in_batches_when_a_merge_applies_several(spark: Any, tmp_path: Path) -> None:
    """`optimize_every_batches: 2` runs maintenance after batches 1, 3, 5...: a merge of batches 0-2 holds batch 1,
    so it maintains the table, though its own batch id (2) is not due; a merge of batch 3 alone does too. (Seen by
    its VACUUM: OPTIMIZE of a one-file table commits nothing.)"""
    config = PipelineConfig(SourceConfig("unused:9092", ("cdc",)), str(tmp_path / "mor"), str(tmp_path / "c"),
                            merge_every_seconds=NEVER,
                            maintenance=Maintenance(optimize_every_batches=2, vacuum_retain_hours=200))
    job, path = ApplyBatch(config), config.table_path("shop", "t")
    create = ddl("t", "CREATE", "CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(20))", commit_ts=2 << 18, es=2)

    def maintained() -> int:
        return sum(row["operation"] == "VACUUM START" for row in DeltaTable.forPath(spark, path).history().collect())

    for batch_id in range(3):
        job(_offset(spark, [create] * (batch_id == 0) + [_insert("t", batch_id, 3 + batch_id)], batch_id * 10),
            batch_id)
    assert maintained() == 0  # buffered batches write no table rows and run no maintenance
    job.merge_buffer(spark, force=True)
    assert maintained() == 1
    job(_offset(spark, [_insert("t", 3, 6)], 30), 3)
    job.merge_buffer(spark, force=True)
    assert maintained() == 2
    assert _rows(live_rows(spark, path)) == [(0, "t0-3"), (1, "t1-4"), (2, "t2-5"), (3, "t3-6")]


@pytest.mark.parametrize("merge_every", [None, NEVER], ids=["merge-per-batch", "merge-on-read"])
def test_a_batch_with_a_bad_message_stops_before_writing_anything(spark: Any, tmp_path: Path,
                                                                  merge_every: int | None) -> None:
    """The batch summary finds the bad message (in merge-on-read without the layouts) and the batch raises
    MessageError naming its partition and offset; neither a table nor the change buffer is written."""
    config = PipelineConfig(SourceConfig("unused:9092", ("cdc",)), str(tmp_path / "out"), str(tmp_path / "c"),
                            merge_every_seconds=merge_every)
    values = [_insert("t", 1, 2), "{not canal-json", _insert("t", 2, 3)]
    with pytest.raises(MessageError, match=r"cdc\[0\]@11 is not a canal-JSON change.*not canal-json"):
        ApplyBatch(config)(_offset(spark, values, 10), 0)
    assert not (tmp_path / "out").exists()


def test_a_batch_appends_while_a_merge_holds_the_tables(spark: Any, tmp_path: Path) -> None:
    """The stream's append never waits for the merger: with the tables' lock held (as during a merge), a
    batch without DDL still completes; a batch with DDL waits for it, as it must apply after the merge."""
    config = PipelineConfig(SourceConfig("unused:9092", ("cdc",)), str(tmp_path / "mor"), str(tmp_path / "c"),
                            merge_every_seconds=NEVER)
    job = ApplyBatch(config)
    done: list[int] = []

    def run(values: list[str], batch_id: int) -> None:
        job(_offset(spark, values, batch_id * 10), batch_id)
        done.append(batch_id)

    with job._merging:  # what a merge holds while it writes the tables
        appending = threading.Thread(target=run, args=([_insert("a", 1, 2)], 0))
        appending.start()
        appending.join(timeout=120)
        assert done == [0]  # it did not wait for the lock
        altering = threading.Thread(target=run, args=(
            [ddl("a", "ALTER", "ALTER TABLE a ADD COLUMN n INT DEFAULT 7", commit_ts=3 << 18, es=3)], 1))
        altering.start()
        altering.join(timeout=5)
        assert done == [0] and altering.is_alive()  # the schema change waits for the merge
    altering.join(timeout=120)
    assert done == [0, 1]
    assert pending_messages(spark, buffer_location(str(tmp_path / "mor"))) is None
    assert _rows(live_rows(spark, config.table_path("shop", "a"))) == [(1, "a1-2", 7)]


def test_merges_beside_appends_take_only_the_batches_finished_before_them(spark: Any, tmp_path: Path) -> None:
    """A merger thread merging again and again while the test appends batch after batch: no Delta conflict
    between the buffer's delete and the appends, each merge takes only finished batches (the buffer keeps
    the rest), and in the end the tables equal the reference job's, which merged every batch."""
    history = _history(7, 5)
    history = [[value for value in values if '"isDdl": true' not in value] for values in history]
    reference = ApplyBatch(PipelineConfig(SourceConfig("unused:9092", ("cdc",)), str(tmp_path / "ref"),
                                          str(tmp_path / "c1")))
    config = PipelineConfig(SourceConfig("unused:9092", ("cdc",)), str(tmp_path / "mor"), str(tmp_path / "c2"),
                            merge_every_seconds=NEVER)
    job = ApplyBatch(config)
    starts = [sum(len(values) for values in history[:i]) for i in range(len(history))]
    merged_through: list[int] = []
    stop = threading.Event()
    failures: list[BaseException] = []
    session = merging_session(spark)

    def merge_again_and_again() -> None:
        try:
            while not stop.is_set():
                if job.merge_buffer(session, force=True) is not None:
                    assert job.last_batch_id is not None
                    merged_through.append(job.last_batch_id)
        except BaseException as exc:
            failures.append(exc)

    merger = threading.Thread(target=merge_again_and_again)
    merger.start()
    try:
        for batch_id, values in enumerate(history):
            reference(_offset(spark, values, starts[batch_id]), batch_id)
            job(_offset(spark, values, starts[batch_id]), batch_id)
    finally:
        stop.set()
        merger.join(timeout=300)
    assert not failures, failures
    assert merged_through, "no merge ran beside the appends"
    job.merge_buffer(spark, force=True)
    assert pending_messages(spark, buffer_location(str(tmp_path / "mor"))) is None
    for table in TABLES:
        assert _rows(live_rows(spark, config.table_path("shop", table))) == _rows(
            live_rows(spark, reference.config.table_path("shop", table))), table


def test_a_buffer_written_before_its_partition_tags_is_merged_by_the_first_batch(spark: Any, tmp_path: Path) -> None:
    """The layout of the version before (one unpartitioned table of parsed messages) is merged whole with the
    first batch, then removed; batches after it are buffered in the tagged layout."""
    config = PipelineConfig(SourceConfig("unused:9092", ("cdc",)), str(tmp_path / "mor"), str(tmp_path / "c"),
                            merge_every_seconds=NEVER)
    buffer = buffer_location(str(tmp_path / "mor"))
    old = parse_messages(records(spark, [_insert("a", 1, 2), _insert("b", 1, 3)]))
    old.where(F.col("valid")).write.format("delta").save(buffer)
    job = ApplyBatch(config)
    job(_offset(spark, [_insert("a", 2, 4)], 10), 0)
    assert pending_messages(spark, buffer) is None
    assert _rows(live_rows(spark, config.table_path("shop", "a"))) == [(1, "a1-2"), (2, "a2-4")]
    assert _rows(live_rows(spark, config.table_path("shop", "b"))) == [(1, "b1-3")]
    job(_offset(spark, [_insert("b", 2, 5)], 11), 1)
    assert _rows(current_rows(spark, config, "shop", "b")) == [(1, "b1-3"), (2, "b2-5")]
    assert job.merge_buffer(spark, force=True) is not None
    assert _rows(live_rows(spark, config.table_path("shop", "b"))) == [(1, "b1-3"), (2, "b2-5")]


def test_a_failed_merge_stops_the_query_and_is_raised_by_finish(spark: Any, tmp_path: Path) -> None:
    config = PipelineConfig(SourceConfig("unused:9092", ("cdc",)), str(tmp_path / "mor"), str(tmp_path / "c"),
                            merge_every_seconds=NEVER)

    class FailingMerge(ApplyBatch):
        def merge_buffer(self, spark: Any, *, force: bool = False) -> Any:
            raise RuntimeError("the table is gone")

    class Query:
        isActive = True

        def stop(self) -> None:
            self.isActive = False

    query = Query()
    merger = BufferMerger(spark, FailingMerge(config), query, poll_s=0.05)
    deadline = time.monotonic() + 30
    while query.isActive and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not query.isActive
    with pytest.raises(RuntimeError, match="the table is gone"):
        merger.finish()


def test_merge_on_read_needs_a_path_target_and_scd_type_1() -> None:
    base = {"source": {"bootstrap_servers": "127.0.0.1:9092", "topics": ["cdc"]}, "checkpoint": "/tmp/c"}
    config = parse_config({**base, "target": {"path": "/tmp/d", "merge_every_seconds": 30}})
    assert config.merge_every_seconds == 30
    with pytest.raises(ConfigError, match="merge-on-read needs a path target"):
        parse_config({**base, "target": {"database": "lake", "merge_every_seconds": 30}})
    with pytest.raises(ConfigError, match="merge-on-read needs a path target"):
        parse_config({**base, "target": {"path": "/tmp/d", "scd_type": 2, "merge_every_seconds": 30}})
    with pytest.raises(ConfigError, match=r"target\.merge_every_seconds: expected a whole number >= 0"):
        parse_config({**base, "target": {"path": "/tmp/d", "merge_every_seconds": "soon"}})

"""One micro-batch of canal-JSON records -> Delta: reject bad messages, then apply the batch in
segments cut at the schema changes it holds, so that every row is applied with the columns in force
at its commit. A table's changes are cut only at its own schema changes (jobs/segments.py).

Row changes of a segment are merged newest-per-key with the sequence guard (io/delta.merge_latest).
Between segments come the DDL the tables must follow: TRUNCATE and DROP TABLE at sequence S turn every
row older than S into a tombstone at S (so a replayed older insert cannot bring it back; DROP follows
`target.on_drop_table`); RENAME TABLE moves the rows to the new name (`target.on_rename_table`); ALTER
TABLE adds (with the value MySQL gives existing rows), modifies (type, position), renames and drops
columns (io/columns.py); CREATE TABLE creates the Delta table (when transforms/create_table.py can read
its columns; else the first row does). A type change cuts the batch like any column DDL, so the rows
before it are read with the old type and converted as MySQL converts them. Columns the rows' layout
has and the table lacks are added at their place (io/delta.ensure_table). Ordering DDL against rows of
other partitions needs the commit timestamp in every message (`enable-tidb-extension=true` on the
changefeed).
"""

from __future__ import annotations

import functools
import hashlib
import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from pyspark import inheritable_thread_target
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from changefeed.model import TableName
from spark_pipelines.config import PipelineConfig
from spark_pipelines.errors import ConfigError, MessageError
from spark_pipelines.io.catalog import register, resolve_locations
from spark_pipelines.io.change_buffer import ChangeBuffer, buffer_location
from spark_pipelines.io.columns import ColumnEditor
from spark_pipelines.io.delta import Txn, append_latest, ensure_table, exists, idempotent, merge_latest
from spark_pipelines.io.history import close_all, ensure_history_column, merge_history
from spark_pipelines.io.maintenance import maintain
from spark_pipelines.io.tables import create_table, empty_table, move_tables, seq_literal, table_floor
from spark_pipelines.jobs.ddl_hold import DdlHold
from spark_pipelines.jobs.failures import is_java_failure, job_group_of, short_failure
from spark_pipelines.jobs.segments import Segments
from spark_pipelines.transforms.create_table import created_shape, if_not_exists
from spark_pipelines.transforms.latest import latest_per_key
from spark_pipelines.transforms.parse import COMMIT_TS, SEQ, parse_messages
from spark_pipelines.transforms.rows import TableShape, changes_of
from spark_pipelines.transforms.shapes import fold_shapes, key_ranges, shape_rows
from spark_pipelines.transforms.summary import BatchSummary, summary_rows
from spark_pipelines.transforms.table_ddl import final_sources, read_ddl

if TYPE_CHECKING:
    from spark_pipelines.jobs.buffer_merger import BufferMerger

log = logging.getLogger(__name__)
CREATE, TRUNCATE, DROP, RENAME, ALTER = "CREATE", "TRUNCATE", "ERASE", "RENAME", "ALTER"  # canal-JSON DDL types
TABLE_DDL = (CREATE, TRUNCATE, DROP, RENAME, ALTER)
SEGMENTS_PER_BATCH = 10_000  # txnVersion = batch id * this + segment: increasing across batches
MERGE_THREADS = 8  # tables merged at once: Spark runs jobs from several driver threads side by side


def parallel_merges(spark: Any, merges: Sequence[Callable[[], None]], txn: Txn) -> None:
    """Run the MERGEs of one segment (one table each) from several driver threads, so one table's
    planning, Delta log reads and commit overlap another's Spark jobs.

    All of them carry the same idempotent-write ids, set once on the session around them: Delta
    records (txnAppId, txnVersion) per table, so a re-run batch skips exactly the tables it already
    merged. Every MERGE is awaited; the first failure is raised after them."""
    if not merges:
        return
    with idempotent(spark, txn):
        if len(merges) == 1:
            merges[0]()
            return
        with ThreadPoolExecutor(max_workers=min(MERGE_THREADS, len(merges)),
                                thread_name_prefix="lakefeed-merge") as pool:
            # Each thread runs its jobs in the stream's job group (query.stop() cancels them too).
            futures = [pool.submit(inheritable_thread_target(merge)) for merge in merges]
        errors = [error for future in futures if (error := future.exception()) is not None]
    if errors:
        raise errors[0]


def app_id_for(checkpoint: str) -> str:
    """Delta's idempotent-write id: stable for one checkpoint (a re-run batch is skipped), new for a new
    one (a replay writes again, and the sequence guard makes it change nothing)."""
    return "lakefeed-" + hashlib.sha256(checkpoint.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class BatchReport:
    batch_id: int
    tables: tuple[str, ...]
    # Row changes of the batch per source table the config keeps (a replayed change counts, although
    # the sequence guard makes it change nothing), and the newest commit time it carried (epoch ms).
    rows: tuple[tuple[str, int], ...] = ()
    newest_commit_ms: int | None = None


def _relevant(ddl: Any) -> bool:
    """DDL that changes which rows or columns a table has (CREATE INDEX and the like do not). Raises
    DDLError for a message that cannot be mapped to its table (read_ddl), rather than skipping it."""
    parsed = read_ddl(ddl["database"], ddl["table"], ddl["sql"])
    if ddl["type"] == RENAME:
        return bool(parsed.renames)
    if ddl["type"] == CREATE:
        return created_shape(ddl["sql"], ddl["database"]) is not None
    return ddl["type"] in (TRUNCATE, DROP) or bool(parsed.column_edits)


def schema_changes(rows: list[Any]) -> list[Any]:
    """The DDL rows to apply, in sequence order. A RENAME TABLE arrives once per table it touches
    (same commit, same statement): keep the first."""
    seen: set[tuple[Any, ...]] = set()
    kept = []
    for row in sorted((r for r in rows if _relevant(r)), key=lambda r: tuple(r[SEQ])):
        if row["type"] == RENAME:
            identity = (row[SEQ]["ts"], row["database"], row["sql"])
            if identity in seen:
                continue
            seen.add(identity)
        kept.append(row)
    return kept


class ApplyBatch:
    """The foreachBatch function of the pipeline."""

    def __init__(self, config: PipelineConfig, on_batch: Callable[[BatchReport], None] | None = None) -> None:
        self.config = config
        self.app_id = app_id_for(config.checkpoint)
        self.last_report: BatchReport | None = None  # only the last: a stream runs for months
        self.on_batch = on_batch  # told each batch's report (the command line's progress and metrics)
        # The batch's own exception: Spark hands the driver only its text, inside a Py4J trace.
        self.failure: BaseException | None = None
        self.registered: set[str] = set()  # catalog names this run has made sure of
        self.owners: dict[str, str] = {}  # Delta table path -> the source table writing it
        # Read from Delta once, then kept between batches: path -> floor, path -> the layout the table
        # was last made to hold (ensure_table). Forgotten when DDL is applied or a batch fails.
        self.floors: dict[str, dict[str, int] | None] = {}
        self.layouts: dict[str, TableShape] = {}
        # Delta tables this job created and has not written rows to yet: they hold no row, so a segment's
        # changes are appended, not merged. A table created by an earlier run is merged (a replayed batch's
        # write is then skipped by its idempotent-write id, as every MERGE's).
        self.rowless: set[str] = set()
        # Merge-on-read (target.merge_every_seconds): batches wait in the change buffer between MERGEs.
        self.buffer = (ChangeBuffer(buffer_location(config.target_path), config.merge_every_seconds, self.app_id)
                       if config.merge_every_seconds and config.target_path is not None else None)
        self.last_batch_id: int | None = None  # the newest batch whose function has finished
        # A source that caps its batches can cut a batch between a DDL and older rows of other partitions.
        self.hold = DdlHold(config.source, config.checkpoint) if config.checkpoint else None
        # Whoever writes the tables holds it: the stream's thread for a batch it merges, the buffer's merger
        # (jobs/buffer_merger.py) for the buffer. A batch that only appends to the buffer does not wait for it.
        self._merging = threading.Lock()
        self.merger: BufferMerger | None = None  # merge-on-read: set by start_query

    def __call__(self, records: DataFrame, batch_id: int) -> None:
        try:
            spark = records.sparkSession
            self.config = resolve_locations(spark, self.config)
            parsed = messages = parse_messages(records).persist()
            try:
                if self.hold is not None:
                    messages = self.hold.release(spark, parsed, batch_id)
                if self.buffer is None:
                    with self._merging:
                        self.last_report = self._apply(spark, messages, batch_id)
                else:
                    self.last_report = self._buffered(spark, messages, batch_id)
                self.last_batch_id = batch_id
            finally:
                messages.unpersist()
                parsed.unpersist()
        except BaseException as exc:
            self.failure = exc
            with self._merging:  # not while the buffer's merger reads the same state
                self._forget()  # the batch may have changed a table half-way: read its state afresh next time
            if is_java_failure(exc):
                # Short, so Spark's stop check does not overflow on it (jobs/failures.py); the runner
                # reports `self.failure`, the original.
                raise short_failure(exc, batch_id, job_group_of(records.sparkSession)) from None
            raise
        if self.on_batch is not None:
            self.on_batch(self.last_report)

    def _counted(self, report: BatchReport, summary: BatchSummary) -> BatchReport:
        keeps = self.config.tables.keeps
        counted = [count for count in summary.counts if count.table is None or keeps(count.database, count.table)]
        rows = {f"{c.database}.{c.table}": c.rows for c in counted if not c.is_ddl}
        newest = max((c.newest_ms for c in counted if c.newest_ms is not None), default=None)
        return replace(report, rows=tuple(sorted(rows.items())), newest_commit_ms=newest)

    def _forget(self) -> None:
        self.floors.clear()
        self.layouts.clear()
        self.rowless.clear()

    def _summary(self, messages: DataFrame, *, layouts: bool = True) -> BatchSummary:
        """One Spark action for every question the driver has about the batch (transforms/summary.py); a
        message the pipeline cannot apply stops it here, before anything is written. `layouts=False`: a
        batch bound for the change buffer, which needs no table layout."""
        summary = BatchSummary.of(summary_rows(messages, layouts=layouts).collect(), TABLE_DDL, layouts=layouts)
        if summary.bad is not None:
            row = summary.bad
            raise MessageError(
                f"{row['topic']}[{row['partition']}]@{row['offset']} is not a canal-JSON change this pipeline "
                f"can apply: {str(row['value'])[:300]!r}. Fix the producer, or move the query's checkpoint "
                "past this offset")
        return summary

    def _buffered(self, spark: Any, messages: DataFrame, batch_id: int) -> BatchReport:
        """Merge-on-read: the batch goes to the change buffer (one append, whatever the merger is doing),
        unless it changes a table's schema: then the buffer and the batch are applied together, at once.
        CREATE TABLE alone is applied at once and the batch's rows still go to the buffer: a new table's
        rows need it to exist, not to be merged, and its floor (the statement's sequence) keeps any older
        buffered rows of the name out of the table and of `current_rows` alike."""
        assert self.buffer is not None
        summary = self._summary(messages, layouts=False)  # a schema change merges, and sums the layouts up then
        ddl = schema_changes(list(summary.ddl))
        if self.buffer.legacy(spark) or any(change["type"] != CREATE for change in ddl):
            with self._merging:
                report = self._merge_buffer(spark, batch_id, messages, batch_id)
                assert report is not None
                self.last_batch_id = batch_id  # under the lock: a merge after it starts from this batch
                return report
        created: set[str] = set()
        if ddl:
            with self._merging:
                for change in ddl:
                    created |= self._apply_schema_change(spark, change)
        self.buffer.append(spark, messages, batch_id)
        return self._counted(BatchReport(batch_id, tuple(sorted(created))), summary)

    def _merge_buffer(self, spark: Any, through: int, messages: DataFrame | None, batch_id: int,
                      first_segment: int = 0) -> BatchReport | None:
        """Apply the buffered messages of the batches up to `through` and the batch's (`messages`) together,
        then delete those from the buffer. None when there was nothing to apply. Holds `_merging`."""
        assert self.buffer is not None
        pending = self.buffer.pending(spark, through)
        parts = [part for part in (pending, messages) if part is not None]
        if not parts:
            self.buffer.merged(spark, through, deleting=False)  # nothing to apply: only restart the interval
            return None
        combined = parts[0] if len(parts) == 1 else parts[0].unionByName(parts[1])
        combined = combined.persist()
        try:
            report = self._apply(spark, combined, batch_id, first_segment, self.buffer.first_unmerged(through))
        finally:
            combined.unpersist()
        self.buffer.merged(spark, through, deleting=pending is not None)
        return report

    def merge_buffer(self, spark: Any, *, force: bool = False) -> BatchReport | None:
        """Apply the buffer once it is due (or at once with `force`, when the query has stopped), from a thread
        other than the stream's (jobs/buffer_merger.py), while the stream goes on appending to it. It takes
        the batches finished when it starts; its Delta writes take idempotent-write versions between that
        batch's and the next one's."""
        if self.buffer is None or not (force or self.buffer.due()):
            return None
        with self._merging:
            through = self.last_batch_id
            if through is None:
                return None
            started = time.perf_counter()
            try:
                report = self._merge_buffer(spark, through, None, through, first_segment=SEGMENTS_PER_BATCH // 2)
            except BaseException as exc:
                self.failure = exc
                self._forget()  # as after a failed batch: the tables' state is read afresh next time
                raise
            if report is not None:
                log.info("merged the change buffer up to batch %d in %.1f s", through, time.perf_counter() - started)
        if self.buffer.vacuum_if_due(spark):  # outside the lock: a schema change need not wait for it
            log.info("vacuumed the change buffer's merged files")
        if trimmed := self.buffer.trim_log_if_due(spark):
            log.debug("deleted %d old log files of the change buffer", trimmed)
        return report

    def _apply(self, spark: Any, messages: DataFrame, batch_id: int, first_segment: int = 0,
               first_batch: int | None = None) -> BatchReport:
        """Apply the messages to the tables. `first_batch`: a merge of the change buffer applies the batches
        from it to `batch_id` (for the maintenance cadence); otherwise the batch alone."""
        summary = self._summary(messages)
        ddl = schema_changes(list(summary.ddl))
        dml = messages.where(~F.col("is_ddl"))
        tables: set[str] = set()
        # Each table's changes are cut only at its own schema changes: a DDL of one table leaves the
        # others' changes to merge later, together (segments.py). Without DDL: one segment, its layouts known.
        cuts = Segments()
        for index, boundary in enumerate([*ddl, None]):
            if boundary is None:
                segment = dml.where(cuts.rest())
            else:
                touched = self._touched(boundary)
                segment = dml.where(cuts.before(touched, boundary[SEQ]))
            layouts = summary.layouts if not ddl else tuple(shape_rows(segment).collect())
            # One Delta transaction id per segment: a re-run batch skips the merges it already made.
            txn = Txn(self.app_id, batch_id * SEGMENTS_PER_BATCH + first_segment + index)
            tables |= self._merge(spark, segment, layouts, txn)
            if boundary is not None:
                tables |= self._apply_schema_change(spark, boundary)
                cuts.cut(touched, boundary[SEQ])
        log.debug("batch %d: %d table(s), %d schema change(s)", batch_id, len(tables), len(ddl))
        self._register(spark, tables)
        if self.config.maintenance.due(batch_id if first_batch is None else first_batch, batch_id):
            paths = sorted({self.config.table_path(*name.split(".", 1)) for name in tables})
            maintain(spark, paths, self.config.maintenance, scd_type=self.config.scd_type)
        return self._counted(BatchReport(batch_id, tuple(sorted(tables))), summary)

    def _merge(self, spark: Any, segment: DataFrame, all_layouts: tuple[Any, ...], txn: Txn) -> set[str]:
        keeps = self.config.tables.keeps
        layouts = [row for row in all_layouts if keeps(row["database"], row["table"])]
        # A table created or renamed into this name at its floor: older changes belonged to a table
        # that held the name before (a replay sends them again); neither their rows nor columns apply.
        floors = {name: self._floor(spark, *name) for name in {(r["database"], r["table"]) for r in layouts}}
        kept = [row for row in layouts if (floor := floors[(row["database"], row["table"])]) is None
                or tuple(row["newest"]) > (floor["ts"], floor["partition"], floor["offset"])]
        shapes = fold_shapes(kept)
        ranges = key_ranges(kept, shapes)
        merges: list[tuple[str, DataFrame, TableShape]] = []
        for (database, table), shape in sorted(shapes.items()):
            path = self.config.table_path(database, table)
            owner = self.owners.setdefault(path, f"{database}.{table}")
            if owner != f"{database}.{table}":
                raise ConfigError(f"{owner} and {database}.{table} would both write the Delta table {path}; "
                                  "give one of them its own name with tables.rename (or exclude it)")
            if self.layouts.get(path) != shape:  # the table already has every column of this layout
                if ensure_table(spark, path, shape, change_data_feed=self.config.maintenance.change_data_feed):
                    self.rowless.add(path)
                self.layouts[path] = shape
            changes = changes_of(segment, shape, self.config.source_time_zone)
            if (floor := floors[(database, table)]) is not None:
                changes = changes.where(F.col(SEQ) > seq_literal(floor))
            merges.append((path, changes, shape))
        if self.config.scd_type == 2:
            for path, changes, shape in merges:
                ensure_history_column(spark, path)
                merge_history(spark, path, changes, shape, txn)
        else:
            writes = [self._write(spark, path, changes, shape, ranges) for path, changes, shape in merges]
            parallel_merges(spark, writes, txn)
            self.rowless.difference_update(path for path, _, _ in merges)
        return {f"{database}.{table}" for database, table in shapes}

    def _write(self, spark: Any, path: str, changes: DataFrame, shape: TableShape,
               ranges: dict[tuple[str, str], tuple[int, int]]) -> Callable[[], None]:
        """The write of one table's segment: an append into a table this job created and has not written
        yet (every key is new: the MERGE would only insert), else the sequence-guarded MERGE."""
        latest = latest_per_key(changes, shape.primary_key)
        if path in self.rowless:
            return functools.partial(append_latest, spark, path, latest, shape)
        return functools.partial(merge_latest, spark, path, latest, shape,
                                 key_range=ranges.get((shape.database, shape.table)))

    def _register(self, spark: Any, tables: set[str]) -> None:
        """Catalog targets: name each Delta table the batch wrote in the catalog."""
        for source in sorted(tables):
            name = self.config.catalog_name(*source.split(".", 1))
            path = self.config.table_path(*source.split(".", 1))
            if name is not None and name not in self.registered and exists(spark, path):
                register(spark, name, path)
                self.registered.add(name)

    def _floor(self, spark: Any, database: str, table: str) -> dict[str, int] | None:
        """The table's floor, read from Delta once and then remembered: only this job's DDL sets it,
        and applying DDL forgets what was read (`_forget`)."""
        path = self.config.table_path(database, table)
        if path not in self.floors:
            self.floors[path] = table_floor(spark, path) if exists(spark, path) else None
        return self.floors[path]

    def _apply_schema_change(self, spark: Any, ddl: Any) -> set[str]:
        """`_apply_ddl`, after which layouts and floors are read again (schema changes rewrite them). Tables
        the statement does not name keep holding no row if they held none."""
        rowless = self.rowless - {self.config.table_path(*name) for name in self._touched(ddl)}
        self._forget()
        self.rowless = rowless
        return self._apply_ddl(spark, ddl)

    @staticmethod
    def _touched(ddl: Any) -> set[tuple[str, str]]:
        """The source tables whose changes must be merged before `ddl` applies: its own, and for a
        RENAME (or an ALTER that renames) every table the statement names."""
        touched = {(str(ddl["database"]), str(ddl["table"]))}
        if ddl["type"] in (RENAME, ALTER):
            touched |= {(name.schema, name.table)
                        for name in read_ddl(ddl["database"], ddl["table"], ddl["sql"]).tables}
        return touched

    def _apply_ddl(self, spark: Any, ddl: Any) -> set[str]:
        """Apply one schema change; returns the tables ("database.table") whose Delta table it wrote."""
        if ddl["type"] == RENAME:
            return self._rename(spark, ddl)
        if not self.config.tables.keeps(ddl["database"], ddl["table"]):
            return set()
        if ddl["type"] == DROP and self.config.on_drop_table == "ignore":
            log.info("kept %s.%s as it was (on_drop_table: ignore)", ddl["database"], ddl["table"])
            return set()
        path = self.config.table_path(ddl["database"], ddl["table"])
        if ddl["type"] == CREATE:
            shape = created_shape(ddl["sql"], ddl["database"])
            assert shape is not None  # schema_changes keeps only CREATE TABLE it can read
            created = create_table(spark, path, shape, ddl[SEQ], if_not_exists=if_not_exists(ddl["sql"]),
                                   history=self.config.scd_type == 2,
                                   change_data_feed=self.config.maintenance.change_data_feed)
            if created:
                self.rowless.add(path)
            return {f"{ddl['database']}.{ddl['table']}"} if created else set()
        if not exists(spark, path):
            return set()
        if ddl["type"] in (TRUNCATE, DROP):
            self._empty(spark, path, ddl)
        else:
            edits = read_ddl(ddl["database"], ddl["table"], ddl["sql"]).column_edits
            ColumnEditor(spark, path, ddl, source_time_zone=self.config.source_time_zone,
                         history=self.config.scd_type == 2).apply(edits)
        log.info("applied %s to %s.%s: %s", ddl["type"], ddl["database"], ddl["table"], ddl["sql"][:200])
        return {f"{ddl['database']}.{ddl['table']}"}

    def _empty(self, spark: Any, path: str, ddl: Any) -> None:
        if self.config.scd_type == 2:
            close_all(spark, path, ddl[COMMIT_TS])
        else:
            empty_table(spark, path, ddl[SEQ])

    def _rename(self, spark: Any, ddl: Any) -> set[str]:
        """Rows follow the table to its new name; a name the tables config excludes takes none."""
        if self.config.on_rename_table == "ignore":
            log.info("RENAME TABLE not followed (on_rename_table: ignore): %s", ddl["sql"][:200])
            return set()
        keeps = self.config.tables.keeps
        holds = final_sources(read_ddl(ddl["database"], ddl["table"], ddl["sql"]).renames)

        def path(name: TableName) -> str:
            return self.config.table_path(name.schema, name.table)

        moves = {path(name): path(source) for name, source in holds.items()
                 if source is not None and source != name and keeps(name.schema, name.table)
                 and keeps(source.schema, source.table)}
        written = set(move_tables(spark, moves, ddl[SEQ], change_data_feed=self.config.maintenance.change_data_feed))
        gone = [name for name, source in holds.items() if source is None and keeps(name.schema, name.table)]
        for name in gone:
            if exists(spark, path(name)):
                self._empty(spark, path(name), ddl)
                written.add(path(name))
        log.info("applied RENAME TABLE (%d table(s) moved): %s", len(moves), ddl["sql"][:200])
        return {f"{n.schema}.{n.table}" for n in holds if path(n) in written}


def start_query(spark: Any, records: DataFrame, config: PipelineConfig, *, once: bool = False,
                batch: ApplyBatch | None = None) -> Any:
    """Start the streaming query; `once` (or trigger available_now) processes what is there and stops.
    `batch`: the batch function to run (default a new ApplyBatch), for a caller that reads its reports.
    Merge-on-read: the buffer's merger starts with the query (`batch.merger`); whoever started the query
    calls `batch.merger.finish()` once it has ended, which merges what is left and raises a merge's failure."""
    from spark_pipelines.jobs.buffer_merger import BufferMerger

    batch = batch or ApplyBatch(config)
    writer = (records.writeStream.foreachBatch(batch)
              .option("checkpointLocation", config.checkpoint).queryName("lakefeed-apply"))
    if once or config.available_now:
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=config.processing_time or "10 seconds")
    query = writer.start()
    if batch.buffer is not None:
        batch.merger = BufferMerger(spark, batch, query)
    return query

"""A table's changes are cut only at its own schema changes (jobs/segments.py): in a batch where table `x`
changes its columns three times while `y` takes rows throughout, `x` is still applied with the columns in
force at each commit, and `y` is merged once (it used to be merged at every cut of `x`)."""

from pathlib import Path
from typing import Any

from spark_pipelines.config import PipelineConfig, SourceConfig
from spark_pipelines.io.delta import live_rows
from spark_pipelines.jobs.apply import ApplyBatch
from tests.spark_pipelines.canal import ddl, dml, records
from tests.spark_pipelines.jobs.flow import row_writes


def _y(key: int, ts: int) -> str:
    return dml("y", "INSERT", {"id": str(key), "name": f"y{key}"}, commit_ts=ts << 18, es=ts)


def test_one_tables_ddl_does_not_cut_the_others_changes(spark: Any, tmp_path: Path) -> None:
    x_types = {"id": "int", "v": "float"}
    batch = [
        dml("x", "INSERT", {"id": "1", "v": "3.14159"}, types=x_types, commit_ts=1 << 18, es=1), _y(1, 2),
        ddl("x", "ALTER", "ALTER TABLE x ADD COLUMN s VARCHAR(12) NOT NULL DEFAULT 'new' FIRST", commit_ts=3 << 18,
            es=3),
        _y(2, 4),
        dml("x", "INSERT", {"s": "mine", "id": "2", "v": "2.5"}, types={"s": "varchar(12)", **x_types},
            commit_ts=5 << 18, es=5),
        ddl("x", "ALTER", "ALTER TABLE x MODIFY v DOUBLE", commit_ts=6 << 18, es=6), _y(3, 7),
        dml("x", "INSERT", {"s": "d", "id": "3", "v": "3.14159"}, types={"s": "varchar(12)", "id": "int",
                                                                           "v": "double"},
            commit_ts=8 << 18, es=8),
        ddl("x", "ALTER", "ALTER TABLE x DROP COLUMN s", commit_ts=9 << 18, es=9), _y(4, 10),
        dml("y", "DELETE", {"id": "1", "name": "y1"}, commit_ts=11 << 18, es=11),
    ]
    config = PipelineConfig(SourceConfig("unused:9092", ("cdc",)), str(tmp_path / "delta"), str(tmp_path / "ckpt"))
    ApplyBatch(config)(records(spark, batch), 0)

    x = live_rows(spark, config.table_path("shop", "x"))
    assert [f.simpleString() for f in x.schema] == ["id:int", "v:double"]
    # FLOAT 3.14159 stored before MODIFY reads back as MySQL converts the 4-byte value; the row after it is exact.
    assert sorted(tuple(r) for r in x.collect()) == [(1, 3.141590118408203), (2, 2.5), (3, 3.14159)]
    y_path = config.table_path("shop", "y")
    assert sorted(tuple(r) for r in live_rows(spark, y_path).collect()) == [(2, "y2"), (3, "y3"), (4, "y4")]
    assert len(row_writes(spark, y_path)) == 1  # was 4: one per segment of x's three cuts, and the last

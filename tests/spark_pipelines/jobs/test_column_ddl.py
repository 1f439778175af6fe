"""ALTER TABLE column clauses through ApplyBatch on real Delta (canal-JSON built in the test): in one batch,
a FLOAT row, then MODIFY to DOUBLE plus ADD COLUMN ... DEFAULT ... FIRST, then a row of the new layout,
for SCD type 1 and type 2 (where the open versions take the default); an added column whose values MySQL
computes per row stops the batch naming the statement."""

import struct
from pathlib import Path
from typing import Any

import pytest

from spark_pipelines.config import PipelineConfig, SourceConfig
from spark_pipelines.errors import DDLError
from spark_pipelines.io.delta import live_rows
from spark_pipelines.io.history import current_rows
from spark_pipelines.jobs.apply import ApplyBatch
from tests.spark_pipelines.canal import ddl, dml, records

OLD = {"id": "int", "f": "float"}
NEW = {"s": "varchar(5)", "id": "int", "f": "double"}
ALTER = "ALTER TABLE t MODIFY f DOUBLE, ADD COLUMN s VARCHAR(5) NOT NULL DEFAULT 'new' FIRST"
BATCH = [
    dml("t", "INSERT", {"id": "1", "f": "3.14159"}, types=OLD, commit_ts=1 << 18, es=1),
    dml("t", "INSERT", {"id": "2", "f": "1.5"}, types=OLD, commit_ts=2 << 18, es=2),
    ddl("t", "ALTER", ALTER, commit_ts=3 << 18, es=3),
    dml("t", "UPDATE", {"s": "mine", "id": "2", "f": "2.5"}, old={"s": "new", "f": "1.5"}, types=NEW,
        commit_ts=4 << 18, es=4),
]
# As MariaDB returns the table after the batch: the FLOAT widened, the older row with the DEFAULT.
EXPECTED = [("mine", 2, 2.5), ("new", 1, 3.141590118408203)]


def _config(tmp_path: Path, scd_type: int) -> PipelineConfig:
    return PipelineConfig(SourceConfig("unused:9092", ("cdc",)), str(tmp_path / "delta"), str(tmp_path / "ckpt"),
                          scd_type=scd_type)


@pytest.mark.parametrize("scd_type", [1, 2])
def test_modify_and_add_first_with_default_in_one_batch(spark: Any, tmp_path: Path, scd_type: int) -> None:
    config = _config(tmp_path, scd_type)
    ApplyBatch(config)(records(spark, BATCH), 0)
    path = config.table_path("shop", "t")
    table = live_rows(spark, path) if scd_type == 1 else current_rows(spark, path)
    assert table.columns == ["s", "id", "f"]
    assert dict(table.dtypes)["f"] == "double"
    assert sorted(tuple(r) for r in table.collect()) == EXPECTED
    if scd_type == 2:  # id 2's first version was open at the DDL: it took the default, then closed
        versions = spark.read.format("delta").load(path).where("id = 2").orderBy("_lakefeed_seq")
        assert [(r["s"], r["f"]) for r in versions.collect()] == [("new", 1.5), ("mine", 2.5)]


def test_a_column_mysql_computes_per_row_stops_the_batch(spark: Any, tmp_path: Path) -> None:
    sql = "ALTER TABLE t ADD COLUMN n INT NOT NULL AUTO_INCREMENT UNIQUE"
    batch = [BATCH[0], ddl("t", "ALTER", sql, commit_ts=3 << 18, es=3)]
    with pytest.raises(DDLError, match="cannot compute") as error:
        ApplyBatch(_config(tmp_path, 1))(records(spark, batch), 0)
    assert sql in str(error.value)


def test_double_to_float_rounds_the_older_rows_to_float(spark: Any, tmp_path: Path) -> None:
    """MySQL stores the older DOUBLE values as FLOAT; the Delta column stays DOUBLE (Delta cannot narrow)
    and holds exactly the float values."""
    batch = [
        dml("g", "INSERT", {"id": "1", "g": "3.14159265358979"}, types={"id": "int", "g": "double"},
            commit_ts=1 << 18, es=1),
        ddl("g", "ALTER", "ALTER TABLE g MODIFY g FLOAT", commit_ts=2 << 18, es=2),
        dml("g", "INSERT", {"id": "2", "g": "2.5"}, types={"id": "int", "g": "float"}, commit_ts=3 << 18, es=3),
    ]
    config = _config(tmp_path, 1)
    ApplyBatch(config)(records(spark, batch), 0)
    rows = sorted(tuple(r) for r in live_rows(spark, config.table_path("shop", "g")).collect())
    as_float = struct.unpack("f", struct.pack("f", 3.14159265358979))[0]
    assert rows == [(1, as_float), (2, 2.5)]

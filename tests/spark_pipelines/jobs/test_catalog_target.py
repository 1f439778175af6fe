"""A catalog target (`target.catalog` + `target.database`) with every maintenance option, through ApplyBatch
on real Spark and Delta: tables are named in the catalog (renames into another database too), read by name
with later column changes showing, Change Data Feed is on, tombstone purge and VACUUM run."""

import uuid
from pathlib import Path
from typing import Any

import pytest

from spark_pipelines.config import parse_config
from spark_pipelines.errors import ConfigError
from spark_pipelines.jobs.apply import ApplyBatch
from tests.spark_pipelines.canal import dml, records

ES = 1_700_000_000_000


def _config(tmp_path: Path, database: str, renamed: str) -> Any:
    return parse_config({
        "source": {"bootstrap_servers": "unused:9092", "topics": ["cdc"]},
        "target": {"catalog": "spark_catalog", "database": database},
        "tables": {"exclude": ["shop.tmp_*"], "rename": {"shop.acct2": f"{renamed}.accounts"}},
        "maintenance": {"change_data_feed": True, "optimize_every_batches": 2, "vacuum_retain_hours": 168,
                        "purge_tombstones_after_seconds": 60},
        "checkpoint": str(tmp_path / "checkpoint"),
    })


def test_catalog_target_with_maintenance(spark: Any, tmp_path: Path) -> None:
    database, renamed = f"lake_{uuid.uuid4().hex[:8]}", f"crm_{uuid.uuid4().hex[:8]}"
    config = _config(tmp_path, database, renamed)
    apply = ApplyBatch(config)
    apply(records(spark, [
        dml("acct", "INSERT", {"id": "1", "owner": "ann"}, es=ES),
        dml("acct", "INSERT", {"id": "2", "owner": "bob"}, es=ES + 1),
        dml("acct", "DELETE", {"id": "2", "owner": "bob"}, es=ES + 2),
        dml("acct2", "INSERT", {"id": "7", "owner": "eve"}, es=ES + 3),
        dml("tmp_x", "INSERT", {"id": "1", "owner": "excluded"}, es=ES + 4),
    ]), 0)
    apply(records(spark, [
        dml("acct", "UPDATE", {"id": "1", "owner": "amy", "note": "new column"}, old={"owner": "ann"},
            types={"id": "int", "owner": "varchar(20)", "note": "varchar(20)"}, es=ES + 5),
    ], partition=1), 1)

    acct = f"spark_catalog.{database}.acct"
    # The tombstone of id 2 committed in 2023: older than 60 s, so the purge removed it.
    assert [tuple(row) for row in spark.table(acct).select("id", "owner", "note", "_lakefeed_deleted").collect()] \
        == [(1, "amy", "new column", False)]
    assert [tuple(row) for row in spark.table(f"spark_catalog.{renamed}.accounts").select("id", "owner").collect()] \
        == [(7, "eve")]
    assert not spark.catalog.tableExists(f"spark_catalog.{database}.tmp_x")
    # Stored under the database's own location.
    location = spark.sql(f"DESCRIBE DETAIL {acct}").collect()[0]["location"]
    assert location.endswith(f"/{database}.db/acct"), location

    properties = {row["key"]: row["value"] for row in spark.sql(f"SHOW TBLPROPERTIES {acct}").collect()}
    assert properties.get("delta.enableChangeDataFeed") == "true"
    changes = spark.read.option("readChangeFeed", "true").option("startingVersion", 0).table(acct)
    kinds = {(row["id"], row["_change_type"]) for row in changes.collect()}
    assert {(1, "insert"), (1, "update_postimage"), (2, "delete")} <= kinds, kinds

    # Maintenance ran after the second batch (every 2): the purge's DELETE and VACUUM. (OPTIMIZE found one
    # file, which commits nothing; tests/spark_pipelines/jobs/test_table_ddl.py sees it compact.)
    operations = {row["operation"] for row in spark.sql(f"DESCRIBE HISTORY {acct}").collect()}
    assert {"DELETE", "VACUUM START", "VACUUM END"} <= operations, operations

    # Another source database's `acct` would land in the same catalog table: refused, nothing written.
    with pytest.raises(ConfigError, match=r"shop\.acct and other\.acct would both write"):
        apply(records(spark, [dml("acct", "INSERT", {"id": "9", "owner": "x"}, es=ES + 9, database="other")]), 2)
    assert spark.table(acct).where("id = 9").count() == 0

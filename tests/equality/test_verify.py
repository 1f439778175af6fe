"""`spark-pipeline verify` on a real MariaDB table and a real Delta table in the pipeline's layout: an
equal table exits 0; a damaged one (a row changed, one deleted, one added) exits 1 naming exactly those
keys. Tombstones are not rows. Chunks of 7 rows make the comparison narrow from chunks to rows."""

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from lakefeed_testing import MySQLServer
from spark_pipelines.cli import main
from spark_pipelines.io.delta import DELETED, SEQ_TYPE, table_ref
from spark_pipelines.transforms.parse import COMMIT_TS, SEQ
from spark_pipelines.verify import RowDifference, _Diff, checksum, diff_rows
from spark_pipelines.verify_values import from_mysql

ROWS = 40
UTC = dt.UTC


def _rows() -> list[tuple[Any, ...]]:
    return [(i, f"name {i} é", Decimal(f"{i}.25"), 3.14159 * i, dt.datetime(2024, 1, 1, 12, 0, i % 60, tzinfo=UTC),
             bytes([i, 0, 255])) for i in range(1, ROWS + 1)]


@pytest.fixture
def tables(mysql: MySQLServer, database: str, spark: Any, tmp_path: Path) -> tuple[Path, str]:
    from pyspark.sql import types as T

    mysql.execute("CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(20), price DECIMAL(10,2), f FLOAT, "
                  "ts TIMESTAMP(0) NULL, b VARBINARY(8))", database=database)
    with mysql.connect(database) as conn, conn.cursor() as cur:
        cur.execute("SET time_zone = '+00:00'")
        cur.executemany("INSERT INTO items VALUES (%s, %s, %s, %s, %s, %s)",
                        [(*row[:4], row[4].replace(tzinfo=None), row[5]) for row in _rows()])
    schema = T.StructType([
        T.StructField("id", T.IntegerType()), T.StructField("name", T.StringType()),
        T.StructField("price", T.DecimalType(10, 2)), T.StructField("f", T.FloatType()),
        T.StructField("ts", T.TimestampType()), T.StructField("b", T.BinaryType()),
        T.StructField(SEQ, SEQ_TYPE), T.StructField(DELETED, T.BooleanType()),
        T.StructField(COMMIT_TS, T.TimestampType()),
    ])
    now = dt.datetime.now(UTC)
    rows = [(*row, (1, 0, i), False, now) for i, row in enumerate(_rows())]
    rows.append((999, None, None, None, None, None, (2, 0, 99), True, now))  # a tombstone: deleted in MySQL
    path = tmp_path / "delta" / database / "items"
    spark.createDataFrame(rows, schema).write.format("delta").save(str(path))
    config = tmp_path / "pipeline.yaml"
    config.write_text(yaml.safe_dump({
        "source": {"bootstrap_servers": "127.0.0.1:9", "topics": ["t"]},
        "target": {"path": str(tmp_path / "delta")}, "tables": {"include": [f"{database}.*"]},
        "checkpoint": str(tmp_path / "checkpoint")}))
    return config, str(path)


def _verify(mysql: MySQLServer, config: Path, *args: str) -> Any:
    source = f"mysql://{mysql.user}:{mysql.password}@{mysql.host}:{mysql.port}?tls=false"
    return CliRunner().invoke(main, ["verify", "--config", str(config), "--source", source, "--chunk-size", "7",
                                     *args])


def test_verify_exits_0_on_an_equal_table_and_names_exactly_the_damaged_keys(
        mysql: MySQLServer, database: str, spark: Any, tables: tuple[Path, str]) -> None:
    config, path = tables
    result = _verify(mysql, config, "--output", "json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["equal"] and report["tables"][0]["mysql_rows"] == ROWS == report["tables"][0]["delta_rows"]
    assert report["tables"][0]["chunks"] == 6  # 40 rows in chunks of 7

    spark.sql(f"UPDATE {table_ref(path)} SET name = 'changed' WHERE id = 12")
    spark.sql(f"DELETE FROM {table_ref(path)} WHERE id = 30")
    spark.sql(f"INSERT INTO {table_ref(path)} SELECT 77, 'new', price, f, ts, b, {SEQ}, {DELETED}, {COMMIT_TS} "
              f"FROM {table_ref(path)} WHERE id = 1")
    result = _verify(mysql, config, "--output", "json")
    assert result.exit_code == 1, result.output
    table = json.loads(result.stdout)["tables"][0]
    assert {(d["kind"], tuple(d["key"])) for d in table["differences"]} == {
        ("changed", (12,)), ("missing", (30,)), ("extra", (77,))}
    assert table["counts"] == {"changed": 1, "missing": 1, "extra": 1}
    assert table["differing_chunks"] == 3 and table["differences"][0]["columns"] in (["name"], [])

    shown = _verify(mysql, config)
    assert shown.exit_code == 1
    assert f"{database}.items (id=12) changed: name: MySQL 'name 12 é', Delta 'changed'" in shown.stdout
    assert f"{database}.items (id=30) in MySQL, not in Delta" in shown.stdout
    assert f"{database}.items (id=77) in Delta, not in MySQL" in shown.stdout


def test_verify_refuses_a_bad_source_uri_and_an_unknown_table(mysql: MySQLServer, tables: tuple[Path, str]) -> None:
    config, _ = tables
    bad = CliRunner().invoke(main, ["verify", "--config", str(config), "--source", "postgres://x@h"])
    assert bad.exit_code == 2 and "--source: source URI" in bad.output and "mysql://" in bad.output
    unknown = _verify(mysql, config, "--table", "nope.items")
    assert unknown.exit_code == 2 and "--table nope.items: no such MySQL table" in unknown.output


def test_diff_narrows_to_keys_and_checksums_ignore_row_order() -> None:
    mysql = [(1, "a"), (2, "b"), (3, "c")]
    delta = [(3, "c"), (2, "B"), (4, "d"), (4, "d")]
    assert checksum(mysql) == checksum(list(reversed(mysql)))
    diff = _Diff()
    diff_rows(mysql, delta, (0,), ("id", "v"), diff)
    assert diff.counts == {"duplicate": 1, "missing": 1, "changed": 1, "extra": 1}
    assert RowDifference("changed", (2,), ("v",), (2, "b"), (2, "B")) in diff.listed


def test_float_is_compared_at_single_precision() -> None:
    # MySQL's client text for a FLOAT is its shortest form; Delta holds the float32 value itself.
    assert from_mysql("float32", 3.14159) == 3.141590118408203
    assert from_mysql("double", 3.14159) == 3.14159
    assert from_mysql("bit", b"\x01\x00") == 256
    assert from_mysql("date", "0000-00-00") is None


def test_json_values_compare_by_value_as_mysql_compares_json() -> None:
    from spark_pipelines.verify_values import canonical_json

    assert canonical_json('{"s": "i\\u00f18", "a": [1, 2]}') == canonical_json('{"a":[1,2],"s":"iñ8"}')
    assert canonical_json('{"s": "x"}') != canonical_json('{"s": "y"}')
    assert canonical_json(b'[1, {"b": null}]') == '[1,{"b":null}]'

"""Every MySQL column type from a real MariaDB binlog through the changefeed, Kafka and the streaming
job lands in Delta with the exact value and the documented Spark type (spark_pipelines/schemas.py)."""

import datetime
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

from changefeed.model import Checkpoint
from changefeed.source.capture import start_position
from lakefeed_testing import KafkaReference, MySQLServer
from spark_pipelines.config import PipelineConfig, SourceConfig
from spark_pipelines.io.delta import live_rows
from tests.changefeed.source.test_types_roundtrip import COLUMNS, NULLS, ROWS, _insert
from tests.spark_pipelines.jobs.flow import PIPELINE_PARAMS, deliver, run_once, settings_of

SPARK_TYPES = {
    "id": "bigint", "ti": "tinyint", "tiu": "smallint", "si": "smallint", "siu": "int", "mi": "int",
    "miu": "int", "i": "int", "iu": "bigint", "bi": "bigint", "biu": "decimal(20,0)", "d": "decimal(10,2)",
    "du": "decimal(30,10)", "f": "float", "db": "double", "b1": "bigint", "b10": "bigint",
    "b64": "decimal(20,0)", "bn": "binary", "vb": "binary", "tb": "binary", "bl": "binary", "lb": "binary",
    "dt": "date", "dtt": "timestamp_ntz", "dtt6": "timestamp_ntz", "ts": "timestamp", "ts0": "timestamp",
    "y": "smallint",
}


def _time_text(value: datetime.timedelta, digits: int) -> str:
    sign = "-" if value < datetime.timedelta(0) else ""
    total = abs(value)
    seconds = total.days * 86400 + total.seconds
    text = f"{sign}{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
    return text + (f".{total.microseconds:06d}"[: digits + 1] if digits else "")


TIME_DIGITS = {"tm": 0, "tm6": 6, "tm2": 2, "tm4": 4}


def _expected(row: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in row.items():
        if value is None:
            out[name] = None
        elif name in ("biu", "b64", "du"):
            out[name] = Decimal(value)
        elif isinstance(value, datetime.timedelta):
            out[name] = _time_text(value, TIME_DIGITS[name])
        elif isinstance(value, datetime.datetime) and value.tzinfo is not None:
            out[name] = value.astimezone(datetime.UTC).replace(tzinfo=None)  # Spark hands back UTC wall time
        else:
            out[name] = value
    return out


def test_every_type_lands_in_delta_exactly(
    mysql: MySQLServer, database: str, kafka: KafkaReference, spark: Any, tmp_path: Path
) -> None:
    settings = settings_of(mysql)
    start = Checkpoint(start_position(settings), 0)
    mysql.execute(f"CREATE TABLE t ({COLUMNS}) CHARACTER SET utf8mb4", database=database)
    _insert(mysql, database, [*ROWS, NULLS])
    mysql.execute("UPDATE t SET v = 'changed', st = 'y' WHERE id = 7", "DELETE FROM t WHERE id = 0",
                  database=database)
    topic = f"types-{uuid.uuid4().hex[:8]}"
    uri = f"kafka://{kafka.bootstrap_servers}/{topic}?partition-num=2&{PIPELINE_PARAMS}"
    deliver(settings, database, uri, start)

    config = PipelineConfig(SourceConfig(kafka.bootstrap_servers, (topic,)), str(tmp_path / "delta"),
                            str(tmp_path / "checkpoint"))
    run_once(spark, config)

    delta = live_rows(spark, config.table_path(database, "t"))
    types = dict(delta.dtypes)
    for name, spark_type in SPARK_TYPES.items():
        assert types[name] == spark_type, (name, types[name])
    assert all(types[name] == "string" for name in TIME_DIGITS)
    got = {row["id"]: row.asDict() for row in delta.collect()}
    expected_rows = [r for r in [*ROWS, NULLS] if r["id"] != 0]
    expected_rows = [{**r, "v": "changed", "st": "y"} if r["id"] == 7 else r for r in expected_rows]
    assert sorted(got) == sorted(r["id"] for r in expected_rows)
    for row in expected_rows:
        want = _expected(row)
        have = {k: (bytes(v) if isinstance(v, bytearray) else v) for k, v in got[row["id"]].items()}
        diff = {k: (have.get(k), v) for k, v in want.items() if have.get(k) != v}
        assert not diff, (row["id"], diff)

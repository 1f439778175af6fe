"""Build canal-JSON messages (TiCDC layout) and Kafka-source-shaped rows for tests."""

import json
from collections.abc import Mapping, Sequence
from typing import Any

JAVA_TYPES = {"int": 4, "bigint": 5, "varchar": 12, "decimal": 3}


def dml(table: str, kind: str, data: Mapping[str, str | None], *, old: Mapping[str, str | None] | None = None,
        types: Mapping[str, str] | None = None, pk: Sequence[str] = ("id",), es: int = 1_700_000_000_000,
        commit_ts: int | None = None, database: str = "shop") -> str:
    types = dict(types or {name: "int" if name == "id" else "varchar(20)" for name in data})
    message: dict[str, Any] = {
        "id": 0, "database": database, "table": table, "pkNames": list(pk), "isDdl": False, "type": kind,
        "es": es, "ts": es + 5, "sql": "",
        "sqlType": {name: JAVA_TYPES.get(t.split("(")[0], 12) for name, t in types.items()},
        "mysqlType": types, "data": [dict(data)], "old": [dict(old)] if old is not None else None,
    }
    if commit_ts is not None:
        message["_tidb"] = {"commitTs": commit_ts}
    return json.dumps(message)


def ddl(table: str, kind: str, sql: str, *, es: int = 1_700_000_000_000, commit_ts: int | None = None,
        database: str = "shop") -> str:
    message: dict[str, Any] = {
        "id": 0, "database": database, "table": table, "pkNames": None, "isDdl": True, "type": kind,
        "es": es, "ts": es + 5, "sql": sql, "sqlType": None, "mysqlType": None, "data": None, "old": None,
    }
    if commit_ts is not None:
        message["_tidb"] = {"commitTs": commit_ts}
    return json.dumps(message)


def records(spark: Any, values: Sequence[str], *, partition: int = 0, topic: str = "cdc") -> Any:
    """Rows as Spark's Kafka source gives them: value as bytes, offsets in list order; no message key (as
    TiCDC sends, message-key=none)."""
    return spark.createDataFrame(
        [(topic, partition, offset, None, value.encode()) for offset, value in enumerate(values)],
        "topic STRING, partition INT, offset LONG, key BINARY, value BINARY",
    )

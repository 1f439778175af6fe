"""Golden tests: canal-JSON for every column type and DDL kind, checked against TiCDC's documented output."""

import datetime
import pickle
from dataclasses import replace
from decimal import Decimal

import orjson

from changefeed.codec.canal_json import CanalJsonEncoder, CanalJsonOptions, split_key_changing_update
from changefeed.model import (
    Column,
    DDLEvent,
    DDLKind,
    Position,
    RowChange,
    RowKind,
    TableName,
    TableSchema,
    compose_tso,
)

ES = 1639633141221
TSO = compose_tso(ES, 3)
POS = Position("binlog.000001", 4)


def col(name: str, data_type: str, mysql_type: str, **extra: object) -> Column:
    return Column(name=name, data_type=data_type, mysql_type=mysql_type, **extra)  # type: ignore[arg-type]


TABLE = TableSchema(
    "shop",
    "t",
    (
        col("id", "int", "int", nullable=False),
        col("c_tiny_u", "tinyint", "tinyint unsigned", unsigned=True),
        col("c_int_u", "int", "int unsigned", unsigned=True),
        col("c_big_u", "bigint", "bigint unsigned", unsigned=True),
        col("c_big", "bigint", "bigint"),
        col("c_dec", "decimal", "decimal(10,4)", precision=10, scale=4),
        col("c_float", "float", "float"),
        col("c_double", "double", "double"),
        col("c_bit", "bit", "bit(64)", length=64),
        col("c_char", "char", "char(16)", charset="utf8mb4"),
        col("c_varchar", "varchar", "varchar(16)", charset="utf8mb4"),
        col("c_text", "text", "text", charset="utf8mb4"),
        col("c_binary", "binary", "binary(4)", charset="binary"),
        col("c_varbinary", "varbinary", "varbinary(16)", charset="binary"),
        col("c_blob", "blob", "blob", charset="binary"),
        col("c_enum", "enum", "enum('a','b','c')", elements=("a", "b", "c"), charset="utf8mb4"),
        col("c_set", "set", "set('a','b','c')", elements=("a", "b", "c"), charset="utf8mb4"),
        col("c_date", "date", "date"),
        col("c_datetime", "datetime", "datetime(3)", fsp=3),
        col("c_timestamp", "timestamp", "timestamp(6)", fsp=6),
        col("c_time", "time", "time(2)", fsp=2),
        col("c_year", "year", "year"),
        col("c_json", "json", "json"),
        col("c_null", "varchar", "varchar(8)", charset="utf8mb4"),
    ),
    primary_key=("id",),
)

ROW = {
    "id": 2,
    "c_tiny_u": 255,
    "c_int_u": 4294967295,
    "c_big_u": 18446744073709551615,
    "c_big": -9223372036854775808,
    "c_dec": Decimal("123.4560"),
    "c_float": 1.100000023841858,  # the float32 nearest 1.1, as the binlog carries it
    "c_double": 0.1,
    "c_bit": b"\x00\x00\x00\x00\x00\x00\x00\x41",
    "c_char": "abc",
    "c_varchar": "zoë 🐍",
    "c_text": "line1\nline2",
    "c_binary": b"\x05\x07\n\x0f",
    "c_varbinary": bytes([36, 50, 43, 99, 120, 60, 38, 255, 254]),
    "c_blob": b"\x00\xff",
    "c_enum": "b",
    "c_set": "a,c",
    "c_date": datetime.date(2024, 2, 29),
    "c_datetime": datetime.datetime(2024, 2, 29, 23, 59, 58, 123000),
    "c_timestamp": datetime.datetime(2024, 3, 1, 1, 2, 3, 4, tzinfo=datetime.UTC),
    "c_time": -datetime.timedelta(hours=838, minutes=59, seconds=58, microseconds=990000),
    "c_year": 2155,
    "c_json": '{"a": [1, 2]}',
    "c_null": None,
}

EXPECTED_DATA = {
    "id": "2",
    "c_tiny_u": "255",
    "c_int_u": "4294967295",
    "c_big_u": "18446744073709551615",
    "c_big": "-9223372036854775808",
    "c_dec": "123.4560",
    "c_float": "1.1",
    "c_double": "0.1",
    "c_bit": "65",
    "c_char": "abc",
    "c_varchar": "zoë 🐍",
    "c_text": "line1\nline2",
    "c_binary": "\u0005\u0007\n\u000f",
    "c_varbinary": "$2+cx<&ÿþ",
    "c_blob": "\u0000ÿ",
    "c_enum": "2",
    "c_set": "5",
    "c_date": "2024-02-29",
    "c_datetime": "2024-02-29 23:59:58.123",
    "c_timestamp": "2024-03-01 01:02:03.000004",
    "c_time": "-838:59:58.99",
    "c_year": "2155",
    "c_json": '{"a": [1, 2]}',
    "c_null": None,
}

EXPECTED_SQL_TYPE = {
    "id": 4,
    "c_tiny_u": 5,
    "c_int_u": -5,
    "c_big_u": 3,
    "c_big": -5,
    "c_dec": 3,
    "c_float": 7,
    "c_double": 8,
    "c_bit": -7,
    "c_char": 1,
    "c_varchar": 12,
    "c_text": 2005,
    "c_binary": 2004,
    "c_varbinary": 2004,
    "c_blob": 2004,
    "c_enum": 4,
    "c_set": -7,
    "c_date": 91,
    "c_datetime": 93,
    "c_timestamp": 93,
    "c_time": 92,
    "c_year": 12,
    "c_json": 12,
    "c_null": 12,
}

EXPECTED_MYSQL_TYPE = {
    "id": "int",
    "c_tiny_u": "tinyint unsigned",
    "c_int_u": "int unsigned",
    "c_big_u": "bigint unsigned",
    "c_big": "bigint",
    "c_dec": "decimal",
    "c_float": "float",
    "c_double": "double",
    "c_bit": "bit",
    "c_char": "char",
    "c_varchar": "varchar",
    "c_text": "text",
    "c_binary": "binary",
    "c_varbinary": "varbinary",
    "c_blob": "blob",
    "c_enum": "enum",
    "c_set": "set",
    "c_date": "date",
    "c_datetime": "datetime",
    "c_timestamp": "timestamp",
    "c_time": "time",
    "c_year": "year",
    "c_json": "json",
    "c_null": "varchar",
}


def encoder(**options: bool | str) -> CanalJsonEncoder:
    return CanalJsonEncoder(CanalJsonOptions(**options), clock=lambda: 1639633142960)


def change(kind: RowKind, before: dict[str, object] | None, after: dict[str, object] | None) -> RowChange:
    return RowChange(kind, TABLE, before, after, TSO, POS, 0)  # type: ignore[arg-type]


def test_insert_has_every_type_formatted_as_ticdc() -> None:
    encoded = encoder().encode_row(change(RowKind.INSERT, None, ROW))
    message = orjson.loads(encoded.value)
    assert list(message) == [
        "id",
        "database",
        "table",
        "pkNames",
        "isDdl",
        "type",
        "es",
        "ts",
        "sql",
        "sqlType",
        "mysqlType",
        "old",
        "data",
    ]
    assert message["id"] == 0 and message["database"] == "shop" and message["table"] == "t"
    assert message["pkNames"] == ["id"] and message["isDdl"] is False and message["type"] == "INSERT"
    assert message["es"] == ES and message["ts"] == 1639633142960 and message["sql"] == ""
    assert message["data"] == [EXPECTED_DATA]
    assert message["sqlType"] == EXPECTED_SQL_TYPE
    assert message["mysqlType"] == EXPECTED_MYSQL_TYPE
    assert message["old"] is None
    assert orjson.loads(encoded.key or b"") == {"database": "shop", "table": "t", "key": {"id": "2"}}


def test_unsigned_values_in_signed_range_keep_the_narrow_sql_type() -> None:
    small = {**ROW, "c_tiny_u": 127, "c_int_u": 2147483647, "c_big_u": 9223372036854775807}
    sql_type = orjson.loads(encoder().encode_row(change(RowKind.INSERT, None, small)).value)["sqlType"]
    assert (sql_type["c_tiny_u"], sql_type["c_int_u"], sql_type["c_big_u"]) == (-6, 4, -5)


def test_update_carries_the_whole_old_row_and_delete_the_old_row_as_data() -> None:
    after = {**ROW, "c_varchar": "new"}
    update = orjson.loads(encoder().encode_row(change(RowKind.UPDATE, ROW, after)).value)
    assert update["type"] == "UPDATE"
    assert update["data"][0]["c_varchar"] == "new"
    assert update["old"] == [EXPECTED_DATA]
    delete = orjson.loads(encoder().encode_row(change(RowKind.DELETE, ROW, None)).value)
    assert delete["type"] == "DELETE" and delete["data"] == [EXPECTED_DATA] and delete["old"] is None


def test_tidb_extension_and_content_compatible_types() -> None:
    message = orjson.loads(
        encoder(enable_tidb_extension=True, content_compatible=True)
        .encode_row(change(RowKind.INSERT, None, ROW))
        .value
    )
    assert message["_tidb"] == {"commitTs": TSO}
    assert message["mysqlType"]["c_dec"] == "decimal(10,4)"
    assert message["mysqlType"]["c_enum"] == "enum('a','b','c')"


def test_watermark_message() -> None:
    message = orjson.loads(encoder(enable_tidb_extension=True).encode_watermark(TSO).value)
    assert message["type"] == "TIDB_WATERMARK" and message["database"] == "" and message["data"] is None
    assert message["_tidb"] == {"watermarkTs": TSO} and message["es"] == ES


def test_every_ddl_kind_maps_to_its_canal_type() -> None:
    expected = {
        DDLKind.CREATE_TABLE: "CREATE",
        DDLKind.ALTER_TABLE: "ALTER",
        DDLKind.DROP_TABLE: "ERASE",
        DDLKind.TRUNCATE_TABLE: "TRUNCATE",
        DDLKind.RENAME_TABLE: "RENAME",
        DDLKind.CREATE_INDEX: "CINDEX",
        DDLKind.DROP_INDEX: "DINDEX",
        DDLKind.CREATE_DATABASE: "QUERY",
        DDLKind.DROP_DATABASE: "QUERY",
        DDLKind.ALTER_DATABASE: "QUERY",
        DDLKind.OTHER: "QUERY",
    }
    for kind, canal_type in expected.items():
        event = DDLEvent("ALTER TABLE t ADD c INT", kind, "shop", (TableName("shop", "t"),), TSO, POS)
        [ddl] = encoder(enable_tidb_extension=True).encode_ddl(event)
        encoded = ddl.encoded
        message = orjson.loads(encoded.value)
        assert message["type"] == canal_type, kind
        assert message["isDdl"] is True and message["sql"] == "ALTER TABLE t ADD c INT"
        assert message["database"] == "shop" and message["table"] == "t" and message["pkNames"] is None
        assert message["sqlType"] is None and message["data"] is None and message["old"] is None
        assert message["_tidb"] == {"commitTs": TSO} and encoded.key is None


def test_primary_key_changing_update_becomes_delete_then_insert() -> None:
    after = {**ROW, "id": 3}
    parts = split_key_changing_update(change(RowKind.UPDATE, ROW, after))
    assert [p.kind for p in parts] == [RowKind.DELETE, RowKind.INSERT]
    assert parts[0].before == ROW and parts[1].after == after
    same_key = split_key_changing_update(change(RowKind.UPDATE, ROW, {**ROW, "c_char": "x"}))
    assert [p.kind for p in same_key] == [RowKind.UPDATE]


def test_a_ddl_that_used_the_sessions_time_zone_says_which() -> None:
    """`_tidb.sessionTimeZone` (Lakefeed's addition) only when the binlog says the DDL used a zone other than
    the server's; without the TiDB extension the message stays TiCDC's."""
    sql = "ALTER TABLE t ADD c DATETIME DEFAULT CURRENT_TIMESTAMP"
    for zone, tidb in (("-08:00", {"commitTs": TSO, "sessionTimeZone": "-08:00"}),
                       ("Europe/Paris", {"commitTs": TSO, "sessionTimeZone": "Europe/Paris"}),
                       ("SYSTEM", {"commitTs": TSO}), ("", {"commitTs": TSO})):
        event = DDLEvent(sql, DDLKind.ALTER_TABLE, "shop", (TableName("shop", "t"),), TSO, POS, time_zone=zone)
        [ddl] = encoder(enable_tidb_extension=True).encode_ddl(event)
        assert orjson.loads(ddl.encoded.value)["_tidb"] == tidb, zone
        [plain] = encoder().encode_ddl(event)
        assert "_tidb" not in orjson.loads(plain.encoded.value)


def test_a_schema_handed_over_as_a_new_object_reuses_its_plan_and_a_new_version_gets_its_own() -> None:
    """Capture in a child process hands each batch's TableSchema over as a new (unpickled) object: the encoder
    must not build a plan per batch nor keep one per object, and must not reuse a plan for a changed table."""
    enc = encoder()
    first = enc.encode_row(change(RowKind.INSERT, None, ROW))
    for _ in range(3000):  # one new object per batch
        copy = pickle.loads(pickle.dumps(change(RowKind.INSERT, None, ROW)))
        assert copy.table is not TABLE and enc.encode_row(copy).value == first.value
    assert len(enc._plans) == 1  # bounded by the table's versions, not by the batches
    added = replace(TABLE, columns=(*TABLE.columns, col("c_added", "int", "int")))
    newer = enc.encode_row(RowChange(RowKind.INSERT, added, None, {**ROW, "c_added": 7}, TSO, POS, 0))
    message = orjson.loads(newer.value)
    assert message["data"][0]["c_added"] == "7" and message["mysqlType"]["c_added"] == "int"
    again = enc.encode_row(pickle.loads(pickle.dumps(change(RowKind.INSERT, None, ROW))))
    assert again.value == first.value

"""Golden tests: one per TiCDC canal-JSON behaviour, each citing the TiCDC source or doc it follows.

tiflow = github.com/pingcap/tiflow, pkg/sink/codec/canal/ unless a path says otherwise;
docs = github.com/pingcap/docs ticdc/ticdc-canal-json.md.
"""

import datetime
import random

import orjson

from changefeed.codec.canal_json import CanalJsonEncoder, CanalJsonOptions, dumps
from changefeed.codec.values import mysql_type, value_text
from changefeed.ddl_parse import parse_ddl
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
from changefeed.source.ddl import ddl_events

TSO = compose_tso(1639633141221, 3)
POS = Position("binlog.000001", 4)


def col(name: str, data_type: str, mysql: str, **extra: object) -> Column:
    return Column(name=name, data_type=data_type, mysql_type=mysql, **extra)  # type: ignore[arg-type]


# PRIMARY KEY (b, a): the key's order differs from the table's column order.
TABLE = TableSchema("s", "t", (
    col("a", "int", "int", nullable=False, column_type="int(11)"),
    col("b", "varchar", "varchar(10)", nullable=False, charset="utf8mb4", column_type="varchar(10)"),
    col("v", "int", "int", column_type="int(11)", virtual=True),  # VIRTUAL generated
    col("st", "int", "int", column_type="int(11)"),  # STORED generated: an ordinary column here
    col("n", "varchar", "varchar(20)", charset="utf8mb4", column_type="varchar(20)"),
), primary_key=("b", "a"))
ROW = {"a": 1, "b": "k", "v": 2, "st": 3, "n": "x"}


def encode(change: RowChange, **options: bool | str) -> dict:  # type: ignore[type-arg]
    encoder = CanalJsonEncoder(CanalJsonOptions(**options), clock=lambda: 5)  # type: ignore[arg-type]
    return orjson.loads(encoder.encode_row(change).value)  # type: ignore[no-any-return]


def row(kind: RowKind, before: dict | None, after: dict | None, table: TableSchema = TABLE) -> RowChange:  # type: ignore[type-arg]
    return RowChange(kind, table, before, after, TSO, POS, 0)


def test_row_field_order_is_old_then_data() -> None:
    """tiflow canal_json_row_event_encoder.go newJSONMessageForDML writes `old` before `data`."""
    raw = CanalJsonEncoder(clock=lambda: 5).encode_row(row(RowKind.INSERT, None, ROW)).value
    assert list(orjson.loads(raw)) == ["id", "database", "table", "pkNames", "isDdl", "type", "es", "ts", "sql",
                                       "sqlType", "mysqlType", "old", "data"]
    assert raw.index(b'"old":null') < raw.index(b'"data":')


def test_ddl_and_watermark_keep_the_struct_order_data_then_old() -> None:
    """tiflow canal_json_message.go JSONMessage: Data before Old, marshalled by go-json as declared."""
    event = DDLEvent("CREATE TABLE t (a int)", DDLKind.CREATE_TABLE, "s", (TableName("s", "t"),), TSO, POS)
    encoder = CanalJsonEncoder(clock=lambda: 5)
    for raw in (encoder.encode_ddl(event)[0].encoded.value, encoder.encode_watermark(TSO).value):
        fields = list(orjson.loads(raw))
        assert fields.index("data") + 1 == fields.index("old")


def test_pk_names_follow_column_order_and_are_empty_without_a_key() -> None:
    """tiflow cdc/model/sink.go PrimaryKeyColumnNames: PK-flagged columns in column order, `[]` when none."""
    assert encode(row(RowKind.INSERT, None, ROW))["pkNames"] == ["a", "b"]
    keyless = TableSchema("s", "k", TABLE.columns)
    assert encode(row(RowKind.INSERT, None, ROW, keyless))["pkNames"] == []


def test_virtual_generated_columns_are_left_out_stored_ones_stay() -> None:
    """tiflow cdc/model/schema_storage.go IsColCDCVisible: virtual generated columns are not sent."""
    message = encode(row(RowKind.INSERT, None, ROW))
    for field in ("data",):
        assert list(message[field][0]) == ["a", "b", "st", "n"]
    assert list(message["sqlType"]) == list(message["mysqlType"]) == ["a", "b", "st", "n"]


def test_update_old_is_the_whole_row_by_default() -> None:
    """docs "Data format definition": `old` is the row before the UPDATE."""
    message = encode(row(RowKind.UPDATE, ROW, {**ROW, "n": "y"}))
    assert message["old"] == [{"a": "1", "b": "k", "st": "3", "n": "x"}]
    assert message["data"] == [{"a": "1", "b": "k", "st": "3", "n": "y"}]


def test_only_output_updated_columns_keeps_only_changed_columns_in_old() -> None:
    """tiflow canal_json_row_event_encoder.go fillColumns + shouldIgnoreColumn: with
    only-output-updated-columns, `old` holds only columns whose value changed ([{}] when none did)."""
    message = encode(row(RowKind.UPDATE, ROW, {**ROW, "n": None}), only_output_updated_columns=True)
    assert message["old"] == [{"n": "x"}]
    assert message["data"] == [{"a": "1", "b": "k", "st": "3", "n": None}]
    same = encode(row(RowKind.UPDATE, ROW, dict(ROW)), only_output_updated_columns=True)
    assert same["old"] == [{}]


def test_content_compatible_turns_on_only_output_updated_columns() -> None:
    """tiflow pkg/sink/codec/common/config.go Apply: ContentCompatible sets OnlyOutputUpdatedColumns."""
    message = encode(row(RowKind.UPDATE, ROW, {**ROW, "st": 9}), content_compatible=True)
    assert message["old"] == [{"st": "3"}]
    assert message["mysqlType"]["a"] == "int(11)"


def test_delete_only_output_handle_key_columns() -> None:
    """tiflow canal_json_row_event_encoder.go newJSONMessageForDML: DeleteOnlyHandleKeyColumns makes a
    DELETE's data, sqlType and mysqlType hold only the handle key columns; no `_tidb.onlyHandleKey`."""
    message = encode(row(RowKind.DELETE, ROW, None), delete_only_output_handle_key_columns=True,
                     enable_tidb_extension=True)
    assert message["data"] == [{"a": "1", "b": "k"}]
    assert list(message["sqlType"]) == list(message["mysqlType"]) == ["a", "b"]
    assert message["_tidb"] == {"commitTs": TSO} and message["pkNames"] == ["a", "b"]
    insert = encode(row(RowKind.INSERT, None, ROW), delete_only_output_handle_key_columns=True)
    assert list(insert["data"][0]) == ["a", "b", "st", "n"]


def test_message_key_is_lakefeeds_option_and_none_is_ticdcs() -> None:
    """tiflow canal_json_row_event_encoder.go AppendRowChangedEvent: Key nil. Lakefeed's default keys by
    the handle key so topics can be compacted (docs/configuration.md message-key)."""
    change = row(RowKind.INSERT, None, ROW)
    keyed = CanalJsonEncoder(CanalJsonOptions()).encode_row(change).key
    assert orjson.loads(keyed or b"") == {"database": "s", "table": "t", "key": {"b": "k", "a": "1"}}
    assert CanalJsonEncoder(CanalJsonOptions(message_key="none")).encode_row(change).key is None


def test_strings_are_escaped_as_gos_json_writers() -> None:
    """easyjson jwriter.String (used by tiflow canal_json_row_event_encoder.go) and go-json escape
    <, >, & and U+2028/U+2029, and write other control characters as \\u00XX."""
    raw = dumps({"s": "<a>&\u2028\u2029\x08\x0c\\b\n\"\x01é"})
    assert raw == b'{"s":"\\u003ca\\u003e\\u0026\\u2028\\u2029\\u0008\\u000c\\\\b\\n\\"\\u0001\xc3\xa9"}'
    assert orjson.loads(raw) == {"s": "<a>&\u2028\u2029\x08\x0c\\b\n\"\x01é"}


def test_json_text_is_normalised_as_tidb_prints_it() -> None:
    """tiflow pkg/sink/codec/utils/test_utils.go: a JSON column reads `{"key1": "value1"}` (TiDB's JSON
    text: `": "` and `", "` separators, sorted keys), whatever spacing the client typed."""
    column = col("j", "json", "json")
    assert value_text(column, '{"b":[1,2],"a":{"y":null,"x":"é"}}') == '{"a": {"x": "é", "y": null}, "b": [1, 2]}'
    assert value_text(column, "not json") == "not json"


def test_short_mysql_type_adds_unsigned_and_zerofill_but_not_to_year_or_bit() -> None:
    """tiflow pkg/sink/codec/utils/field_types.go withUnsigned4MySQLType / withZerofill4MySQLType."""
    assert mysql_type(col("y", "year", "year", unsigned=True), False) == "year"
    assert mysql_type(col("b", "bit", "bit(3)", unsigned=True), False) == "bit"
    assert mysql_type(col("z", "int", "int unsigned", unsigned=True, zerofill=True), False) == "int unsigned zerofill"
    assert mysql_type(col("u", "bigint", "bigint unsigned", unsigned=True), False) == "bigint unsigned"


def test_full_mysql_type_is_the_servers_column_type() -> None:
    """tiflow pkg/sink/codec/utils/mysql_types.go GetMySQLType(fullType): the column's type description
    (TiDB GetTypeDesc); here the server's information_schema COLUMN_TYPE, widths included on MariaDB."""
    for column_type in ("int(11)", "tinyint(4)", "tinyint(1)", "int(10) unsigned", "bigint(20) unsigned zerofill",
                        "year(4)", "enum('A','b')"):
        assert mysql_type(col("c", "int", "int", column_type=column_type), True) == column_type
    assert mysql_type(col("c", "decimal", "decimal(10,2)"), True) == "decimal(10,2)"  # binlog-only: rebuilt


def _messages(sql: str, default_db: str = "s") -> list[tuple[str | None, dict]]:  # type: ignore[type-arg]
    parsed = parse_ddl(sql, default_db)
    assert parsed is not None
    encoder = CanalJsonEncoder(clock=lambda: 5)
    out = []
    for event in ddl_events(sql, parsed, default_db, TSO, POS, ()):
        for message in encoder.encode_ddl(event):
            out.append((None if message.route is None else str(message.route), orjson.loads(message.encoded.value)))
    return out


def test_ddl_types_follow_convert_ddl_event_type() -> None:
    """tiflow canal_entry.go convertDdlEventType: index DDL is CINDEX/DINDEX, views, sequences, database
    statements and EXCHANGE PARTITION are QUERY; a multi-clause ALTER (multi-schema change) is ALTER."""
    cases = {
        "ALTER TABLE t ADD INDEX i (n)": "CINDEX",
        "ALTER TABLE t ADD UNIQUE (n)": "CINDEX",
        "ALTER TABLE t ADD PRIMARY KEY (a)": "CINDEX",
        "ALTER TABLE t ADD CONSTRAINT f FOREIGN KEY (a) REFERENCES p (id)": "CINDEX",
        "CREATE INDEX i ON t (n)": "CINDEX",
        "ALTER TABLE t DROP INDEX i": "DINDEX",
        "ALTER TABLE t DROP PRIMARY KEY": "DINDEX",
        "ALTER TABLE t DROP FOREIGN KEY f": "DINDEX",
        "DROP INDEX i ON t": "DINDEX",
        "ALTER TABLE t ADD INDEX i (n), ADD COLUMN c INT": "ALTER",
        "ALTER TABLE t ADD COLUMN c INT": "ALTER",
        "CREATE VIEW v AS SELECT 1": "QUERY",
        "DROP VIEW v": "QUERY",
        "CREATE SEQUENCE q": "QUERY",
        "DROP SEQUENCE q": "QUERY",
    }
    for sql, canal_type in cases.items():
        [(route, message)] = _messages(sql)
        assert message["type"] == canal_type, sql
        assert message["database"] == "s" and message["table"] in ("t", "v", "q") and route == f"s.{message['table']}"


def test_database_ddl_is_one_query_with_an_empty_table_on_the_default_topic() -> None:
    """tiflow canal_entry.go: ActionCreateSchema/DropSchema/ModifySchemaCharsetAndCollate are QUERY;
    cdc/sink/dmlsink/mq/dispatcher/event_router.go GetTopicForDDL sends table "" to the default topic."""
    for sql in ("CREATE DATABASE d2", "DROP DATABASE d2", "ALTER DATABASE d2 CHARACTER SET utf8mb4"):
        [(route, message)] = _messages(sql)
        assert route is None and message["database"] == "d2" and message["table"] == "" and message["type"] == "QUERY"


def test_rename_is_one_message_with_the_new_name_on_the_old_names_topic() -> None:
    """tiflow cdc/model/sink.go FromJobWithArgs: a multi-table rename is split into one event per pair
    with query RENAME TABLE `a`.`x` TO `b`.`y`; event_router.go GetTopicForDDL routes by the old table."""
    [(route, message)] = _messages("RENAME TABLE t TO u")
    assert (route, message["database"], message["table"], message["type"]) == ("s.t", "s", "u", "RENAME")
    assert message["sql"] == "RENAME TABLE t TO u"
    [(route, message)] = _messages("ALTER TABLE t RENAME TO o.u")
    assert (route, message["database"], message["table"]) == ("s.t", "o", "u")
    swap = _messages("RENAME TABLE a TO tmp, b TO a, tmp TO b")
    assert [(r, m["table"], m["sql"]) for r, m in swap] == [
        ("s.a", "tmp", "RENAME TABLE `s`.`a` TO `s`.`tmp`"),
        ("s.b", "a", "RENAME TABLE `s`.`b` TO `s`.`a`"),
        ("s.tmp", "b", "RENAME TABLE `s`.`tmp` TO `s`.`b`"),
    ]


def test_exchange_partition_is_one_query_for_the_partitioned_table() -> None:
    """tiflow cdc/model/sink.go FromJobWithArgs ActionExchangeTablePartition: TableInfo is the
    partitioned table, PreTableInfo (which picks the topic) the other one; canal type QUERY."""
    [(route, message)] = _messages("ALTER TABLE p EXCHANGE PARTITION p0 WITH TABLE o.x")
    assert (route, message["database"], message["table"], message["type"]) == ("o.x", "s", "p", "QUERY")


def test_time_value_is_unchanged_by_the_new_shapes() -> None:
    """docs "Data format definition": values stay strings (a spot check that formatting is untouched)."""
    column = col("t", "time", "time(2)", fsp=2)
    assert value_text(column, datetime.timedelta(hours=-1, minutes=59)) == "-00:01:00.00"


def test_each_go_escape_is_applied_on_its_own_and_other_backslash_pairs_are_kept() -> None:
    """dumps looks for the bytes it rewrites before running its regex: each one alone must still be
    rewritten, and a message whose only backslashes are pairs Go writes the same (`\\"`, `\\\\`, `\\n`,
    as in JSON column text) must come out as orjson wrote it."""
    for text, escaped in [("<", b"\\u003c"), (">", b"\\u003e"), ("&", b"\\u0026"), ("\u2028", b"\\u2028"),
                          ("\u2029", b"\\u2029"), ("\x08", b"\\u0008"), ("\x0c", b"\\u000c")]:
        assert dumps({"s": f'{{"k": "{text}"}}'}) == b'{"s":"{\\"k\\": \\"' + escaped + b'\\"}"}', text
    kept = {"s": '{"a\\\\b": "x\\\\f\\n"}'}
    assert dumps(kept) == orjson.dumps(kept)


def _go_string(text: str) -> bytes:
    """A string as Go's JSON writers write it, one character at a time (easyjson jwriter.String): the
    reference for dumps, which rewrites orjson's bytes instead."""
    short = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
    out = []
    for char in text:
        if char in short:
            out.append(short[char])
        elif ord(char) < 0x20 or char in "<>&\u2028\u2029":
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return ('"' + "".join(out) + '"').encode()


def test_dumps_escapes_random_strings_as_go_does() -> None:
    """Random strings heavy in what is rewritten (and in backslashes before `b` and `f`, which must stay
    pairs), alone and several in one message, against the character-by-character reference."""
    rng = random.Random(3)
    alphabet = ["<", ">", "&", "\u2028", "\u2029", "\x08", "\x0c", "\\", "b", "f", "\"", "\n", "\x01", "é", "€", "a"]
    for _ in range(3000):
        texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12))) for _ in range(rng.randint(1, 3))]
        message = {f"k{i}": text for i, text in enumerate(texts)}
        expected = b"{" + b",".join(b'"k%d":' % i + _go_string(text) for i, text in enumerate(texts)) + b"}"
        assert dumps(message) == expected, texts

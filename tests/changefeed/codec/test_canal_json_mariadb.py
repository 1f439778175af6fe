"""Golden canal-JSON from a real MariaDB 10.11 through capture: what the server reports decides
mysqlType, pkNames, which columns are sent and the JSON text (tiflow pkg/sink/codec/utils/mysql_types.go
GetMySQLType, field_types.go, cdc/model/sink.go PrimaryKeyColumnNames, cdc/model/schema_storage.go
IsColCDCVisible)."""

import orjson

from changefeed.codec.canal_json import CanalJsonEncoder, CanalJsonOptions
from changefeed.model import Checkpoint, DDLEvent
from changefeed.source.server import ConnectionSettings
from lakefeed_testing import MySQLServer
from tests.changefeed.conftest import capture, rows_of

TABLE = """CREATE TABLE t (
  a INT NOT NULL, ti TINYINT, flag TINYINT(1), u INT UNSIGNED, z BIGINT UNSIGNED ZEROFILL, y YEAR,
  b VARCHAR(10) NOT NULL, v INT AS (a + 1) VIRTUAL, s INT AS (a + 2) STORED, j JSON,
  PRIMARY KEY (b, a))"""


def test_mysql_type_pk_names_and_columns_follow_what_mariadb_reports(
    mysql: MySQLServer, database: str, settings: ConnectionSettings, here: Checkpoint
) -> None:
    mysql.execute(TABLE, database=database)
    mysql.execute("CREATE TABLE nokey (x INT)", database=database)
    mysql.execute("INSERT INTO t (a, ti, flag, u, z, y, b, j) "
                  """VALUES (1, -1, 1, 7, 5, 2024, 'k', '{"b":1,"a":[1,2]}')""", database=database)
    mysql.execute("INSERT INTO nokey VALUES (1)", database=database)
    events = capture(settings, here)
    [change] = rows_of(events, "t")
    [keyless] = rows_of(events, "nokey")

    full = orjson.loads(CanalJsonEncoder(CanalJsonOptions(content_compatible=True)).encode_row(change).value)
    assert full["mysqlType"] == {
        "a": "int(11)", "ti": "tinyint(4)", "flag": "tinyint(1)", "u": "int(10) unsigned",
        "z": "bigint(20) unsigned zerofill", "y": "year(4)", "b": "varchar(10)", "s": "int(11)", "j": "json",
    }
    short = orjson.loads(CanalJsonEncoder().encode_row(change).value)
    assert short["mysqlType"] == {
        "a": "int", "ti": "tinyint", "flag": "tinyint", "u": "int unsigned", "z": "bigint unsigned zerofill",
        "y": "year", "b": "varchar", "s": "int", "j": "json",
    }
    assert short["pkNames"] == ["a", "b"]
    assert "v" not in short["data"][0] and short["data"][0]["s"] == "3"
    assert short["data"][0]["j"] == '{"a": [1, 2], "b": 1}'
    assert short["data"][0]["z"] == "5"
    assert orjson.loads(CanalJsonEncoder().encode_row(keyless).value)["pkNames"] == []
    assert any(isinstance(e, DDLEvent) for e in events)

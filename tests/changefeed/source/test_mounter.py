"""The mounter's fixes of library quirks, on hand-made decoded rows (pure)."""

import datetime
from decimal import Decimal

from changefeed.model import Position, RowKind, TableSchema
from changefeed.source.column_types import column_from_binlog
from changefeed.source.mounter import RowMounter, SnapshotMounter
from changefeed.source.records import BinlogColumn, FieldType

COLUMNS = (
    BinlogColumn("id", FieldType.LONG, unsigned=True, nullable=False, primary=True),
    BinlogColumn("b", FieldType.BIT, bits=10),
    BinlogColumn("s", FieldType.SET, charset="utf8mb4", elements=("x", "y", "z")),
    BinlogColumn("y", FieldType.YEAR, unsigned=True),
    BinlogColumn("bn", FieldType.STRING, charset="binary", max_length=4),
    BinlogColumn("vb", FieldType.VARCHAR, charset="binary", max_length=8),
    BinlogColumn("ts", FieldType.TIMESTAMP2, fsp=3),
    BinlogColumn("j", FieldType.JSON, length_size=4),
    BinlogColumn("d", FieldType.NEWDECIMAL, precision=5, decimals=2),
)
SCHEMA = TableSchema("db", "t", tuple(column_from_binlog(c) for c in COLUMNS), ("id",))
POS = Position("binlog.000001", 100)


def mount(kind: RowKind, raw: dict[str, object]) -> dict[str, object]:
    change = RowMounter(SCHEMA, COLUMNS).mount(kind, raw, 42, POS, 3)
    assert change.commit_ts == 42 and change.ordinal == 3 and change.position == POS
    return dict(change.row)


def test_quirks_are_fixed() -> None:
    row = mount(
        RowKind.INSERT,
        {
            "values": {
                "id": 1,
                "b": "1000000001",
                "s": {"z", "x"},
                "y": 1900,
                "bn": b"\x01",
                "vb": "",
                "ts": datetime.datetime(2024, 1, 1, 0, 0, 0, 5000),
                "j": {b"k": [1, b"v"]},
                "d": Decimal("1.50"),
            },
            "none_sources": {},
        },
    )
    assert row == {
        "id": 1,
        "b": 513,
        "s": "x,z",
        "y": 0,
        "bn": b"\x01\x00\x00\x00",
        "vb": b"",
        "ts": datetime.datetime(2024, 1, 1, 0, 0, 0, 5000, tzinfo=datetime.UTC),
        "j": '{"k": [1, "v"]}',
        "d": Decimal("1.50"),
    }


def test_empty_set_is_not_null() -> None:
    values = {c.name: None for c in COLUMNS} | {"id": 2}
    row = mount(RowKind.DELETE, {"values": dict(values), "none_sources": {"s": "empty set", "b": "null"}})
    assert row["s"] == "" and row["b"] is None and row["y"] is None


def test_update_has_both_images() -> None:
    before = {c.name: None for c in COLUMNS} | {"id": 3, "y": 2000}
    after = before | {"y": 1900, "b": "11"}
    change = RowMounter(SCHEMA, COLUMNS).mount(
        RowKind.UPDATE,
        {
            "before_values": dict(before),
            "after_values": dict(after),
            "before_none_sources": {},
            "after_none_sources": {},
        },
        1,
        POS,
        0,
    )
    assert change.before is not None and change.after is not None
    assert change.before["y"] == 2000 and change.after["y"] == 0 and change.after["b"] == 3


def test_snapshot_rows_match_binlog_values() -> None:
    schema = TableSchema(
        "db",
        "t",
        (
            column_from_binlog(BinlogColumn("f", FieldType.FLOAT)),
            column_from_binlog(BinlogColumn("b", FieldType.BIT, bits=16)),
            column_from_binlog(BinlogColumn("ts", FieldType.TIMESTAMP2, fsp=0)),
        ),
    )
    change = SnapshotMounter(schema).mount((3.14, b"\x01\x02", datetime.datetime(2020, 1, 1)), 7, POS, 0)
    assert change.snapshot and change.kind is RowKind.INSERT
    assert change.after == {
        "f": 3.140000104904175,
        "b": 258,
        "ts": datetime.datetime(2020, 1, 1, tzinfo=datetime.UTC),
    }

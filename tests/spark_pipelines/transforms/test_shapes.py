"""fold_shapes: newest layout wins; columns of older layouts are kept; clear errors."""

import json

import pytest

from spark_pipelines.errors import SchemaError
from spark_pipelines.transforms.shapes import fold_shapes


def layout(columns: dict[str, str], newest: int, pk: list[str] | None = None,
           table: str = "t", key: list[str] | None = None) -> dict[str, object]:
    return {"database": "db", "table": table, "pk": json.dumps(pk if pk is not None else ["id"]),
            "key_names": json.dumps(key), "columns": json.dumps(list(columns)), "types": json.dumps(columns),
            "newest": (newest, 0, 0)}


def test_newest_layout_orders_and_types_columns() -> None:
    shapes = fold_shapes([
        layout({"id": "int", "a": "int", "gone": "text"}, newest=1),
        layout({"id": "bigint", "a": "int", "b": "date"}, newest=2),
        layout({"id": "int"}, newest=1, table="u"),
    ])
    t = shapes[("db", "t")]
    assert [(name, ct.sql) for name, ct in t.columns] == [
        ("id", "bigint"), ("a", "int"), ("b", "date"), ("gone", "string")]
    assert t.primary_key == ("id",)
    assert shapes[("db", "u")].names == ["id"]


@pytest.mark.parametrize(("rows", "fragment"), [
    ([layout({"id": "int"}, 1, pk=[])], "no primary key"),
    # no handle key: the message key holds every column
    ([layout({"a": "int", "b": "int"}, 1, pk=[], key=["a", "b"])], "no unique key on NOT NULL columns"),
    ([layout({"id": "int"}, 1, pk=["uid"])], "missing from the row data"),
    ([layout({"id": "int", "p": "point"}, 1)], "column 'p'"),
])
def test_bad_layouts_fail_naming_the_table(rows: list[dict[str, object]], fragment: str) -> None:
    with pytest.raises(SchemaError, match=fragment) as info:
        fold_shapes(rows)
    assert "db.t" in str(info.value)


def test_a_table_without_primary_key_is_keyed_by_its_message_key() -> None:
    """pkNames is [] (as TiCDC sends it) for a table keyed by a NOT NULL unique index; the changefeed's
    message key names that index's columns."""
    shapes = fold_shapes([layout({"code": "varchar", "part": "int", "v": "int"}, 1, pk=[], key=["part", "code"])])
    assert shapes[("db", "t")].primary_key == ("part", "code")

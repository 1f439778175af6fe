"""fold_shapes: newest layout wins; columns of older layouts are kept; clear errors."""

import json

import pytest

from spark_pipelines.errors import SchemaError
from spark_pipelines.transforms.shapes import fold_shapes


def layout(columns: dict[str, str], newest: int, pk: list[str] | None = None,
           table: str = "t") -> dict[str, object]:
    return {"database": "db", "table": table, "pk": json.dumps(pk if pk is not None else ["id"]),
            "columns": json.dumps(list(columns)), "types": json.dumps(columns), "newest": (newest, 0, 0)}


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
    ([layout({"id": "int"}, 1, pk=["uid"])], "missing from the row data"),
    ([layout({"id": "int", "p": "point"}, 1)], "column 'p'"),
])
def test_bad_layouts_fail_naming_the_table(rows: list[dict[str, object]], fragment: str) -> None:
    with pytest.raises(SchemaError, match=fragment) as info:
        fold_shapes(rows)
    assert "db.t" in str(info.value)

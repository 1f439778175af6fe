"""Dispatchers put each change where they document; per-key order holds under key-based strategies."""

import pytest

from changefeed.dispatch.router import DispatchRule, Router
from changefeed.dispatch.topic import TopicExpression
from changefeed.errors import ConfigError
from changefeed.model import Column, Position, RowChange, RowKind, TableSchema

USERS = TableSchema(
    "app",
    "users",
    (Column("id", "int", "int"), Column("region", "varchar", "varchar(8)")),
    primary_key=("id",),
)
LOGS = TableSchema("app", "logs", (Column("msg", "text", "text"),))


def row(
    table: TableSchema,
    kind: RowKind,
    before: dict[str, object] | None,
    after: dict[str, object] | None,
    ts: int = 1,
) -> RowChange:
    return RowChange(kind, table, before, after, ts, Position("b.1", 4), 0)  # type: ignore[arg-type]


def test_default_keeps_every_change_of_a_key_on_one_partition_and_spreads_keys() -> None:
    router = Router("cdc")
    partitions = {"cdc": 8}
    seen: dict[int, set[int]] = {}
    for i in range(200):
        for kind, before, after in (
            (RowKind.INSERT, None, {"id": i, "region": "eu"}),
            (RowKind.UPDATE, {"id": i, "region": "eu"}, {"id": i, "region": "us"}),
            (RowKind.DELETE, {"id": i, "region": "us"}, None),
        ):
            topic, partition = router.route(row(USERS, kind, before, after, ts=i * 3), partitions)
            assert topic == "cdc"
            seen.setdefault(i, set()).add(partition)
    assert all(len(parts) == 1 for parts in seen.values())
    assert len({next(iter(p)) for p in seen.values()}) == 8


def test_table_ts_and_columns_strategies() -> None:
    router = Router(
        "cdc",
        (
            DispatchRule(("app.logs",), partition="ts"),
            DispatchRule(("app.u*",), partition="columns", columns=("region",), topic="{schema}_{table}"),
            DispatchRule(("*.*",), partition="table"),
        ),
    )
    assert router.route(row(LOGS, RowKind.INSERT, None, {"msg": "x"}, ts=13), {"cdc": 4}) == ("cdc", 1)
    eu = {
        router.route(row(USERS, RowKind.INSERT, None, {"id": i, "region": "eu"}), {"app_users": 4})
        for i in range(50)
    }
    assert len(eu) == 1 and next(iter(eu))[0] == "app_users"
    other = TableSchema("app", "orders", (Column("id", "int", "int"),), primary_key=("id",))
    assert (
        len({router.route(row(other, RowKind.INSERT, None, {"id": i}), {"cdc": 4}) for i in range(50)}) == 1
    )


def test_index_value_with_named_index_columns() -> None:
    router = Router("cdc", (DispatchRule(("app.users",), partition="index-value", index=("region",)),))
    parts = {
        router.route(row(USERS, RowKind.INSERT, None, {"id": i, "region": "eu"}), {"cdc": 6})[1]
        for i in range(30)
    }
    assert len(parts) == 1


def test_topic_expression_is_sanitised_and_checked() -> None:
    assert TopicExpression("cdc_{schema}_{table}").topic("my db", "t$1") == "cdc_my_db_t_1"
    with pytest.raises(ConfigError, match="unknown placeholder"):
        TopicExpression("{database}")
    with pytest.raises(ConfigError, match="allowed: default, table, index-value, columns, ts"):
        Router("cdc", (DispatchRule(("*.*",), partition="random"),))

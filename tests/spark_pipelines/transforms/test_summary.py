"""BatchSummary: the one Spark action's answers, checked against counts taken from the messages themselves."""

import random
from typing import Any

import pytest

from spark_pipelines.jobs.apply import TABLE_DDL
from spark_pipelines.transforms.parse import parse_messages
from spark_pipelines.transforms.shapes import shape_rows
from spark_pipelines.transforms.summary import BatchSummary, TableCount, summary_rows
from tests.spark_pipelines.canal import ddl, dml, records

ES = 1_700_000_000_000


@pytest.mark.parametrize("layouts", [True, False], ids=["layouts", "counts-only"])
def test_counts_per_table_add_up_every_layout_and_every_ddl_message(spark: Any, layouts: bool) -> None:
    rng = random.Random(7)
    messages: list[str] = []
    expected: dict[tuple[str, str, bool], list[int]] = {}  # (database, table, is_ddl) -> [messages, newest es]

    def count(database: str, table: str, is_ddl: bool, es: int) -> None:
        seen = expected.setdefault((database, table, is_ddl), [0, 0])
        seen[0] += 1
        seen[1] = max(seen[1], es)

    for n in range(120):
        table, es = rng.choice(["a", "b", "c"]), ES + rng.randrange(10**6)
        # Two layouts per table (a column some rows lack), so a table's count spans several layout rows.
        data = {"id": str(n), "v": "x"} | ({"w": "y"} if rng.random() < 0.5 else {})
        database = rng.choice(["shop", "shop2"]) if table == "c" else "shop"  # one name, two databases
        messages.append(dml(table, rng.choice(["INSERT", "UPDATE", "DELETE"]), data, es=es, database=database))
        count(database, table, False, es)
    for table, kind, sql in [("a", "ALTER", "ALTER TABLE a ADD COLUMN z INT"),
                             ("b", "CINDEX", "CREATE INDEX i ON b (v)"),
                             ("a", "TRUNCATE", "TRUNCATE TABLE a")]:
        es = ES + rng.randrange(2 * 10**6)
        messages.append(ddl(table, kind, sql, es=es))
        count("shop", table, True, es)
    messages.append("not json at all")

    frame = parse_messages(records(spark, messages))
    summary = BatchSummary.of(summary_rows(frame, layouts=layouts).collect(), TABLE_DDL, layouts=layouts)

    assert summary.bad is not None and summary.bad["value"] == "not json at all"
    # Only table DDL of the types the job applies; every DDL message still counts for the progress line.
    assert sorted(row["type"] for row in summary.ddl) == ["ALTER", "TRUNCATE"]
    assert sorted((c.database, c.table, c.is_ddl, c.rows, c.newest_ms) for c in summary.counts) == sorted(
        (database, table, is_ddl, seen, newest) for (database, table, is_ddl), (seen, newest) in expected.items())
    if layouts:  # the layouts shape_rows gives on its own, with the same aggregates
        fields = ("database", "table", "pk", "key_names", "columns", "types", "newest", "key_low", "key_high",
                  "rows", "newest_ms")
        assert sorted(tuple(row[f] for f in fields) for row in summary.layouts) == sorted(
            tuple(row[f] for f in fields) for row in shape_rows(frame).collect())
        assert sum(row["rows"] for row in summary.layouts) == 120
        assert len(summary.layouts) > len({(c.database, c.table) for c in summary.counts if not c.is_ddl})
    else:  # a batch bound for the change buffer: counted without grouping on its layouts
        assert summary.layouts == ()


def test_a_batch_without_messages_of_a_kind_gives_empty_answers(spark: Any) -> None:
    frame = parse_messages(records(spark, [dml("a", "INSERT", {"id": "1"}, es=ES)]))
    summary = BatchSummary.of(summary_rows(frame).collect(), TABLE_DDL)
    assert summary.bad is None and summary.ddl == ()
    assert summary.counts == (TableCount("shop", "a", False, 1, ES),)


def test_the_bad_message_named_is_the_first_by_partition_and_offset(spark: Any) -> None:
    good = [dml("a", "INSERT", {"id": str(n)}, es=ES) for n in range(5)]
    first = records(spark, [good[0], "{broken", good[1], "also not json"], partition=1)
    second = records(spark, ["{", *good[2:]], partition=2)
    summary = BatchSummary.of(summary_rows(parse_messages(first.unionByName(second))).collect(), TABLE_DDL)
    assert summary.bad is not None
    assert (summary.bad["partition"], summary.bad["offset"], summary.bad["value"]) == (1, 1, "{broken")

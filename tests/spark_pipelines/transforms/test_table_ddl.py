"""Table renames read from RENAME TABLE / ALTER TABLE ... RENAME text, and where each table ends up."""

import pytest

from spark_pipelines.transforms.table_ddl import RenameTable, TableName, final_sources, table_renames

A, B, C, TMP = (TableName("shop", n) for n in ("a", "b", "c", "tmp"))


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("RENAME TABLE a TO b", [RenameTable(A, B)]),
        ("rename tables `a` to shop.b, `other`.`x y` TO c;", [
            RenameTable(A, B), RenameTable(TableName("other", "x y"), C)]),
        ("RENAME TABLE /* swap */ a TO tmp, b TO a, tmp TO b",
         [RenameTable(A, TMP), RenameTable(B, A), RenameTable(TMP, B)]),
        ("RENAME TABLE a WAIT 5 TO b", [RenameTable(A, B)]),
        ("ALTER TABLE a RENAME TO b", [RenameTable(A, B)]),
        ("ALTER TABLE shop.a ADD COLUMN x INT, RENAME AS `b`", [RenameTable(A, B)]),
        ("ALTER TABLE a RENAME COLUMN x TO y", []),
        ("ALTER TABLE a RENAME INDEX i TO j", []),
        ("DROP TABLE a", []),
    ],
)
def test_table_renames(sql: str, expected: list[RenameTable]) -> None:
    assert table_renames(sql, "shop") == expected


def test_final_sources_follow_chains_and_swaps() -> None:
    assert final_sources([RenameTable(A, B)]) == {A: None, B: A}
    assert final_sources([RenameTable(A, B), RenameTable(B, C)]) == {A: None, B: None, C: A}
    assert final_sources(table_renames("RENAME TABLE a TO tmp, b TO a, tmp TO b", "shop")) == {
        A: B, B: A, TMP: None}

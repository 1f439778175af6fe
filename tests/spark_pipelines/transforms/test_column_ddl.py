"""Column drops and renames read from ALTER TABLE text."""

import pytest

from spark_pipelines.transforms.column_ddl import DropColumn, RenameColumn, column_changes


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("ALTER TABLE t DROP COLUMN a", [DropColumn("a")]),
        ("alter table `db`.`t` drop `odd name`", [DropColumn("odd name")]),
        ("ALTER TABLE t RENAME COLUMN a TO b", [RenameColumn("a", "b")]),
        ("ALTER TABLE t CHANGE a b DECIMAL(10,2) NOT NULL", [RenameColumn("a", "b")]),
        ("ALTER TABLE t CHANGE COLUMN a a BIGINT", []),  # type change only
        ("ALTER TABLE t ADD COLUMN c INT, DROP COLUMN a, MODIFY b DECIMAL(12,3), RENAME COLUMN d TO e",
         [DropColumn("a"), RenameColumn("d", "e")]),
        ("ALTER TABLE t DROP INDEX a, DROP PRIMARY KEY, DROP FOREIGN KEY fk", []),
        ("ALTER TABLE t /* why */ DROP COLUMN IF EXISTS a;", [DropColumn("a")]),
        ("ALTER TABLE t ADD COLUMN note VARCHAR(20) DEFAULT 'a,b'", []),
        ("TRUNCATE TABLE t", []),
        ("CREATE TABLE t (a INT)", []),
    ],
)
def test_column_changes(sql: str, expected: list[object]) -> None:
    assert column_changes(sql) == expected

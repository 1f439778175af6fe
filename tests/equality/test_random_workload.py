"""The seeded workload: deterministic, switchable by kind, and accepted by a real MariaDB."""

import pytest

from lakefeed_testing import MySQLServer
from lakefeed_testing.random_workload import DDL_KINDS, KINDS, Options, WorkloadError, parse_kinds, plan, run


def test_the_same_seed_gives_the_same_statements_and_another_seed_others() -> None:
    assert plan(Options(seed=5)).script() == plan(Options(seed=5)).script()
    assert plan(Options(seed=5)).script() != plan(Options(seed=6)).script()


def test_excluded_kinds_never_appear() -> None:
    kinds = parse_kinds(exclude=["add_column_default", "column_default", "add_column_after", "modify_type",
                                 "rollback", "savepoint", "widen_key"])
    for seed in range(20):
        workload = plan(Options(seed=seed, kinds=kinds, ddl_statements=20))
        script = " ".join(s for step in workload.after if step.kind in DDL_KINDS for s in step.statements).upper()
        assert " DEFAULT " not in script.replace("DEFAULT CHARSET", "")
        assert " AFTER " not in script and " FIRST" not in script and "MODIFY" not in script
        assert all(step.commit for step in workload.after)
        assert "SAVEPOINT" not in " ".join(s for step in workload.after for s in step.statements).upper()


def test_every_ddl_kind_appears_over_a_few_seeds() -> None:
    seen = {step.kind for seed in range(10) for step in plan(Options(seed=seed, ddl_statements=20)).after}
    assert set(DDL_KINDS) <= seen
    assert "rollback" in seen


def test_unknown_kinds_are_refused_with_the_list() -> None:
    with pytest.raises(WorkloadError, match="unknown workload kind 'renames'; known kinds: insert"):
        parse_kinds(exclude=["renames"])
    assert parse_kinds() == frozenset(KINDS)


# Seed 12's multi-clause ALTER once named a column another clause of it dropped (`ADD s AFTER bn, DROP bn`).
@pytest.mark.parametrize("seed", [1, 2, 12])
def test_mariadb_runs_every_statement_but_duplicate_keys(mysql: MySQLServer, seed: int) -> None:
    database = f"eq_workload_{seed}"
    mysql.execute(f"DROP DATABASE IF EXISTS {database}")
    workload = plan(Options(seed=seed, database=database))
    try:
        stats = run(lambda db: mysql.connect(db, autocommit=False), (*workload.before, *workload.after), database)
        assert stats.statements > 300 and stats.refused < stats.statements // 5
        with mysql.connect(database) as conn, conn.cursor() as cur:
            cur.execute("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s", (database,))
            assert cur.fetchone()[0] >= 5  # the five tables, renamed or not, plus copies
    finally:
        mysql.execute(f"DROP DATABASE IF EXISTS {database}")


def test_multi_clause_alters_name_no_column_another_clause_of_them_changes(mysql: MySQLServer) -> None:
    """Many seeds of column DDL only, run on MariaDB: every ALTER must be accepted (run() raises on a refusal)."""
    kinds = parse_kinds(include=["insert", "multi_clause_alter", "add_column", "add_column_after", "drop_column",
                                 "rename_column", "modify_type"])
    for seed in range(30):
        database = f"eq_alters_{seed}"
        mysql.execute(f"DROP DATABASE IF EXISTS {database}")
        workload = plan(Options(seed=seed, database=database, preload_rows=2, transactions=5, ddl_statements=25,
                                kinds=kinds))
        try:
            run(lambda db: mysql.connect(db, autocommit=False), (*workload.before, *workload.after),
                database)
        finally:
            mysql.execute(f"DROP DATABASE IF EXISTS {database}")

"""examples/workload.py as a script against the shared MariaDB: the fixed load leaves exactly the rows it
promises, and --duration keeps committing changes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from lakefeed_testing import MySQLServer

WORKLOAD = Path(__file__).parents[2] / "examples" / "workload.py"


def _run(mysql: MySQLServer, database: str, *extra: str) -> str:
    command = [sys.executable, str(WORKLOAD), "--host", mysql.host, "--port", str(mysql.port), "--user", mysql.user,
               "--password", mysql.password, "--database", database, *extra]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    return result.stdout


def _ids(mysql: MySQLServer, database: str, table: str) -> set[int]:
    with mysql.connect(database) as conn, conn.cursor() as cur:
        cur.execute(f"SELECT id FROM {table}")
        return {int(row[0]) for row in cur.fetchall()}


def test_fixed_load_then_changes(mysql: MySQLServer, database: str) -> None:
    out = _run(mysql, database, "--rows", "200", "--tables", "3")
    assert "loaded 200 rows into each of sbtest1, sbtest2, sbtest3" in out
    expected = {i for i in range(200) if i % 25} - {i for i in range(200) if i % 50 == 1}
    expected |= {i + 200 for i in range(200) if i % 50 == 1}
    for table in ("sbtest1", "sbtest2", "sbtest3"):
        assert _ids(mysql, database, table) == expected
    out = _run(mysql, database, "--rows", "0", "--tables", "1", "--duration", "1.5", "--rate", "400")
    changes = int(out.splitlines()[-1].split()[0])
    assert changes > 50  # about 400 row changes per second were asked for
    assert _ids(mysql, database, "sbtest1") != expected

"""A sysbench-like workload for a MySQL or MariaDB database: a fixed load, or changes that keep coming.

Used by the demo (`examples/quickstart.py`) and usable on its own against any server:

    python examples/workload.py --host 127.0.0.1 --port 3306 --user root --password secret \\
        --database shop --rows 5000 [--duration 60 --rate 200]

Tables `sbtest1..N` (id INT PRIMARY KEY, k, c, pad, price DECIMAL). The fixed load inserts `--rows`
rows per table, then updates every 10th row, deletes every 25th and moves every 50th to a new key (a
key-changing update, which a CDC consumer must see as a delete plus an insert). With `--duration` it
then keeps running small transactions (insert, update, delete, key change) at about `--rate` row
changes per second until the time is up or Ctrl-C.
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import click
import pymysql

Connect = Callable[[], Any]  # returns a DB-API connection with autocommit off, e.g. pymysql.connect(...)


@dataclass
class Workload:
    connect: Connect
    tables: tuple[str, ...] = ("sbtest1", "sbtest2")
    seed: int = 7
    changes: int = 0  # row changes committed so far
    _next_id: dict[str, int] = field(default_factory=dict)

    def create_tables(self) -> None:
        with self.connect() as conn, conn.cursor() as cur:
            for table in self.tables:
                cur.execute(f"CREATE TABLE IF NOT EXISTS {table} (id INT PRIMARY KEY, k INT NOT NULL, "
                            "c CHAR(120), pad CHAR(60), price DECIMAL(10,2))")
            conn.commit()

    def load(self, rows: int) -> None:
        """Insert `rows` rows per table in transactions of 500, then update, delete and move some."""
        self.create_tables()
        with self.connect() as conn, conn.cursor() as cur:
            for table in self.tables:
                for start in range(0, rows, 500):
                    batch = [_row(i) for i in range(start, min(rows, start + 500))]
                    cur.executemany(f"INSERT INTO {table} VALUES (%s, %s, %s, %s, %s)", batch)
                    conn.commit()
                    self.changes += len(batch)
                self.changes += cur.execute(f"UPDATE {table} SET k = k + 1 WHERE id % 10 = 0")
                self.changes += cur.execute(f"DELETE FROM {table} WHERE id % 25 = 0")
                # Key-changing updates: ids above `rows` are free, the moved keys land there.
                self.changes += cur.execute(f"UPDATE {table} SET id = id + {rows} WHERE id % 50 = 1")
                conn.commit()
                self._next_id[table] = 2 * rows + 1

    def churn(self, stop: threading.Event, rate: float, deadline: float | None = None) -> None:
        """Small mixed transactions at about `rate` row changes per second until `stop` or `deadline`."""
        rng = random.Random(self.seed)
        with self.connect() as conn, conn.cursor() as cur:
            for table in self.tables:
                cur.execute(f"SELECT COALESCE(MAX(id), 0) + 1 FROM {table}")
                self._next_id[table] = max(self._next_id.get(table, 1), int(cur.fetchone()[0]))
            conn.commit()
            while not stop.is_set() and (deadline is None or time.monotonic() < deadline):
                started = time.monotonic()
                changed = sum(self._transaction(cur, rng.choice(self.tables), rng) for _ in range(5))
                conn.commit()
                self.changes += changed
                stop.wait(max(0.0, changed / rate - (time.monotonic() - started)))

    def _transaction(self, cur: Any, table: str, rng: random.Random) -> int:
        kind = rng.random()
        top = self._next_id[table]
        if kind < 0.5:
            self._next_id[table] = top + 1
            return int(cur.execute(f"INSERT INTO {table} VALUES (%s, %s, %s, %s, %s)", _row(top)))
        victim = rng.randrange(1, top)
        if kind < 0.8:
            return int(cur.execute(f"UPDATE {table} SET k = k + 1, c = %s WHERE id = %s", (f"u-{top}", victim)))
        if kind < 0.95:
            return int(cur.execute(f"DELETE FROM {table} WHERE id = %s", (victim,)))
        self._next_id[table] = top + 1
        return int(cur.execute(f"UPDATE {table} SET id = %s WHERE id = %s", (top, victim)))


def _row(i: int) -> tuple[int, int, str, str, str]:
    return i, i * 7 % 1000, f"c-{i}", f"pad-{i}", f"{i % 997}.{i % 100:02d}"


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=3306, show_default=True)
@click.option("--user", default="root", show_default=True)
@click.option("--password", default="", envvar="MYSQL_PASSWORD", help="or $MYSQL_PASSWORD")
@click.option("--database", default="shop", show_default=True, help="created if missing")
@click.option("--tables", default=2, show_default=True, help="how many sbtestN tables")
@click.option("--rows", default=5000, show_default=True, help="rows the fixed load inserts per table")
@click.option("--duration", default=0.0, show_default=True, help="seconds of changes after the load (0: none)")
@click.option("--rate", default=200.0, show_default=True, help="row changes per second after the load")
def main(host: str, port: int, user: str, password: str, database: str, tables: int, rows: int, duration: float,
         rate: float) -> None:
    """Run the sysbench-like load, then optionally keep changing rows for --duration seconds."""
    with pymysql.connect(host=host, port=port, user=user, password=password, autocommit=True) as conn:
        conn.cursor().execute(f"CREATE DATABASE IF NOT EXISTS `{database}`")

    def connect() -> Any:
        return pymysql.connect(host=host, port=port, user=user, password=password, database=database,
                               autocommit=False, charset="utf8mb4")

    workload = Workload(connect, tuple(f"sbtest{i}" for i in range(1, tables + 1)))
    workload.load(rows)
    click.echo(f"loaded {rows} rows into each of {', '.join(workload.tables)}: {workload.changes} row changes")
    if duration > 0:
        with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C ends the run early, not with a traceback
            workload.churn(threading.Event(), rate, time.monotonic() + duration)
        click.echo(f"{workload.changes} row changes in all")


if __name__ == "__main__":
    main()

"""The README's main-job command in its bounded mode, on the shared test services: a changefeed server
process runs the changefeed created with the CLI, into a `broker start` process; the streaming job
applies the topic; every Delta table ends equal to MySQL."""

import re
from pathlib import Path
from typing import Any

import pytest
import quickstart
from rich.console import Console as RichConsole

from lakefeed_testing import MySQLServer


@pytest.fixture
def shop(mysql: MySQLServer) -> Any:
    mysql.execute("DROP DATABASE IF EXISTS shop")
    yield
    mysql.execute("DROP DATABASE IF EXISTS shop")


def test_main_job_makes_delta_equal_to_mysql(mysql: MySQLServer, spark: Any, tmp_path: Path, shop: None) -> None:
    screen = RichConsole(record=True, width=160)
    assert quickstart.run_main_job(mysql, spark, rows=600, workdir=tmp_path,
                                   console=quickstart.Console(screen))
    for table in quickstart.TABLES:
        count = spark.read.format("delta").load(str(tmp_path / "delta" / "shop" / table)).count()
        assert count >= 600 - 600 // 25  # live rows plus tombstones of deleted and moved keys
    text = screen.export_text()
    # The caught-up table's delivered rows are final: every row change the workload wrote (a key change
    # counts once), not a count read before the checkpoint that ended the wait.
    written = int(text.split("workload done: ")[1].split()[0])
    caught_up = text.split("workload done: ")[1].split("Delta tables under")[0]
    delivered = [int(m.group(1)) for m in re.finditer(r"shop\.sbtest\d\s*│\s*(\d+)\s*│", caught_up)]
    assert len(delivered) == len(quickstart.TABLES) and sum(delivered) == written, (delivered, written, caught_up)
    assert "changefeed create --changefeed-id shop" in text  # created through the CLI, as a user does
    assert "changefeed shop: normal" in text  # progress came from `changefeed statistics`/`query`
    assert "equal" in text and "NO" not in text
    # The changefeed ran in the server process, which logged its progress, and was removed at the end.
    server_log = (tmp_path / "changefeed" / "server.log").read_text()
    assert "changefeed shop" in server_log


def test_follow_mode_keeps_changes_coming_then_converges(mysql: MySQLServer, spark: Any, tmp_path: Path,
                                                          shop: None) -> None:
    """`--follow S`: the workload keeps committing and a streaming query applies it every 5 s; after S
    seconds the workload stops, everything catches up and every table still equals MySQL."""
    screen = RichConsole(record=True, width=160)
    assert quickstart.run_main_job(mysql, spark, rows=100, workdir=tmp_path, follow_seconds=12,
                                   console=quickstart.Console(screen))
    text = screen.export_text()
    assert "following: the workload keeps changing rows" in text
    assert "pipeline (Spark Structured Streaming)" in text
    loaded = int(text.split("workload done: ")[1].split()[0])
    assert loaded > 232  # the load alone is 232 row changes; the follow phase added more

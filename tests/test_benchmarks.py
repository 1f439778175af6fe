"""The benchmark commands of docs/benchmarks.md run (with small numbers: they measure, CI only checks they
work and print their tables); every bench script parses its options."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lakefeed_testing import MySQLServer

BENCH = Path(__file__).parents[1] / "bench"


def _run(script: str, *args: str, timeout: float = 300) -> str:
    result = subprocess.run([sys.executable, str(BENCH / script), *args], capture_output=True, text=True,
                            timeout=timeout, check=False, cwd=BENCH.parent)
    assert result.returncode == 0, f"{script} {' '.join(args)}: exit {result.returncode}\n{result.stderr[-3000:]}"
    return result.stdout


@pytest.mark.parametrize("script", sorted(p.name for p in BENCH.glob("*.py") if not p.name.startswith("_")))
def test_every_benchmark_parses_its_options(script: str) -> None:
    assert "--help" in _run(script, "--help", timeout=60)


@pytest.mark.integration  # a private MariaDB and our broker
def test_changefeed_benchmark_runs() -> None:
    out = _run("changefeed.py", "--rows", "500", "--live-seconds", "1", "--live-rate", "200")
    assert "end to end, one process" in out and "end to end, capture in a child process" in out
    assert "live, capture in a child" in out and "commit -> acknowledged checkpoint" in out


def test_verify_benchmark_answers_right_on_a_small_table(mysql: MySQLServer, database: str, spark: Any,
                                                         tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # In this process on the shared MariaDB and Spark session: bench/verify.py's own would be a second JVM.
    spec = importlib.util.spec_from_file_location("bench_verify", BENCH / "verify.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert bench.run(spark, mysql, database, tmp_path, rows=2000, chunk_size=300, baseline_rounds=1)
    out = capsys.readouterr().out
    assert "verify, equal table" in out and "1 changed, 1 extra, 1 missing" in out and "UNEXPECTED" not in out

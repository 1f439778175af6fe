"""The benchmark commands of docs/benchmarks.md run (with small numbers: they measure, CI only checks they
work and print their tables); every bench script parses its options."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from lakefeed_testing import MySQLServer

BENCH = Path(__file__).parents[1] / "bench"


def _run(script: str, *args: str, timeout: float = 300) -> str:
    result = subprocess.run([sys.executable, str(BENCH / script), *args], capture_output=True, text=True,
                            timeout=timeout, check=False, cwd=BENCH.parent)
    assert result.returncode == 0, f"{script} {' '.join(args)}: exit {result.returncode}\n{result.stderr[-3000:]}"
    return result.stdout


def _bench_module(script: str) -> Any:
    """Import a bench script as a module, to call its functions in this process (shared MariaDB and Spark)."""
    spec = importlib.util.spec_from_file_location(f"bench_{Path(script).stem}", BENCH / script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("script", sorted(p.name for p in BENCH.glob("*.py") if not p.name.startswith("_")))
def test_every_benchmark_parses_its_options(script: str) -> None:
    assert "--help" in _run(script, "--help", timeout=60)


@pytest.mark.integration  # a private MariaDB and our broker
def test_changefeed_benchmark_runs() -> None:
    out = _run("changefeed.py", "--rows", "500", "--live-seconds", "1", "--live-rate", "200")
    assert "end to end, one process" in out and "end to end, capture in a child process" in out
    assert "live, capture in a child" in out and "commit -> acknowledged checkpoint" in out
    # each table's two end-to-end runs, with MariaDB's and the broker's CPU beside the changefeed's
    assert len(re.findall(r"CPU per row: changefeed [\d.]+ us \+ MariaDB and broker [\d.]+ us", out)) == 4, out


def test_changefeed_benchmark_counts_the_cpu_of_the_mariadb_it_reads(mysql: MySQLServer) -> None:
    """The CPU of the server the changefeed reads is counted: its process is found by its port."""
    bench = _bench_module("changefeed.py")
    pids = bench._service_pids(mysql, SimpleNamespace(process=None))
    assert len(pids) == 1 and b"mariadbd" in Path(f"/proc/{pids[0]}/cmdline").read_bytes()


def test_verify_benchmark_answers_right_on_a_small_table(mysql: MySQLServer, database: str, spark: Any,
                                                         tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # In this process on the shared MariaDB and Spark session: bench/verify.py's own would be a second JVM.
    bench = _bench_module("verify.py")
    assert bench.run(spark, mysql, database, tmp_path, rows=2000, chunk_size=300, baseline_rounds=1)
    out = capsys.readouterr().out
    assert "verify, equal table" in out and "1 changed, 1 extra, 1 missing" in out and "UNEXPECTED" not in out


def test_pipeline_benchmark_sees_rows_in_the_delta_log_as_spark_reads_them(spark: Any, tmp_path: Path) -> None:
    """bench/pipeline.py's freshness poller reads Delta's transaction log instead of querying the table: it
    must report the newest key Spark itself reads, commit by commit, under column mapping (as the pipeline's
    tables have it), where the log's statistics name columns by their physical names."""
    bench = _bench_module("pipeline.py")
    path = tmp_path / "live"
    spark.sql(f"CREATE TABLE delta.`{path}` (v STRING, id INT) USING delta "
              "TBLPROPERTIES ('delta.columnMapping.mode' = 'name')")
    tail = bench.DeltaLogTail(path, "id")
    assert tail.poll() is None  # no row yet
    for ids in ([3, 1, 2], [7, 5], [4]):  # the last commit's keys are all below the newest
        spark.createDataFrame([(f"v{i}", i) for i in ids], "v STRING, id INT").write.format("delta") \
            .mode("append").save(str(path))
        assert tail.poll() == spark.read.format("delta").load(str(path)).agg({"id": "max"}).collect()[0][0]
    assert tail.poll() == 7
    assert tail._physical != "id"  # the statistics were found by the physical name


def test_pipeline_benchmark_sees_rows_waiting_in_the_change_buffer(spark: Any, tmp_path: Path) -> None:
    """Under merge-on-read (`--merge-every-seconds`) a row is visible once it waits in the change buffer:
    bench/pipeline.py's BufferTail must report the newest key of the table that `current_rows` reads there,
    batch by batch, also after a merge emptied the buffer."""
    from spark_pipelines.config import PipelineConfig, SourceConfig
    from spark_pipelines.io.change_buffer import buffer_location
    from spark_pipelines.io.current import current_rows
    from spark_pipelines.jobs.apply import ApplyBatch
    from tests.spark_pipelines.canal import dml, records

    bench = _bench_module("pipeline.py")
    config = PipelineConfig(SourceConfig("unused:9092", ("cdc",)), str(tmp_path / "delta"), str(tmp_path / "ckpt"),
                            merge_every_seconds=10**9)
    job = ApplyBatch(config)
    tail = bench.BufferTail(Path(buffer_location(str(tmp_path / "delta"))), "live", "id")
    assert tail.poll() is None
    first = 0
    for batch_id, ids in enumerate(([3, 1, 2], [9, 4], [5])):
        values = [dml("live", "INSERT", {"id": str(i), "name": "v"}, es=1000 + first + n) for n, i in enumerate(ids)]
        values.append(dml("other", "INSERT", {"id": "99", "name": "v"}, es=2000 + first))  # another table's key
        job(records(spark, values).selectExpr("topic", "partition", f"offset + {first} AS offset", "key", "value"),
            batch_id)
        first += len(values)
        newest = current_rows(spark, config, "shop", "live").agg({"id": "max"}).collect()[0][0]
        assert tail.poll() == newest
        if batch_id == 1:
            job.merge_buffer(spark, force=True)  # the buffer empties; what it held stays visible in the table
    assert tail.poll() == 9


def test_a_jfr_recording_of_the_spark_jvm_counts_its_samples(spark: Any, tmp_path: Path) -> None:
    """bench/pipeline.py --jfr: a recording of the shared session's JVM while it runs a query holds execution
    samples, and a query whose plan Spark compiles puts some in the code generation group."""
    profile = _bench_module("_jvm_profile.py")
    recording = profile.record(spark)
    for n in range(4):  # each a new plan: whole-stage code generated and compiled again
        spark.range(200_000).selectExpr(f"id * {n + 2} AS v", f"id % {n + 7} AS k").groupBy("k").sum("v").collect()
    recording.finish(tmp_path / "run.jfr")
    samples, shares = profile.sample_shares(tmp_path / "run.jfr")
    assert samples > 0
    assert shares["expression code generation (Spark's generator or Janino)"] > 0, shares

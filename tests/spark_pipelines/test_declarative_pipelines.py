"""Spark Declarative Pipelines (pyspark 4.2.0 `spark-pipelines`) over our canal-JSON topic with Delta targets,
run for real: an append flow of our typed change rows lands in Delta, but `create_auto_cdc_flow` cannot
start on a Delta target (delta-spark 4.4.0's tables do not offer Spark's row-level operations that AUTO CDC
requires). docs/spark-declarative-pipelines.md has the details; when a version bump makes AUTO CDC work,
this test fails and the evaluation must be redone."""

import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import yaml
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from lakefeed_testing import KafkaReference
from lakefeed_testing.net import port_open
from lakefeed_testing.spark_cluster import spark_home
from spark_pipelines.packages import package_conf
from tests.spark_pipelines.canal import dml

ROOT = Path(__file__).resolve().parents[2]
DEFINITION = Path(__file__).with_name("declarative") / "acct_cdc.py"
DELTA_CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"
ES = 1_700_000_000_000
SPARK_CONNECT_PORT = 15002


def _holder() -> str:
    return subprocess.run(["ss", "-ltnp", f"sport = :{SPARK_CONNECT_PORT}"], capture_output=True, text=True).stdout


def _produce(kafka: KafkaReference, topic: str, values: list[str]) -> None:
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers, "acks": "all"})
    for value in values:
        producer.produce(topic, value=value.encode())
    assert producer.flush(30) == 0


def run_spark_pipelines(project: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """`spark-pipelines run --spec project/spark-pipeline.yml` with Delta and the Kafka source; tables land in
    project/spark-warehouse (the pipeline's working directory)."""
    conf = {**package_conf(), "spark.ui.enabled": "false", "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1", "spark.sql.shuffle.partitions": "2",
            "spark.sql.session.timeZone": "UTC"}
    # The Spark Connect server that `spark-pipelines` starts resolves the packages again in a JVM of its own,
    # which gets neither these --conf values nor PYSPARK_SUBMIT_ARGS; every spark-submit reads
    # spark-defaults.conf, so the Ivy settings go there (else that JVM uses Spark's default Ivy cache and
    # chain, ~/.m2 first: lakefeed_testing/maven.py says how that failed).
    conf_dir = project / "spark-conf"
    conf_dir.mkdir(exist_ok=True)
    (conf_dir / "spark-defaults.conf").write_text("".join(
        f"{key} {conf[key]}\n" for key in ("spark.jars.ivy", "spark.jars.ivySettings")))
    env = {**os.environ, "SPARK_HOME": str(spark_home()), "SPARK_LOCAL_IP": "127.0.0.1",
           "SPARK_CONF_DIR": str(conf_dir),
           "PYSPARK_PYTHON": sys.executable, "PYTHONPATH": str(ROOT),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    # The local Spark Connect server binds 15002, the one port its client tries (free_port never hands it out).
    assert not port_open(SPARK_CONNECT_PORT), f"port {SPARK_CONNECT_PORT} (Spark Connect's) is taken: {_holder()}"
    command = [str(spark_home() / "bin" / "spark-pipelines"),
               *[arg for key, value in conf.items() for arg in ("--conf", f"{key}={value}")],
               "run", "--spec", str(project / "spark-pipeline.yml")]
    return subprocess.run(command, cwd=project, env=env, capture_output=True, text=True, timeout=timeout)


def _errors(output: str) -> str:
    """The lines that say what failed (a JVM stack trace buries them under its frames), then the tail."""
    said = [line for line in output.splitlines()
            if any(word in line for word in ("Error", "Exception", "Caused by", "error:"))]
    return "\n".join(said[:40]) + "\n...\n" + output[-2000:]


def test_auto_cdc_flow_cannot_target_delta_while_append_flows_can(kafka: KafkaReference, spark: Any,
                                                                  tmp_path: Path) -> None:
    topic = f"sdp-{uuid.uuid4().hex[:8]}"
    _produce(kafka, topic, [
        dml("acct", "INSERT", {"id": "1", "owner": "ann"}, es=ES),
        dml("acct", "UPDATE", {"id": "1", "owner": "bea"}, old={"id": "1", "owner": "ann"}, es=ES + 1),
        dml("acct", "DELETE", {"id": "1", "owner": "bea"}, es=ES + 2),
    ])
    (tmp_path / "transformations").mkdir()
    shutil.copy(DEFINITION, tmp_path / "transformations" / DEFINITION.name)
    (tmp_path / "spark-pipeline.yml").write_text(yaml.safe_dump({
        "name": "lakefeed-sdp", "storage": (tmp_path / "storage").as_uri(),
        "libraries": [{"glob": {"include": "transformations/**"}}],
        # Given only as --conf, the Delta catalog was not in effect in the pipeline's session.
        "configuration": {"spark.sql.catalog.spark_catalog": DELTA_CATALOG,
                          "lakefeed.bootstrap_servers": kafka.bootstrap_servers, "lakefeed.topic": topic,
                          # A flow that cannot start fails the same way every time: no retries (default 2).
                          "spark.sql.pipelines.maxFlowRetryAttempts": "0"},
    }))
    result = run_spark_pipelines(tmp_path)
    output = result.stdout + result.stderr
    assert result.returncode != 0, _errors(output)
    assert "[AUTOCDC_TARGET_DOES_NOT_SUPPORT_MERGE]" in output and "(format: delta)" in output, _errors(output)
    # The append flow ran: our change rows, typed and sequenced, are in a Delta table.
    log = spark.read.format("delta").load(str(tmp_path / "spark-warehouse" / "acct_log"))
    assert sorted((row["id"], row["owner"], row["_lakefeed_op"]) for row in log.collect()) == [
        (1, "ann", "U"), (1, "bea", "D"), (1, "bea", "U")]
    assert log.select("_lakefeed_seq.ts").distinct().count() == 3

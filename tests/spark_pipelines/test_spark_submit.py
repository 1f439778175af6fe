"""The pipeline as a cluster application: `spark-submit spark_pipelines/submit.py run --config F --once`
against a standalone master and worker on 127.0.0.1 (started from the pyspark wheel), reading canal-JSON
from Apache Kafka and writing Delta. The executor runs in the worker's JVM, with the jars the driver
shipped; the Delta table must come out as MySQL would have it."""

import uuid
from pathlib import Path
from typing import Any

import yaml
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

import spark_pipelines.submit
from lakefeed_testing import KafkaReference
from lakefeed_testing.spark_cluster import spark_submit, standalone_cluster
from spark_pipelines.io.delta import live_rows
from tests.spark_pipelines.canal import dml

ROOT = Path(__file__).resolve().parents[2]
ES = 1_700_000_000_000


def _produce(kafka: KafkaReference, topic: str, values: list[str]) -> None:
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap_servers})
    admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers, "enable.idempotence": True, "acks": "all"})
    for value in values:
        producer.produce(topic, key=b"k", value=value.encode())  # one key: one partition, in order
    assert producer.flush(30) == 0


def test_spark_submit_runs_the_pipeline_on_a_standalone_cluster(kafka: KafkaReference, spark: Any,
                                                                tmp_path: Path) -> None:
    topic = f"submit-{uuid.uuid4().hex[:8]}"
    _produce(kafka, topic, [
        dml("acct", "INSERT", {"id": "1", "owner": "ann"}, es=ES),
        dml("acct", "INSERT", {"id": "2", "owner": "bob"}, es=ES + 1),
        dml("acct", "INSERT", {"id": "3", "owner": "cid"}, es=ES + 2),
        dml("acct", "UPDATE", {"id": "2", "owner": "bea"}, old={"id": "2", "owner": "bob"}, es=ES + 3),
        dml("acct", "DELETE", {"id": "3", "owner": "cid"}, es=ES + 4),
        dml("acct", "UPDATE", {"id": "10", "owner": "ann"}, old={"id": "1", "owner": "ann"}, es=ES + 5),
    ])
    config = tmp_path / "pipeline.yaml"
    config.write_text(yaml.safe_dump({
        "source": {"bootstrap_servers": kafka.bootstrap_servers, "topics": [topic]},
        "target": {"path": str(tmp_path / "delta")},
        "checkpoint": str(tmp_path / "checkpoint"),
    }))
    with standalone_cluster() as cluster:
        result = spark_submit(cluster, [spark_pipelines.submit.__file__, "run", "--config", str(config), "--once"],
                              env={"PYTHONPATH": str(ROOT)}, timeout=240)
        assert result.returncode == 0, result.stderr[-5000:]
        # The work ran in an executor the worker started for this application, not in the driver.
        assert list((cluster.work_dir / "worker").glob("app-*/0/stderr")), "no executor ran on the worker"
    rows = live_rows(spark, str(tmp_path / "delta" / "shop" / "acct")).select("id", "owner").collect()
    assert sorted((row["id"], row["owner"]) for row in rows) == [(2, "bea"), (10, "ann")]

"""The settings a session the pipeline starts is given (spark_pipelines/session.py): partitions sized to a
local master's cores and expressions interpreted on it, Spark's own defaults kept for any other master, and
the YAML's `spark.conf` over both."""

from __future__ import annotations

import os

import pytest

from spark_pipelines.session import LOCAL_DEFAULTS, local_master_conf, started_session_conf

SHUFFLE, SNAPSHOT = "spark.sql.shuffle.partitions", "spark.databricks.delta.snapshotPartitions"  # Spark's names
CODEGEN = "spark.sql.codegen.factoryMode"
LISTING = "spark.sql.sources.parallelPartitionDiscovery.parallelism"  # Delta's VACUUM lists files with it


@pytest.mark.parametrize(("master", "cores"), [
    ("local", 1), ("local[2]", 2), ("local[4]", 4), ("local[3,2]", 3), (" local[2] ", 2),
    ("local[*]", os.cpu_count() or 1), ("local[*,4]", os.cpu_count() or 1),
])  # fmt: skip
def test_a_local_master_gets_one_partition_per_core_and_interpreted_expressions(master: str, cores: int) -> None:
    assert local_master_conf(master) == {SHUFFLE: str(cores), SNAPSHOT: str(cores), LISTING: str(cores),
                                         CODEGEN: "NO_CODEGEN"}


@pytest.mark.parametrize("master", ["spark://10.0.0.1:7077", "yarn", "k8s://https://api:6443",
                                    "local-cluster[2,1,1024]", "sc://localhost", "locale[2]"])
def test_any_other_master_keeps_spark_and_deltas_defaults(master: str) -> None:
    assert local_master_conf(master) == {}
    assert not {SHUFFLE, LISTING, CODEGEN} & started_session_conf({}, master).keys()


def test_the_yaml_spark_conf_wins_over_the_local_sizing_and_our_defaults() -> None:
    mine = {SHUFFLE: "64", "spark.sql.session.timeZone": "Europe/Paris", CODEGEN: "FALLBACK"}
    conf = started_session_conf(mine, "local[2]")
    assert conf[SHUFFLE] == "64" and conf[SNAPSHOT] == "2" and conf[CODEGEN] == "FALLBACK"
    assert conf["spark.sql.session.timeZone"] == "Europe/Paris"
    assert {k: v for k, v in started_session_conf({}, "local[2]").items() if k in LOCAL_DEFAULTS} == LOCAL_DEFAULTS

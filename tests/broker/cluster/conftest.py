"""One 3-node cluster for the cluster tests, shared by the cluster tests: each test starts from a whole cluster
(`heal`: paused nodes resumed, killed nodes restarted) and leaves its failures for the next `heal`.

`LAKEFEED_CLUSTER_TESTS=kafka` runs the same tests against the 3-node Apache Kafka reference cluster: the
check that what they assert is Kafka's behaviour."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.broker.cluster.harness import Cluster, start_cluster

TARGET = os.environ.get("LAKEFEED_CLUSTER_TESTS", "ours")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if {"cluster", "cluster_session"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="package")  # stopped after the last cluster test: idle nodes still cost CPU
def cluster_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with start_cluster(TARGET, tmp_path_factory.mktemp("cluster3"), 3) as cluster:
        yield cluster


@pytest.fixture
def cluster(cluster_session: Cluster) -> Cluster:
    cluster_session.heal()
    return cluster_session

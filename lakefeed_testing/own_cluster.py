"""Our broker as a cluster: `broker dev-cluster`'s process manager started on a free port block, yielded once
every node is in Metadata as one cluster (so a test fails fast, with the reason, when the nodes do not
form one)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from broker.dev_cluster import DevCluster
from lakefeed_testing.errors import ServiceError
from lakefeed_testing.net import free_port_block, wait_until


def wait_cluster_formed(
    cluster: DevCluster, count: int | None = None, timeout: float = 30, client: dict[str, str] | None = None
) -> None:
    """Until Metadata asked of the whole cluster lists `count` (default: every) node as a broker; `client` adds
    client settings (security.protocol, ssl.*) for a cluster whose first listener is not PLAINTEXT."""
    want = cluster.nodes if count is None else count
    admin = AdminClient({**(client or {}), "bootstrap.servers": cluster.bootstrap_servers()})
    seen: list[int] = []

    def formed() -> bool:
        nonlocal seen
        try:
            seen = sorted(admin.list_topics(timeout=3).brokers)
        except KafkaException:
            return False
        return len(seen) >= want

    try:
        wait_until(formed, timeout=timeout, what=f"{want} brokers in one cluster")
    except ServiceError as exc:
        raise ServiceError(f"{exc}; Metadata lists brokers {seen} (node logs: {cluster.data_dir}/node-N.log)") from exc


@contextlib.contextmanager
def own_cluster(
    root: Path, nodes: int = 3, settings: dict[str, str] | None = None, timeout: float = 30,
    listener_names: tuple[str, ...] = ("PLAINTEXT",), client: dict[str, str] | None = None,
) -> Iterator[DevCluster]:
    """`listener_names` and `client`: see DevCluster and wait_cluster_formed."""
    listeners = len(listener_names)
    base = free_port_block((2 + listeners) * nodes)  # Kafka, controller and metrics ports (dev-cluster's layout)
    cluster = DevCluster(nodes, root, base, settings=settings, metrics_port=base + (1 + listeners) * nodes,
                         listener_names=listener_names)
    cluster.start()
    try:
        wait_cluster_formed(cluster, timeout=timeout, client=client)
        yield cluster
    finally:
        cluster.stop()

"""Producer ids are unique across the cluster (blocks allocated by the controller, as Kafka's
AllocateProducerIds): two idempotent producers bootstrapped through different brokers never share an id, so
their sequence numbers never clash on a partition both write to. Restarted brokers keep it so."""

from __future__ import annotations

import datetime

from confluent_kafka import Producer
from kio.schema.init_producer_id.v4.request import InitProducerIdRequest
from kio.static.primitive import i16, i64

from tests.broker.cluster.clients import consume_all, create_topic, new_topic_name
from tests.broker.cluster.harness import Cluster, until
from tests.broker.kio_wire import roundtrip

_REQUEST = InitProducerIdRequest(transactional_id=None, transaction_timeout=datetime.timedelta(seconds=60),
                                 producer_id=i64(-1), producer_epoch=i16(-1))


def _new_ids(cluster: Cluster, count: int) -> list[int]:
    ids = []
    for i in range(count):
        port = cluster.ports[cluster.node_ids[i % len(cluster.node_ids)]]
        _, answer = roundtrip(port, 22, 4, _REQUEST)
        assert answer.error_code == 0, answer
        ids.append(int(answer.producer_id))
    return ids


def test_every_broker_hands_out_different_producer_ids(cluster: Cluster) -> None:
    first = _new_ids(cluster, 9)
    assert len(set(first)) == 9, first
    victim = cluster.node_ids[0]
    cluster.kill(victim)
    cluster.restart(victim)
    until(lambda: _new_ids(cluster, 3), 30, "InitProducerId on every broker after the restart")
    after = _new_ids(cluster, 9)
    assert not set(first) & set(after) and len(set(after)) == 9, (first, after)


def test_idempotent_producers_on_different_brokers_write_one_partition(cluster: Cluster) -> None:
    topic = new_topic_name()
    create_topic(cluster.bootstrap, topic, partitions=1)
    producers = [Producer({"bootstrap.servers": f"127.0.0.1:{cluster.ports[n]}", "acks": "all",
                           "enable.idempotence": True}) for n in cluster.node_ids]
    for round_ in range(5):
        for i, producer in enumerate(producers):
            producer.produce(topic, str(round_ * 10 + i).encode(), partition=0)
            assert producer.flush(30) == 0
    got = consume_all(cluster.bootstrap, topic)
    assert sorted(seq for _, seq in got[0]) == sorted(r * 10 + i for r in range(5) for i in range(len(producers)))

"""ListPartitionReassignments (46): the partition reassignments under way, which here are always none.

This broker never moves a partition's replicas to other brokers (it serves no AlterPartitionReassignments), so
no reassignment is ever under way. Kafka answers a cluster in that state with no topics and no error, both when
the request asks for every reassignment (null topics) and when it names partitions, unknown topics included.
KafkaJS's admin.listPartitionReassignments and `kafka-reassign-partitions --list` ask it.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.handlers._build import NO_THROTTLE, build
from broker.handlers.context import BrokerState, Request
from broker.protocol.apis import response_class


async def handle(state: BrokerState, request: Request) -> Any:
    cls = response_class(request.header.api_key, request.header.api_version)
    return build(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.none, error_message=None, topics=())

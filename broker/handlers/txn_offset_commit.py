"""TxnOffsetCommit (28): refused, see _transactions."""

from __future__ import annotations

from typing import Any

from broker.handlers._build import NO_THROTTLE, build, nested
from broker.handlers._transactions import refuse
from broker.handlers.context import BrokerState, Request
from broker.protocol.apis import response_class


async def handle(state: BrokerState, request: Request) -> Any:
    body = request.body
    cls = response_class(request.header.api_key, request.header.api_version)
    code = refuse(request, body.transactional_id)
    partition_cls = nested(cls, "TxnOffsetCommitResponsePartition")
    topics = tuple(
        build(nested(cls, "TxnOffsetCommitResponseTopic"), name=t.name,
              partitions=tuple(build(partition_cls, partition_index=p.partition_index, error_code=code)
                               for p in t.partitions))
        for t in body.topics
    )
    return build(cls, throttle_time=NO_THROTTLE, topics=topics)

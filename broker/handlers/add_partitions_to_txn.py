"""AddPartitionsToTxn (24): refused, see _transactions."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.handlers._build import NO_THROTTLE, build, nested
from broker.handlers._transactions import refuse
from broker.handlers.context import BrokerState, Request
from broker.protocol.apis import response_class


def _topics(cls: Any, topics: Any, code: ErrorCode) -> tuple[Any, ...]:
    partition_cls = nested(cls, "AddPartitionsToTxnPartitionResult")
    return tuple(
        build(nested(cls, "AddPartitionsToTxnTopicResult"), name=t.name,
              results_by_partition=tuple(build(partition_cls, partition_index=p, partition_error_code=code)
                                         for p in t.partitions))
        for t in topics
    )


async def handle(state: BrokerState, request: Request) -> Any:
    body = request.body
    cls = response_class(request.header.api_key, request.header.api_version)
    if hasattr(body, "transactions"):  # v4+: batched by transactional id
        results = tuple(
            build(nested(cls, "AddPartitionsToTxnResult"), transactional_id=txn.transactional_id,
                  topic_results=_topics(cls, txn.topics, refuse(request, txn.transactional_id)))
            for txn in body.transactions
        )
        return build(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.none, results_by_transaction=results)
    code = refuse(request, body.v3_and_below_transactional_id)
    return build(cls, throttle_time=NO_THROTTLE, results_by_topic_v3_and_below=_topics(cls, body.v3_and_below_topics,
                                                                                      code))

"""DescribeTransactions (65): the coordinator's state of each transactional id (`kafka-transactions
describe`): TRANSACTIONAL_ID_NOT_FOUND for an unknown id, NOT_COORDINATOR when another broker has it."""

from __future__ import annotations

import datetime
from typing import Any

from kio.schema.errors import ErrorCode

from broker.handlers._build import NO_THROTTLE, build, nested
from broker.handlers._transactions import check_coordinator
from broker.handlers.context import BrokerState, Request
from broker.protocol.apis import response_class
from broker.protocol.errors import KafkaApiError

_EPOCH = datetime.datetime.fromtimestamp(0, datetime.UTC)


def _describe(state: BrokerState, cls: Any, transactional_id: str) -> Any:
    empty = dict(transaction_state="", transaction_timeout=datetime.timedelta(0), transaction_start_time=_EPOCH,
                 producer_id=-1, producer_epoch=-1, topics=())
    try:
        check_coordinator(state, transactional_id)
    except KafkaApiError as exc:
        return build(nested(cls, "TransactionState"), error_code=exc.code, transactional_id=transactional_id, **empty)
    value = state.transactions.get(transactional_id)
    if value is None:
        return build(nested(cls, "TransactionState"), error_code=ErrorCode.transactional_id_not_found,
                     transactional_id=transactional_id, **empty)
    by_topic: dict[str, list[int]] = {}
    for topic, partition in value.partitions:
        by_topic.setdefault(topic, []).append(partition)
    start = (datetime.datetime.fromtimestamp(value.start_ms / 1000, datetime.UTC) if value.start_ms >= 0
             else _EPOCH)
    return build(nested(cls, "TransactionState"), error_code=ErrorCode.none, transactional_id=transactional_id,
                 transaction_state=value.status.display,
                 transaction_timeout=datetime.timedelta(milliseconds=value.timeout_ms),
                 transaction_start_time=start, producer_id=value.producer_id, producer_epoch=value.producer_epoch,
                 topics=tuple(build(nested(cls, "TopicData"), topic=t, partitions=tuple(ps))
                              for t, ps in sorted(by_topic.items())))


async def handle(state: BrokerState, request: Request) -> Any:
    cls = response_class(request.header.api_key, request.header.api_version)
    states = tuple(_describe(state, cls, txn_id) for txn_id in request.body.transactional_ids)
    return build(cls, throttle_time=NO_THROTTLE, transaction_states=states)

"""AddPartitionsToTxn (24): a producer adds the partitions it is about to write to its transaction.

v0-3 come from producers (one transactional id); v4+ batch several ids and carry `verify_only`, the
check a partition leader makes under KIP-890 (answered from the coordinator's state, nothing added).
A partition of an unknown topic fails with UNKNOWN_TOPIC_OR_PARTITION and the rest of the request with
OPERATION_NOT_ATTEMPTED, nothing added, as in Kafka.
"""

from __future__ import annotations

import logging
from typing import Any

from kio.schema.errors import ErrorCode

from broker.handlers._build import NO_THROTTLE, build, nested
from broker.handlers._transactions import check_coordinator, fenced_code
from broker.handlers.context import BrokerState, Request
from broker.protocol.apis import response_class
from broker.protocol.errors import KafkaApiError

log = logging.getLogger("broker.transactions")
_FENCED_SINCE = 2
TopicPartition = tuple[str, int]


def _results(cls: Any, topics: Any, codes: dict[TopicPartition, ErrorCode]) -> tuple[Any, ...]:
    partition_cls = nested(cls, "AddPartitionsToTxnPartitionResult")
    return tuple(
        build(nested(cls, "AddPartitionsToTxnTopicResult"), name=t.name,
              results_by_partition=tuple(
                  build(partition_cls, partition_index=p, partition_error_code=codes[(t.name, int(p))])
                  for p in t.partitions))
        for t in topics
    )


def _unknown(state: BrokerState, wanted: list[TopicPartition]) -> list[TopicPartition]:
    unknown = []
    for name, index in wanted:
        topic = state.topics.get(name)
        if topic is None or not 0 <= index < topic.partitions:
            unknown.append((name, index))
    return unknown


async def _add(state: BrokerState, version: int, transactional_id: str, producer_id: int, epoch: int,
               topics: Any, verify_only: bool) -> dict[TopicPartition, ErrorCode]:
    wanted = [(t.name, int(p)) for t in topics for p in t.partitions]
    try:
        check_coordinator(state, transactional_id)
        if verify_only:
            return {tp: ErrorCode.none if state.transactions.includes(transactional_id, producer_id, epoch, tp)
                    else ErrorCode.invalid_txn_state for tp in wanted}
        unknown = _unknown(state, wanted)
        if unknown:
            return {tp: ErrorCode.unknown_topic_or_partition if tp in unknown else ErrorCode.operation_not_attempted
                    for tp in wanted}
        await state.transactions.add_partitions(transactional_id, producer_id, epoch, wanted)
        return dict.fromkeys(wanted, ErrorCode.none)
    except KafkaApiError as exc:
        if exc.code not in (ErrorCode.concurrent_transactions, ErrorCode.not_coordinator):
            log.warning("AddPartitionsToTxn for %r refused: %s", transactional_id, exc)
        return dict.fromkeys(wanted, fenced_code(exc, version, _FENCED_SINCE))


async def handle(state: BrokerState, request: Request) -> Any:
    body = request.body
    version = request.header.api_version
    cls = response_class(request.header.api_key, version)
    if hasattr(body, "transactions"):  # v4+: batched by transactional id
        results = []
        for txn in body.transactions:
            codes = await _add(state, version, txn.transactional_id, int(txn.producer_id), int(txn.producer_epoch),
                               txn.topics, bool(txn.verify_only))
            results.append(build(nested(cls, "AddPartitionsToTxnResult"), transactional_id=txn.transactional_id,
                                 topic_results=_results(cls, txn.topics, codes)))
        return build(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.none, results_by_transaction=tuple(results))
    codes = await _add(state, version, body.v3_and_below_transactional_id, int(body.v3_and_below_producer_id),
                       int(body.v3_and_below_producer_epoch), body.v3_and_below_topics, False)
    return build(cls, throttle_time=NO_THROTTLE,
                 results_by_topic_v3_and_below=_results(cls, body.v3_and_below_topics, codes))

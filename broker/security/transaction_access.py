"""Access rules of producer ids and transactions: WRITE on the transactional id for every transactional
request, plus WRITE on the topics added and READ on the group and its topics for offsets; WriteTxnMarkers
and the broker-to-broker AddPartitionsToTxn (v4+) need CLUSTER_ACTION (Kafka's KafkaApis)."""

from __future__ import annotations

import dataclasses
import datetime
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from broker.handlers._build import NO_THROTTLE, build, nested, partition_errors
from broker.protocol.apis import api_key, response_class
from broker.security.acls import Operation
from broker.security.rule_kinds import (
    CAF,
    GAF,
    GROUP,
    TAF,
    TOPIC,
    TXN,
    TXN_AF,
    Caller,
    Handler,
    Rule,
    cluster,
    filtered,
    per_item,
    whole,
)

if TYPE_CHECKING:
    from broker.handlers.context import BrokerState, Request

# --- Producer ids and cluster-wide APIs -----------------------------------------------------------------

def _init_producer_id_allowed(caller: Caller, request: Request) -> bool:
    transactional_id = request.body.transactional_id
    if transactional_id is not None:
        return caller.may(Operation.WRITE, TXN, transactional_id)
    # Kafka 3+: an idempotent producer needs IDEMPOTENT_WRITE on the cluster or WRITE on some topic.
    return caller.may_cluster(Operation.IDEMPOTENT_WRITE) or caller.authorizer.allowed_on_any(
        caller.principal, caller.host, Operation.WRITE, TOPIC)


def _init_producer_id_denied(cls: Any, request: Request) -> Any:
    code = TXN_AF if request.body.transactional_id is not None else CAF
    return build(cls, throttle_time=NO_THROTTLE, error_code=code, producer_id=-1, producer_epoch=-1)



# --- Transactions ------------------------------------------------------------------------------------------

def txn_write(caller: Caller, request: Request) -> bool:
    return caller.may(Operation.WRITE, TXN, request.body.transactional_id)


def _txn_denied(cls: Any, request: Request) -> Any:
    return build(cls, throttle_time=NO_THROTTLE, error_code=TXN_AF, producer_id=-1, producer_epoch=-1)


def _add_offsets_allowed(caller: Caller, request: Request) -> bool:
    return txn_write(caller, request) and caller.may(Operation.READ, GROUP, request.body.group_id)


def _add_offsets_denied(cls: Any, request: Request) -> Any:
    return build(cls, throttle_time=NO_THROTTLE, error_code=TXN_AF if not request.body.transactional_id else GAF)


async def _add_partitions(caller: Caller, state: BrokerState, request: Request, handler: Handler) -> Any:
    body = request.body
    cls = response_class(request.header.api_key, request.header.api_version)
    if hasattr(body, "transactions"):  # v4+: between brokers (KIP-890)
        if caller.may_cluster(Operation.CLUSTER_ACTION):
            return await handler(state, request)
        return build(cls, throttle_time=NO_THROTTLE, error_code=CAF, results_by_transaction=())
    allowed_txn = caller.may(Operation.WRITE, TXN, body.v3_and_below_transactional_id)
    denied = {t.name for t in body.v3_and_below_topics if not caller.may(Operation.WRITE, TOPIC, t.name)}
    if allowed_txn and not denied:
        return await handler(state, request)
    # As Kafka: nothing is added; the denied ones fail with their error, the rest OPERATION_NOT_ATTEMPTED.
    partition_cls = nested(cls, "AddPartitionsToTxnPartitionResult")
    return build(cls, throttle_time=NO_THROTTLE, results_by_topic_v3_and_below=tuple(
        build(nested(cls, "AddPartitionsToTxnTopicResult"), name=t.name, results_by_partition=tuple(
            build(partition_cls, partition_index=p, partition_error_code=(
                TXN_AF if not allowed_txn else TAF if t.name in denied else ErrorCode.operation_not_attempted))
            for p in t.partitions))
        for t in body.v3_and_below_topics))


async def _txn_offset_commit(caller: Caller, state: BrokerState, request: Request, handler: Handler) -> Any:
    body = request.body
    code = (TXN_AF if not txn_write(caller, request) else
            GAF if not caller.may(Operation.READ, GROUP, body.group_id) else None)
    denied = {t.name for t in body.topics if not caller.may(Operation.READ, TOPIC, t.name)}
    if code is None and not denied:
        return await handler(state, request)
    cls = response_class(request.header.api_key, request.header.api_version)
    return build(cls, throttle_time=NO_THROTTLE, topics=tuple(
        partition_errors(cls, "TxnOffsetCommit", t,
                         lambda name, _: code or (TAF if name in denied else ErrorCode.operation_not_attempted))
        for t in body.topics))


def _write_txn_markers_denied(cls: Any, request: Request) -> Any:
    return build(cls, markers=tuple(
        build(nested(cls, "WritableTxnMarkerResult"), producer_id=m.producer_id, topics=tuple(
            build(nested(cls, "WritableTxnMarkerTopicResult"), name=t.name, partitions=tuple(
                build(nested(cls, "WritableTxnMarkerPartitionResult"), partition_index=i, error_code=CAF)
                for i in t.partition_indexes))
            for t in m.topics))
        for m in request.body.markers))


def _list_transactions(caller: Caller, response: Any, request: Request) -> Any:
    return dataclasses.replace(response, transaction_states=tuple(
        t for t in response.transaction_states if caller.may(Operation.DESCRIBE, TXN, t.transactional_id)))


_EPOCH_START = datetime.datetime.fromtimestamp(0, datetime.UTC)




TRANSACTION_RULES: dict[int, Rule] = {  # api key -> rule
    api_key("init_producer_id"): whole(_init_producer_id_allowed, _init_producer_id_denied),
    api_key("end_txn"): whole(txn_write, _txn_denied),
    api_key("add_offsets_to_txn"): whole(_add_offsets_allowed, _add_offsets_denied),
    api_key("add_partitions_to_txn"): _add_partitions,
    api_key("txn_offset_commit"): _txn_offset_commit,
    api_key("write_txn_markers"): whole(cluster(Operation.CLUSTER_ACTION), _write_txn_markers_denied),
    api_key("describe_transactions"): per_item(
        "transactional_ids", lambda c, s, t: c.may(Operation.DESCRIBE, TXN, t),
        lambda cls, t, r: build(nested(cls, "TransactionState"), error_code=TXN_AF, transactional_id=t,
                                transaction_state="", transaction_timeout=datetime.timedelta(0),
                                transaction_start_time=_EPOCH_START, producer_id=-1, producer_epoch=-1, topics=()),
        "transaction_states"),
    api_key("list_transactions"): filtered(_list_transactions),
}

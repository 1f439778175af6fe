"""OffsetFetch (9): committed offsets of one group (v1-7) or several groups (v8).

With `require_stable` (v7+, sent by read_committed consumers, KIP-447) a partition whose offset an open
transaction has staged (TxnOffsetCommit not yet committed or aborted) answers UNSTABLE_OFFSET_COMMIT, which
clients retry, so a consumer taking over never starts from an offset that is about to change; such a partition
shows no offset (-1), as in Kafka.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.handlers._build import NO_THROTTLE, build, nested
from broker.handlers.context import BrokerState, Request
from broker.protocol.apis import response_class


def _topics(state: BrokerState, cls: Any, group_id: str, wanted: Any, suffix: str,
            require_stable: bool) -> tuple[Any, ...]:
    topic_cls = nested(cls, f"OffsetFetchResponseTopic{suffix}")
    partition_cls = nested(cls, f"OffsetFetchResponsePartition{suffix}")
    if wanted is None:  # null: every partition the group committed
        by_topic: dict[str, list[int]] = {}
        for topic, partition in state.offsets.partitions(group_id):
            by_topic.setdefault(topic, []).append(partition)
        requested = list(by_topic.items())
    else:
        requested = [(t.name, list(t.partition_indexes)) for t in wanted]
    unstable = state.offsets.pending_partitions(group_id) if require_stable else set()
    result = []
    for name, partitions in requested:
        answers = []
        for index in partitions:
            # an unstable partition shows no offset, as Kafka's OffsetMetadataManager.fetchOffsets answers it
            is_unstable = (name, index) in unstable
            committed = None if is_unstable else state.offsets.fetch(group_id, name, index)
            answers.append(
                build(
                    partition_cls,
                    partition_index=index,
                    committed_offset=committed.offset if committed else -1,
                    committed_leader_epoch=committed.leader_epoch if committed else -1,
                    metadata=committed.metadata if committed else "",
                    error_code=ErrorCode.unstable_offset_commit if is_unstable else ErrorCode.none,
                )
            )
        result.append(build(topic_cls, name=name, partitions=tuple(answers)))
    return tuple(result)


async def handle(state: BrokerState, request: Request) -> Any:
    body = request.body
    cls = response_class(request.header.api_key, request.header.api_version)
    stable = bool(getattr(body, "require_stable", False))
    if hasattr(body, "groups"):
        group_cls = nested(cls, "OffsetFetchResponseGroup")
        groups = tuple(
            build(group_cls, group_id=g.group_id, topics=_topics(state, cls, g.group_id, g.topics, "s", stable),
                  error_code=ErrorCode.none)
            for g in body.groups
        )
        return build(cls, throttle_time=NO_THROTTLE, groups=groups)
    topics = _topics(state, cls, body.group_id, body.topics, "", stable)
    return build(cls, throttle_time=NO_THROTTLE, topics=topics, error_code=ErrorCode.none)

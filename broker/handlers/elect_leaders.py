"""ElectLeaders (43): preferred-leader election (kafka-leader-election --election-type PREFERRED).

Each partition answers ELECTION_NOT_NEEDED when its first replica already leads,
PREFERRED_LEADER_NOT_AVAILABLE when that replica is not alive and in sync, otherwise the controller
moves the leadership and the partition answers once this broker's metadata shows it. Unclean
elections (type 1) are refused: they can lose acknowledged data, and `unclean.leader.election.enable`
is the switch for that.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from broker.handlers import _placement
from broker.handlers._build import NO_THROTTLE, build, nested
from broker.handlers.context import BrokerState, Request
from broker.protocol.apis import response_class

PREFERRED = 0


def _requested(state: BrokerState, body: Any) -> list[tuple[str, int]]:
    if body.topic_partitions is None:  # null: every partition
        return [(t.name, p) for t in _placement.known_topics(state) for p in range(t.partitions)]
    return [(t.topic, int(p)) for t in body.topic_partitions for p in t.partitions]


def _check(state: BrokerState, election_type: int, topic: str, partition: int) -> tuple[ErrorCode, str | None]:
    known = state.topics.get(topic)
    views = _placement.partitions(state, known) if known is not None else []
    if not 0 <= partition < len(views):
        return ErrorCode.unknown_topic_or_partition, f"{topic}-{partition} does not exist"
    if election_type != PREFERRED:
        return ErrorCode.invalid_request, "only preferred-leader election (type 0) is served"
    view = views[partition]
    preferred = view.replicas[0] if view.replicas else -1
    if view.leader == preferred:
        return ErrorCode.election_not_needed, f"replica {preferred} already leads {topic}-{partition}"
    if preferred in view.offline or preferred not in view.isr:
        return ErrorCode.preferred_leader_not_available, f"replica {preferred} is not alive and in sync"
    return ErrorCode.none, None


async def handle(state: BrokerState, request: Request) -> Any:
    body = request.body
    cls = response_class(request.header.api_key, request.header.api_version)
    election_type = int(getattr(body, "election_type", PREFERRED))
    results = {tp: _check(state, election_type, *tp) for tp in _requested(state, body)}
    todo = [tp for tp, (code, _) in results.items() if code == ErrorCode.none]
    if todo:
        try:
            await state.role.elect_preferred_leaders(todo, min(body.timeout.total_seconds(), 30.0))
        except Exception as exc:  # the controller is unreachable or refused: say so per partition
            for tp in todo:
                results[tp] = (ErrorCode.request_timed_out, f"election not done: {exc}")
    by_topic: dict[str, list[Any]] = {}
    for (topic, partition), (code, message) in results.items():
        by_topic.setdefault(topic, []).append(
            build(nested(cls, "PartitionResult"), partition_id=partition, error_code=code, error_message=message)
        )
    return build(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.none, replica_election_results=tuple(
        build(nested(cls, "ReplicaElectionResult"), topic=topic, partition_result=tuple(parts))
        for topic, parts in by_topic.items()
    ))

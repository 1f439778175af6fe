"""DescribeLogDirs (35): the broker's log directory, the partition replicas it holds, their sizes and offset lag.

As Apache Kafka's ReplicaManager.describeLogDirs: one result per log dir (this broker has one, `log.dirs`) with
the volume's total and usable bytes (v4+); per replica hosted here the size of its segment files and
`offset_lag = max(high watermark - log end offset, 0)` (getLogEndOffsetLag; a follower's high watermark never
passes its own log end, so current replicas report 0, as in Kafka); topics with no partition asked for are
left out. A null topic list asks for every partition. Used by `kafka-log-dirs --describe`, Cruise Control,
AKHQ and franz-go's kadm.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator, Sequence
from typing import Any, Protocol, runtime_checkable

from kio.schema.errors import ErrorCode

from broker.handlers._build import NO_THROTTLE, build, nested
from broker.handlers.context import BrokerState, Request
from broker.log_store import PartitionLog
from broker.protocol.apis import response_class
from broker.topics import Topic


class _Sized(Protocol):
    @property
    def size(self) -> int: ...


@runtime_checkable
class SegmentedLog(Protocol):
    """A log kept in segment files (the disk store); its size is theirs."""

    @property
    def segments(self) -> Sequence[_Sized]: ...


def _hosted(state: BrokerState) -> Iterator[tuple[Topic, int]]:
    """Every partition with a replica on this broker: all of them on a single node; in a cluster, those whose
    replica set names this broker in the metadata."""
    for topic in state.topics.all():
        for index in state.role.hosted(topic):
            yield topic, index


def _size(plog: PartitionLog) -> int:
    return sum(segment.size for segment in plog.segments) if isinstance(plog, SegmentedLog) else 0


def _offset_lag(state: BrokerState, topic: Topic, index: int, plog: PartitionLog) -> int:
    return state.role.offset_lag((topic.name, index), plog)


async def handle(state: BrokerState, request: Request) -> Any:
    cls = response_class(request.header.api_key, request.header.api_version)
    asked = request.body.topics
    wanted = None if asked is None else {(t.topic, int(p)) for t in asked for p in t.partitions}
    partition_cls = nested(cls, "DescribeLogDirsPartition")
    by_topic: dict[str, list[Any]] = {}
    for topic, index in _hosted(state):
        if wanted is not None and (topic.name, index) not in wanted:
            continue
        plog = state.partitions.log(topic, index)
        by_topic.setdefault(topic.name, []).append(build(
            partition_cls, partition_index=index, partition_size=_size(plog),
            offset_lag=_offset_lag(state, topic, index, plog), is_future_key=False,
        ))  # fmt: skip
    log_dir = state.config.data_dir.resolve()
    usage = shutil.disk_usage(log_dir)
    topics = tuple(build(nested(cls, "DescribeLogDirsTopic"), name=name, partitions=tuple(parts))
                   for name, parts in sorted(by_topic.items()))  # fmt: skip
    result = build(nested(cls, "DescribeLogDirsResult"), error_code=ErrorCode.none, log_dir=str(log_dir),
                   topics=topics, total_bytes=usage.total, usable_bytes=usage.free)  # fmt: skip
    return build(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.none, results=(result,))

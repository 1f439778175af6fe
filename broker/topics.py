"""Topic metadata of the single-node broker: names, ids, partition counts, topic configs.

Kept in `<data-dir>/topics.json` (rewritten atomically on change) so topics survive a restart; the
partition data lives in the LogStore.
"""

from __future__ import annotations

import json
import os
import re
import uuid
from dataclasses import dataclass, field, replace
from pathlib import Path

from kio.schema.errors import ErrorCode

from broker.protocol.errors import KafkaApiError

_LEGAL = re.compile(r"^[a-zA-Z0-9._-]+$")
MAX_NAME_LENGTH = 249
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})


@dataclass(frozen=True)
class Topic:
    name: str
    topic_id: uuid.UUID
    partitions: int
    configs: dict[str, str] = field(default_factory=dict)

    @property
    def is_internal(self) -> bool:
        return self.name in INTERNAL_TOPICS


def validate_name(name: str | None) -> str:
    if not name:
        raise KafkaApiError(ErrorCode.invalid_topic_exception, "topic name is empty")
    if name in (".", ".."):
        raise KafkaApiError(ErrorCode.invalid_topic_exception, f"topic name {name!r} is not allowed")
    if len(name) > MAX_NAME_LENGTH:
        raise KafkaApiError(
            ErrorCode.invalid_topic_exception, f"topic name is {len(name)} chars; the limit is {MAX_NAME_LENGTH}"
        )
    if not _LEGAL.match(name):
        raise KafkaApiError(
            ErrorCode.invalid_topic_exception,
            f"topic name {name!r} has characters other than ASCII letters, digits, '.', '_' and '-'",
        )
    return name


class TopicRegistry:
    def __init__(self, path: Path | None) -> None:
        self._path = path
        self._topics: dict[str, Topic] = {}
        self._by_id: dict[uuid.UUID, Topic] = {}
        if path is not None and path.exists():
            for item in json.loads(path.read_text(encoding="utf-8")):
                self._put(Topic(item["name"], uuid.UUID(item["id"]), item["partitions"], item["configs"]))

    def _put(self, topic: Topic) -> None:
        self._topics[topic.name] = topic
        self._by_id[topic.topic_id] = topic

    def _save(self) -> None:
        if self._path is None:
            return
        items = [
            {"name": t.name, "id": str(t.topic_id), "partitions": t.partitions, "configs": t.configs}
            for t in self._topics.values()
        ]
        temporary = self._path.with_suffix(".tmp")
        temporary.write_text(json.dumps(items, indent=1), encoding="utf-8")
        os.replace(temporary, self._path)

    def get(self, name: str) -> Topic | None:
        return self._topics.get(name)

    def by_id(self, topic_id: uuid.UUID) -> Topic | None:
        return self._by_id.get(topic_id)

    def all(self) -> list[Topic]:
        return list(self._topics.values())

    def create(
        self, name: str, partitions: int, configs: dict[str, str], topic_id: uuid.UUID | None = None
    ) -> Topic:
        validate_name(name)
        if name in self._topics:
            raise KafkaApiError(ErrorCode.topic_already_exists, f"topic {name!r} already exists")
        if partitions < 1:
            raise KafkaApiError(ErrorCode.invalid_partitions, f"partition count {partitions} must be >= 1")
        topic = Topic(name, topic_id or uuid.uuid4(), partitions, dict(configs))
        self._put(topic)
        self._save()
        return topic

    def delete(self, name: str) -> Topic:
        topic = self._topics.pop(name, None)
        if topic is None:
            raise KafkaApiError(ErrorCode.unknown_topic_or_partition, f"topic {name!r} does not exist")
        del self._by_id[topic.topic_id]
        self._save()
        return topic

    def update(self, topic: Topic, **changes: object) -> Topic:
        updated = replace(topic, **changes)  # type: ignore[arg-type]
        self._put(updated)
        self._save()
        return updated

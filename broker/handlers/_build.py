"""Build kio response entities for whichever version a client asked for.

kio generates one class per API version; handlers are written once against the superset of fields
and `build` keeps only the fields the chosen version has (the rest do not exist on the wire).
"""

from __future__ import annotations

import datetime
import sys
from collections.abc import Callable
from dataclasses import fields
from functools import cache
from typing import Any

NO_THROTTLE = datetime.timedelta(0)


@cache
def _field_names(cls: type) -> frozenset[str]:
    return frozenset(f.name for f in fields(cls))


def build(cls: Any, **values: Any) -> Any:
    names = _field_names(cls)
    return cls(**{key: value for key, value in values.items() if key in names})


def nested(response_cls: Any, name: str) -> Any:
    """A nested entity class defined next to `response_cls` (same API version)."""
    return getattr(sys.modules[response_cls.__module__], name)


def has_field(cls: Any, name: str) -> bool:
    return name in _field_names(cls)


def partition_errors(cls: Any, api: str, topic: Any, code_of: Callable[[str, int], Any]) -> Any:
    """The `<api>ResponseTopic` answering a request topic (name, partitions with partition_index), each partition
    with the error code `code_of(topic name, partition index)`: the whole answer of OffsetCommit, TxnOffsetCommit
    and OffsetDelete per partition, from their handlers and from the access rules that refuse them."""
    partition_cls = nested(cls, f"{api}ResponsePartition")
    return build(nested(cls, f"{api}ResponseTopic"), name=topic.name, partitions=tuple(
        build(partition_cls, partition_index=p.partition_index, error_code=code_of(topic.name, p.partition_index))
        for p in topic.partitions))

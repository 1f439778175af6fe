"""A length and null check that runs before kio decodes a request body.

kio's native reader pre-allocates arrays from the declared element count, so a 30-byte frame that
claims 2**31 elements aborts the whole process (Rust `handle_alloc_error`). This walker follows the same
schema (kio's dataclass field metadata) without building anything and rejects any array, string or
bytes length that does not fit in what is left of the frame. It is compiled once per entity class
into a list of small closures, so the hot Produce path pays a few microseconds.

It also rejects a null (-1) length or count on a field the schema does not declare nullable, and any
length below -1: kio would hand the handler `None` where it expects a tuple or a string. Apache Kafka's
generated readers (e.g. `ProduceRequestData.read`) throw "non-nullable field topicData was serialized as
null" there, `RequestContext.parseRequest` turns that into InvalidRequestException and the SocketServer
closes the connection without a response; the caller does the same with the MalformedFrame raised here.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import Field, fields
from functools import cache
from typing import Any

from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveTupleField,
    classify_field,
    get_field_tag,
    get_schema_field_type,
    is_optional,
)

from broker.protocol.errors import MalformedFrame

Check = Callable[[bytes, int, int], int]  # (buffer, position, end) -> new position

_FIXED = {
    "bool": 1, "int8": 1, "int16": 2, "uint16": 2, "error_code": 2, "int32": 4, "timedelta_i32": 4,
    "int64": 8, "timedelta_i64": 8, "datetime_i64": 8, "float64": 8, "uuid": 16, "uint32": 4, "uint64": 8,
}  # fmt: skip
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


def _bad(message: str) -> MalformedFrame:
    return MalformedFrame(f"request body: {message}")


def _uvarint(buffer: bytes, position: int, end: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if position >= end or shift > 28:
            raise _bad("truncated or oversized varint")
        byte = buffer[position]
        position += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, position
        shift += 7


def _fixed(size: int) -> Check:
    def check(buffer: bytes, position: int, end: int) -> int:
        position += size
        if position > end:
            raise _bad("truncated")
        return position

    return check


def _checked_length(length: int, name: str, nullable: bool, what: str) -> None:
    if length == -1 and not nullable:
        raise _bad(f"non-nullable field {name} was serialized as null")
    if length < -1:
        raise _bad(f"field {name} has an invalid {what} {length}")


def _length_prefixed(flexible: bool, wide: bool, name: str, nullable: bool) -> Check:
    """Strings (int16 length) and bytes/records (int32 length); compact forms when flexible."""

    def check(buffer: bytes, position: int, end: int) -> int:
        if flexible:
            length, position = _uvarint(buffer, position, end)
            length -= 1
        else:
            width = 4 if wide else 2
            if position + width > end:
                raise _bad("truncated length")
            length = (_I32 if wide else _I16).unpack_from(buffer, position)[0]
            position += width
        _checked_length(length, name, nullable, "length")
        if length > end - position:
            raise _bad(f"field {name}: declared length {length} is beyond the end of the frame")
        return position + max(length, 0)

    return check


def _array(flexible: bool, item: Check, min_item: int, name: str, nullable: bool) -> Check:
    def check(buffer: bytes, position: int, end: int) -> int:
        if flexible:
            count, position = _uvarint(buffer, position, end)
            count -= 1
        else:
            if position + 4 > end:
                raise _bad("truncated array length")
            count = _I32.unpack_from(buffer, position)[0]
            position += 4
        _checked_length(count, name, nullable, "array count")
        if count * min_item > end - position:
            raise _bad(f"field {name}: array of {count} elements cannot fit in {end - position} remaining bytes")
        for _ in range(max(count, 0)):
            position = item(buffer, position, end)
        return position

    return check


def _nullable(inner: Check) -> Check:
    """Nullable structs carry an int8 marker: -1 for null, 1 for present."""

    def check(buffer: bytes, position: int, end: int) -> int:
        if position >= end:
            raise _bad("truncated")
        return position + 1 if buffer[position] == 0xFF else inner(buffer, position + 1, end)

    return check


def _primitive(kafka_type: str, flexible: bool, name: str, nullable: bool) -> tuple[Check, int]:
    if kafka_type in _FIXED:
        return _fixed(_FIXED[kafka_type]), _FIXED[kafka_type]
    if kafka_type == "string":
        return _length_prefixed(flexible, False, name, nullable), 1
    if kafka_type in ("bytes", "records"):
        return _length_prefixed(flexible, True, name, nullable), 1
    raise ValueError(f"no length check for kafka type {kafka_type!r}")


def _field_check(field: Field[Any], flexible: bool, owner: str) -> Check:
    kind = classify_field(field)
    name = f"{owner}.{field.name}"
    nullable = is_optional(field)
    if isinstance(kind, EntityTupleField):
        return _array(flexible, entity_check(kind.type_), 1, name, nullable)
    if isinstance(kind, EntityField):
        inner = entity_check(kind.type_)
        return _nullable(inner) if nullable else inner
    # Items of a primitive array are never null (Kafka's schemas have no nullable array items).
    check, size = _primitive(get_schema_field_type(field), flexible, name, nullable and not isinstance(
        kind, PrimitiveTupleField))
    if isinstance(kind, PrimitiveTupleField):
        return _array(flexible, check, size, name, nullable)
    return check


@cache
def entity_check(cls: type) -> Check:
    flexible: bool = cls.__flexible__  # type: ignore[attr-defined]
    regular: list[Check] = []
    tagged: dict[int, Check] = {}
    for field in fields(cls):
        tag = get_field_tag(field)
        if tag is None:
            regular.append(_field_check(field, flexible, cls.__name__))
        else:
            tagged[tag] = _field_check(field, flexible, cls.__name__)

    def check(buffer: bytes, position: int, end: int) -> int:
        for item in regular:
            position = item(buffer, position, end)
        if flexible:
            count, position = _uvarint(buffer, position, end)
            if count > end - position:
                raise _bad(f"{count} tagged fields cannot fit in the frame")
            for _ in range(count):
                tag, position = _uvarint(buffer, position, end)
                size, position = _uvarint(buffer, position, end)
                if size > end - position:
                    raise _bad(f"tagged field {tag} of {size} bytes is beyond the end of the frame")
                if tag in tagged:
                    tagged[tag](buffer, position, position + size)
                position += size
        return position

    return check


def check_body(cls: type, buffer: bytes, offset: int) -> None:
    """Raise MalformedFrame if any length in the body of `cls` overruns `buffer`."""
    entity_check(cls)(buffer, offset, len(buffer))

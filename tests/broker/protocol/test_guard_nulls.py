"""Null (-1) lengths where a request schema does not allow null: every supported request schema.

Apache Kafka's generated readers throw "non-nullable field X was serialized as null" and the broker
closes the connection; here decode_request must raise MalformedFrame, never hand a handler `None` where
the schema promises a tuple, a string or bytes (a Produce with topic_data=-1 used to reach the handler and
fail there with TypeError).
"""

from __future__ import annotations

import contextlib
import struct
from dataclasses import fields, is_dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.serial._introspect import is_optional

from broker.protocol.apis import SUPPORTED, request_class
from broker.protocol.errors import MalformedFrame
from broker.protocol.framing import RequestReceived, decode_request
from broker.protocol.legacy_produce import LEGACY_VERSIONS

SCHEMAS = [(key, version) for key, api in SUPPORTED.items() for version in range(api.min_version, api.max_version + 1)
           if not (key == 0 and version in LEGACY_VERSIONS)]
# Classic encodings: int16/int32 -1 is null. Flexible: compact length 0 is null.
NULL_TOKENS = [b"\xff\xff", b"\xff\xff\xff\xff", b"\x00", b"\x00\x00\x00\x00", b"\x01", b"\x00\x01"]


def _header(key: int, version: int) -> bytes:
    flexible = request_class(key, version).__flexible__
    return struct.pack(">hhih", key, version, 1, 5) + b"nulls" + (b"\x00" if flexible else b"")


def _forbidden_nulls(entity: Any, path: str = "") -> list[str]:
    """Paths of fields that are None although their schema is not nullable."""
    found = []
    for field in fields(entity):
        value = getattr(entity, field.name)
        name = f"{path}{field.name}"
        if value is None and not is_optional(field):
            found.append(name)
        items = value if isinstance(value, tuple) else (value,)
        for item in items:
            if is_dataclass(item) and not isinstance(item, type):
                found += _forbidden_nulls(item, f"{name}.")
    return found


def _assert_decodes_without_forbidden_nulls(key: int, version: int, body: bytes) -> None:
    try:
        event = decode_request(_header(key, version) + body)
    except MalformedFrame as exc:
        assert f"v{version} request from client 'nulls'" in str(exc)
        return
    assert isinstance(event, RequestReceived)
    assert not _forbidden_nulls(event.body), f"api {key} v{version}: {_forbidden_nulls(event.body)}"


@pytest.mark.parametrize(("key", "version"), SCHEMAS, ids=lambda v: str(v))
def test_all_null_bodies_of_every_schema_are_refused_or_null_only_where_allowed(key: int, version: int) -> None:
    for token in NULL_TOKENS:
        _assert_decodes_without_forbidden_nulls(key, version, token * 64)


def test_a_null_non_nullable_array_names_the_field() -> None:
    # Produce v3-v8: transactional_id null, acks 1, timeout 1000, topic_data -1.
    body = struct.pack(">hhii", -1, 1, 1000, -1)
    with pytest.raises(MalformedFrame, match=r"non-nullable field ProduceRequest.topic_data was serialized as null"):
        decode_request(_header(0, 8) + body)
    # Produce v12 (flexible): compact topic_data length 0 means null.
    with pytest.raises(MalformedFrame, match=r"non-nullable field ProduceRequest.topic_data"):
        decode_request(_header(0, 12) + b"\x00" + struct.pack(">hi", 1, 1000) + b"\x00\x00")


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(SCHEMAS), st.lists(st.sampled_from(NULL_TOKENS) | st.binary(max_size=6), max_size=40))
def test_mixed_null_and_random_tokens_never_yield_forbidden_nulls(schema: tuple[int, int], tokens: list[bytes]) -> None:
    with contextlib.suppress(MalformedFrame):
        _assert_decodes_without_forbidden_nulls(*schema, b"".join(tokens))

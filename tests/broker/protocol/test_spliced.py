"""A Fetch response spliced around file data decodes, with kio, to the same response as one built in memory:
length prefixes are rewritten for int32 (v4-v11) and compact varint (v12+) bytes fields."""

from __future__ import annotations

import struct

import pytest
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader

from broker.handlers._build import NO_THROTTLE, build, nested
from broker.protocol.apis import response_class
from broker.protocol.framing import encode_response
from broker.protocol.spliced import Insert, new_token, splice


def _response(version: int, first: bytes, second: bytes) -> object:
    cls = response_class(1, version)
    partition, topic = nested(cls, "PartitionData"), nested(cls, "FetchableTopicResponse")
    parts = tuple(
        build(partition, partition_index=i, error_code=ErrorCode.none, high_watermark=9, last_stable_offset=9,
              log_start_offset=0, aborted_transactions=None, preferred_read_replica=-1, records=data)
        for i, data in enumerate((first, second))
    )
    return build(cls, throttle_time=NO_THROTTLE, error_code=ErrorCode.none, session_id=0,
                 responses=(build(topic, topic="t", topic_id=None, partitions=parts),))


@pytest.mark.parametrize("version", [4, 11, 12, 16])
def test_spliced_frame_decodes_like_the_frame_built_in_memory(version: int) -> None:
    data1, data2 = bytes(range(256)) * 3, b"y" * 20000  # varint prefixes of 2 and 3 bytes
    token1, token2 = new_token(), new_token()
    frame = encode_response(5, _response(version, token1, token2))
    parts = splice(frame, [Insert(token1, len(data1), (data1[:100], data1[100:])),
                           Insert(token2, len(data2), (data2,))])
    joined = b"".join(parts)
    expected = encode_response(5, _response(version, data1, data2))
    assert joined == expected
    (size,) = struct.unpack_from(">i", joined)
    assert size == len(joined) - 4
    cls = response_class(1, version)
    header_size = 5 if cls.__header_schema__.__flexible__ else 4  # correlation id (+ tagged fields)
    decoded, _ = entity_reader(cls)(joined[4:], header_size)
    assert [p.records for p in decoded.responses[0].partitions] == [data1, data2]

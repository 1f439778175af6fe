"""The topics of a "consumer" protocol member's subscription (ConsumerProtocolSubscription, every version).

Each version starts with the same fields (version: int16, topics: array of string), which is all the
coordinator reads; the rest (user data, owned partitions, generation, rack) is the assignor's business.
"""

from __future__ import annotations

import struct


def subscribed_topics(metadata: bytes) -> frozenset[str] | None:
    """The topic names, or None when the bytes are not a subscription (Kafka then treats the member as
    subscribed to everything)."""
    try:
        (count,) = struct.unpack_from(">i", metadata, 2)
        position, topics = 6, set()
        for _ in range(count):
            (length,) = struct.unpack_from(">h", metadata, position)
            position += 2
            if length < 0 or position + length > len(metadata):
                return None
            topics.add(metadata[position:position + length].decode())
            position += length
    except (struct.error, UnicodeDecodeError):
        return None
    return frozenset(topics)

"""Build RecordBatch v2 bytes and raw request frames with kio, for tests that speak bytes."""

from __future__ import annotations

import datetime
import io
import socket
import ssl
import struct
import time
import uuid
from typing import Any

from kio.records.schema import NewRecordBatch, Record
from kio.records.writers import write_new_batch
from kio.schema.create_topics.v5.request import CreatableTopic, CreateTopicsRequest
from kio.schema.errors import ErrorCode
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic
from kio.serial import entity_reader

from broker.protocol.apis import response_class
from broker.protocol.framing import RequestHeader, encode_request


def record_batch(
    values: list[bytes], *, producer_id: int = -1, epoch: int = -1, base_sequence: int = -1,
    timestamp_ms: int = 1_700_000_000_000,
) -> bytes:
    stamp = datetime.datetime.fromtimestamp(timestamp_ms / 1000, datetime.UTC)
    records = tuple(
        Record(attributes=0, timestamp=stamp + datetime.timedelta(milliseconds=i), offset=i, key=None, value=v,
               headers=())
        for i, v in enumerate(values)
    )
    buffer = io.BytesIO()
    write_new_batch(buffer, NewRecordBatch(producer_id=producer_id, producer_epoch=epoch,
                                           base_sequence=base_sequence, records=records, attributes=0))
    return buffer.getvalue()


def frame(api_key: int, version: int, body: Any, correlation_id: int = 1) -> bytes:
    return encode_request(RequestHeader(api_key, version, correlation_id, "tests"), body)


def read_frame(sock: socket.socket) -> bytes:
    def exactly(count: int) -> bytes:
        data = b""
        while len(data) < count:
            chunk = sock.recv(count - len(data))
            if not chunk:
                raise ConnectionError("broker closed the connection")
            data += chunk
        return data

    (size,) = struct.unpack(">i", exactly(4))
    return exactly(size)


def roundtrip(port: int, api_key: int, version: int, body: Any,
              tls: ssl.SSLContext | None = None) -> tuple[int, Any]:
    """Send one request (over TLS with `tls`); return (correlation id, decoded response body)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        sock = tls.wrap_socket(raw, server_hostname="127.0.0.1") if tls is not None else raw
        sock.sendall(frame(api_key, version, body, correlation_id=7))
        data = read_frame(sock)
    cls = response_class(api_key, version)
    (correlation,) = struct.unpack_from(">i", data, 0)
    offset = 4 if cls.__header_schema__.__flexible__ is False else 5
    response, _ = entity_reader(cls)(data, offset)
    return correlation, response


def produce(port: int, topic: str, records: bytes) -> tuple[int, str | None]:
    """Produce v9, acks=1, one partition; returns (error code, error message) of partition 0."""
    from kio.schema.produce.v9.request import PartitionProduceData, ProduceRequest, TopicProduceData

    request = ProduceRequest(
        transactional_id=None, acks=1, timeout=datetime.timedelta(seconds=5),
        topic_data=(TopicProduceData(name=topic, partition_data=(PartitionProduceData(index=0, records=records),)),),
    )  # fmt: skip
    _, response = roundtrip(port, 0, 9, request)
    partition = response.responses[0].partition_responses[0]
    return partition.error_code, partition.error_message


def create_topic(port: int, partitions: int) -> str:
    """A new topic by raw CreateTopics v5, returned once Metadata v12 shows all its partitions: Kafka's broker
    learns of the topic from its controller a moment after CreateTopics answers."""
    name = f"t-{uuid.uuid4().hex[:10]}"
    _, created = roundtrip(port, 19, 5, CreateTopicsRequest(
        topics=(CreatableTopic(name=name, num_partitions=partitions, replication_factor=1, assignments=(),
                               configs=()),),
        timeout=datetime.timedelta(seconds=10), validate_only=False))
    assert created.topics[0].error_code == ErrorCode.none, created.topics[0]
    deadline = time.monotonic() + 20
    while True:
        _, metadata = roundtrip(port, 3, 12, MetadataRequest(
            topics=(MetadataRequestTopic(topic_id=uuid.UUID(int=0), name=name),), allow_auto_topic_creation=False,
            include_topic_authorized_operations=False))
        if metadata.topics[0].error_code == ErrorCode.none and len(metadata.topics[0].partitions) == partitions:
            return name
        assert time.monotonic() < deadline, f"{name} not in metadata: {metadata.topics[0].error_code!r}"
        time.sleep(0.1)

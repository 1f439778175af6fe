"""The pieces of one capture -> delivery -> Kafka sink attempt, built one way for every runner.

`changefeed.runner.Changefeed` (tests, benchmarks, examples) and the server's `PipelineRunner`
(an adapter over `Changefeed`) both build their attempt here, so topic sizing, the message limit,
the encoder and the large-message policy cannot drift apart between the two ways of running a feed.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from typing import TypeVar

from changefeed.codec.canal_json import CanalJsonEncoder, CanalJsonOptions
from changefeed.config import SinkOptions
from changefeed.delivery import Delivery
from changefeed.dispatch.router import DispatchRule, Router
from changefeed.model import Checkpoint
from sink.claim_check import FileClaimCheckStorage
from sink.kafka import KafkaSink, TopicInfo, prepare_topic
from sink.retry import Cancellation
from sink.uri import KafkaSinkConfig

T = TypeVar("T")


class PartitionCounts(dict[str, int]):
    """Partition count per topic, looked up (and the topic prepared) the first time a rule names it.

    partition-num, when set, wins over the topic's count: prepare_topic has already refused a
    partition-num above it and warned that only the first partition-num partitions are used.
    """

    def __init__(self, config: KafkaSinkConfig, info: TopicInfo) -> None:
        super().__init__({info.name: config.partition_num or info.partitions})
        self._config = config

    def __missing__(self, topic: str) -> int:
        info = prepare_topic(self._config, topic)
        count = self._config.partition_num or info.partitions
        self[topic] = count
        return count


def effective_sink_config(config: KafkaSinkConfig, options: SinkOptions | None) -> KafkaSinkConfig:
    """The sink URI's settings with the YAML config's sink block applied (the YAML wins where it says
    something, as in TiCDC where the changefeed config overrides the URI's large-message option)."""
    if options is None:
        return config
    policy = options.large_message_handle if options.large_message_handle != "none" else config.large_message_handle
    return dataclasses.replace(
        config,
        enable_tidb_extension=options.enable_tidb_extension or config.enable_tidb_extension,
        large_message_handle=policy,
        claim_check_storage_uri=options.claim_check_storage_uri or config.claim_check_storage_uri,
        content_compatible=options.content_compatible or config.content_compatible,
        only_output_updated_columns=options.only_output_updated_columns or config.only_output_updated_columns,
        delete_only_output_handle_key_columns=options.delete_only_output_handle_key_columns,
    )


def build_delivery(
    sink: KafkaSink,
    config: KafkaSinkConfig,
    info: TopicInfo,
    rules: tuple[DispatchRule, ...],
    *,
    start: Checkpoint | None,
    output_raw_change_event: bool,
    watermark_every: int,
    on_failure: Callable[[], None],
    on_latency: Callable[[float], None] | None = None,
) -> Delivery:
    """Encoder, router, partition counts and large-message policy around one attempt's sink."""
    storage = config.claim_check_storage_uri
    # Without a storage Delivery refuses claim-check with a clear error (config parsing prevents it).
    claim_check = FileClaimCheckStorage(storage) if config.large_message_handle == "claim-check" and storage else None
    encoder = CanalJsonEncoder(CanalJsonOptions(
        enable_tidb_extension=config.enable_tidb_extension,
        content_compatible=config.content_compatible,
        only_output_updated_columns=config.only_output_updated_columns,
        delete_only_output_handle_key_columns=config.delete_only_output_handle_key_columns,
        message_key=config.message_key,
    ))
    return Delivery(
        sink,
        encoder,
        Router(config.topic, rules),
        PartitionCounts(config, info),
        message_limit=info.max_message_bytes,
        start=start,
        output_raw_change_event=output_raw_change_event,
        watermark_every=watermark_every,
        large_message_handle=config.large_message_handle,
        claim_check=claim_check,
        on_failure=on_failure,
        on_latency=on_latency,
    )


def run_cancellable(call: Callable[[], T], cancel: Cancellation, name: str) -> T | None:
    """Run a blocking network call (admin requests wait up to the dial timeout) in a helper thread,
    so a stop never waits for it: None when cancelled first; its exception is re-raised."""
    result: list[T] = []
    failure: list[BaseException] = []

    def target() -> None:
        try:
            result.append(call())
        except BaseException as exc:
            failure.append(exc)

    helper = threading.Thread(target=target, name=name, daemon=True)
    helper.start()
    while helper.is_alive():
        if not cancel.sleep(0.05):
            return None
    if failure:
        raise failure[0]
    return result[0]

"""The shared pipeline pieces and the server's adapter over `Changefeed`, without services: the YAML
sink block wins over the URI, partition-num caps the partitions used, and the server's runner reports
a bad spec as an error and never blocks its owner on an unreachable broker."""

import time

from changefeed.config import ChangefeedConfig, SinkOptions
from changefeed.errors import ConfigError
from changefeed.lifecycle.runner import PipelineRunner, RunSpec
from changefeed.model import Checkpoint, Position
from changefeed.pipeline import PartitionCounts, effective_sink_config
from lakefeed_testing.net import free_port
from sink.kafka import TopicInfo
from sink.uri import parse_sink_uri

START = Checkpoint(Position("mysql-bin.000001", 4), 1)


def test_yaml_sink_block_wins_over_the_uri() -> None:
    uri = parse_sink_uri("kafka://127.0.0.1:9092/t?large-message-handle-option=handle-key-only")
    assert effective_sink_config(uri, None) is uri
    merged = effective_sink_config(uri, SinkOptions(enable_tidb_extension=True, large_message_handle="claim-check",
                                                    claim_check_storage_uri="file:///tmp/claims"))
    assert (merged.enable_tidb_extension, merged.large_message_handle, merged.claim_check_storage_uri) == (
        True, "claim-check", "file:///tmp/claims")
    # "none" in the YAML means "not said": the URI's policy stays.
    assert effective_sink_config(uri, SinkOptions()).large_message_handle == "handle-key-only"


def test_partition_num_caps_the_partitions_used() -> None:
    info = TopicInfo("t", partitions=6, replication_factor=1, min_insync_replicas=1, max_message_bytes=1000,
                     created=False)
    assert PartitionCounts(parse_sink_uri("kafka://127.0.0.1:9092/t?partition-num=2"), info)["t"] == 2
    assert PartitionCounts(parse_sink_uri("kafka://127.0.0.1:9092/t"), info)["t"] == 6


def _spec(source: str, sink_uri: str) -> RunSpec:
    return RunSpec("cf", source, sink_uri, ChangefeedConfig(), START, None, "sqlite://")


def test_bad_source_uri_is_reported_as_the_runners_error() -> None:
    runner = PipelineRunner(_spec("postgres://u@127.0.0.1:5432", "kafka://127.0.0.1:9092/t"))
    runner.start()
    assert isinstance(runner.error, ConfigError) and "mysql://" in str(runner.error)
    runner.stop()
    assert runner.checkpoint is None and runner.stats() == {} and not runner.finished


def test_unreachable_broker_neither_blocks_start_nor_stop() -> None:
    runner = PipelineRunner(_spec("mysql://root@127.0.0.1:3306", f"kafka://127.0.0.1:{free_port()}/t"))
    began = time.monotonic()
    runner.start()  # the topic checks (up to the 10 s dial timeout) run in the feed's thread
    assert time.monotonic() - began < 0.5
    time.sleep(0.3)
    assert runner.error is None and runner.ready_since is None and runner.checkpoint == START
    began = time.monotonic()
    runner.stop(1.0)
    assert time.monotonic() - began < 1.5
    assert runner.error is None  # stopped by its owner: nothing to report

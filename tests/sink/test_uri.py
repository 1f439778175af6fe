"""Sink URI parsing: TiCDC names and defaults, and clear errors for bad URIs."""

import re
from pathlib import Path

import pytest

from sink.errors import SinkConfigError
from sink.uri import parse_sink_uri


def test_defaults_follow_ticdc() -> None:
    config = parse_sink_uri("kafka://127.0.0.1:9092/cdc")
    assert config.bootstrap_servers == ("127.0.0.1:9092",)
    assert config.topic == "cdc"
    assert config.protocol == "canal-json"
    assert config.partition_num is None
    assert config.replication_factor == 1
    assert config.max_message_bytes == 10 * 1024 * 1024
    assert config.required_acks == -1
    assert config.compression == "none"
    assert config.auto_create_topic is True
    assert config.enable_tidb_extension is False


def test_every_parameter_is_parsed() -> None:
    config = parse_sink_uri(
        "kafka://a:1,b:2/t?protocol=canal-json&partition-num=6&replication-factor=3&max-message-bytes=2048"
        "&required-acks=1&compression=zstd&auto-create-topic=false&enable-tidb-extension=true"
        "&kafka-client-id=me&dial-timeout=5s&write-timeout=500ms&read-timeout=1m&sasl-user=u&sasl-password=s3cret"
    )
    assert config.bootstrap == "a:1,b:2"
    assert (config.partition_num, config.replication_factor, config.max_message_bytes) == (6, 3, 2048)
    assert (config.required_acks, config.compression, config.auto_create_topic) == (1, "zstd", False)
    assert config.enable_tidb_extension and config.kafka_client_id == "me"
    assert (config.dial_timeout_ms, config.write_timeout_ms, config.read_timeout_ms) == (5000, 500, 60000)
    client = config.client_config()
    assert client["security.protocol"] == "SASL_PLAINTEXT" and client["sasl.mechanism"] == "PLAIN"
    assert "s3cret" not in repr(config)


def test_the_sasl_password_from_a_file_or_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = tmp_path / "sasl"
    secret.write_text("from-file\n")
    monkeypatch.setenv("CDC_SASL", "from-env")
    base = "kafka://h:1/t?sasl-user=u&sasl-mechanism=SCRAM-SHA-512"
    assert parse_sink_uri(f"{base}&sasl-password-file={secret}").client_config()["sasl.password"] == "from-file"
    assert parse_sink_uri(f"{base}&sasl-password-env=CDC_SASL").client_config()["sasl.password"] == "from-env"
    refusals = {
        f"{base}&sasl-password=x&sasl-password-file={secret}": "give the SASL password one way",
        f"{base}&sasl-password-file={tmp_path}/missing": f"sasl-password-file={tmp_path}/missing: cannot read it",
        f"{base}&sasl-password-env=NO_SUCH_VARIABLE_X": "environment has no NO_SUCH_VARIABLE_X",
    }
    for uri, fragment in refusals.items():
        with pytest.raises(SinkConfigError, match=re.escape(fragment)):
            parse_sink_uri(uri)


@pytest.mark.parametrize(
    ("uri", "fragment"),
    [
        ("mysql://h:1/t", "scheme must be kafka://"),
        ("kafka:///t", "names no broker"),
        ("kafka://h:1", "names no topic"),
        ("kafka://h/t", "is not host:port"),
        ("kafka://h:1/t?partition-num=zero", "partition-num='zero' is not an integer"),
        ("kafka://h:1/t?partition-num=0", "out of range"),
        ("kafka://h:1/t?compression=brotli", "allowed: none, gzip, snappy, lz4, zstd"),
        ("kafka://h:1/t?required-acks=2", "required-acks=2 is out of range"),
        ("kafka://h:1/t?max-message-bytes=999999999", "out of range"),
        ("kafka://h:1/t?protocol=avro", "allowed: canal-json"),
        ("kafka://h:1/t?partitions=3", "'partitions' is unknown"),
        ("kafka://h:1/t?auto-create-topic=maybe", "not a boolean"),
        ("kafka://h:1/t?dial-timeout=soon", "not a duration"),
        ("kafka://h:1/t?partition-num=1&partition-num=2", "given 2 times"),
    ],
)
def test_bad_uris_name_the_problem(uri: str, fragment: str) -> None:
    with pytest.raises(SinkConfigError, match=None) as raised:
        parse_sink_uri(uri)
    assert fragment in str(raised.value)
    assert raised.value.retriable is False

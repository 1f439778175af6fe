"""Parse a TiCDC-style Kafka sink URI into a validated, frozen configuration.

    kafka://host:port[,host:port]/topic?protocol=canal-json&partition-num=3&replication-factor=1&...

Parameter names and defaults follow TiCDC's Kafka sink, so existing URIs keep working.
"""

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from lakefeed_common.secrets import SecretUnavailable, read_secret
from sink.errors import SinkConfigError

COMPRESSIONS = ("none", "gzip", "snappy", "lz4", "zstd")
PROTOCOLS = ("canal-json",)
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
LARGE_MESSAGE_HANDLES = ("none", "handle-key-only", "claim-check")
MESSAGE_KEYS = ("handle-key", "none")
MAX_MESSAGE_BYTES_LIMIT = 100 * 1024 * 1024  # TiCDC caps max-message-bytes at 100 MB


@dataclass(frozen=True)
class KafkaSinkConfig:
    bootstrap_servers: tuple[str, ...]
    topic: str
    protocol: str = "canal-json"
    partition_num: int | None = None  # None: use the topic's partitions; creation default is 3
    replication_factor: int = 1
    max_message_bytes: int = 10 * 1024 * 1024
    required_acks: int = -1
    compression: str = "none"
    auto_create_topic: bool = True
    enable_tidb_extension: bool = False
    content_compatible: bool = False  # canal-JSON: the server's full column type as mysqlType, as Canal
    # canal-JSON UPDATE `old` with only the changed columns (TiCDC's; content-compatible turns it on)
    only_output_updated_columns: bool = False
    # canal-JSON DELETE with only the handle key columns (TiCDC's; YAML sink block only, as in TiCDC)
    delete_only_output_handle_key_columns: bool = False
    message_key: str = "handle-key"  # Lakefeed's message key for compaction; "none" as TiCDC
    kafka_client_id: str = "lakefeed_producer"
    kafka_version: str | None = None
    dial_timeout_ms: int = 10_000
    write_timeout_ms: int = 10_000
    read_timeout_ms: int = 10_000
    enable_tls: bool = False
    ca: str | None = None
    cert: str | None = None
    key: str | None = None
    insecure_skip_verify: bool = False
    sasl_user: str | None = None
    sasl_password: str | None = field(default=None, repr=False)
    sasl_mechanism: str | None = None
    # What to do with one row whose message exceeds the effective limit (TiCDC's
    # large-message-handle-option); claim-check needs claim-check-storage-uri (file:// for now).
    large_message_handle: str = "none"
    claim_check_storage_uri: str | None = None
    # Lakefeed's: each source transaction becomes one Kafka transaction under this transactional.id, so
    # read_committed consumers see a transaction's rows all at once or not at all (sink/kafka/producer.py).
    transactional_id: str | None = None

    @property
    def bootstrap(self) -> str:
        return ",".join(self.bootstrap_servers)

    def client_config(self) -> dict[str, Any]:
        """librdkafka settings shared by producer and admin client (TLS, SASL, timeouts)."""
        config: dict[str, Any] = {
            "bootstrap.servers": self.bootstrap,
            "client.id": self.kafka_client_id,
            "socket.connection.setup.timeout.ms": self.dial_timeout_ms,
            "socket.timeout.ms": max(self.read_timeout_ms, self.write_timeout_ms),
            # librdkafka's log lines go to this Python logger (served by the clients' poll) instead of
            # raw `%3|...` lines on stderr, so they share the process's log format (lakefeed_common.logs).
            "logger": logging.getLogger("librdkafka"),
        }
        tls = self.enable_tls or any((self.ca, self.cert, self.key))
        if self.sasl_mechanism:
            config["security.protocol"] = "SASL_SSL" if tls else "SASL_PLAINTEXT"
            config["sasl.mechanism"] = self.sasl_mechanism
            config["sasl.username"] = self.sasl_user or ""
            config["sasl.password"] = self.sasl_password or ""
        elif tls:
            config["security.protocol"] = "SSL"
        for option, value in (
            ("ssl.ca.location", self.ca),
            ("ssl.certificate.location", self.cert),
            ("ssl.key.location", self.key),
        ):
            if value:
                config[option] = value
        if self.insecure_skip_verify:
            config["enable.ssl.certificate.verification"] = False
        return config


def _bool(name: str, raw: str) -> bool:
    lowered = raw.lower()
    if lowered in ("true", "1", "yes"):
        return True
    if lowered in ("false", "0", "no"):
        return False
    raise SinkConfigError(f"sink URI parameter {name}={raw!r} is not a boolean; use true or false")


def _int_in(low: int, high: int) -> Callable[[str, str], int]:
    def parse(name: str, raw: str) -> int:
        try:
            value = int(raw)
        except ValueError:
            raise SinkConfigError(f"sink URI parameter {name}={raw!r} is not an integer") from None
        if not low <= value <= high:
            raise SinkConfigError(f"sink URI parameter {name}={value} is out of range; allowed {low}..{high}")
        return value

    return parse


def _choice(
    choices: tuple[str, ...], normalise: Callable[[str], str] = str.lower
) -> Callable[[str, str], str]:
    def parse(name: str, raw: str) -> str:
        value = normalise(raw)
        if value not in choices:
            raise SinkConfigError(
                f"sink URI parameter {name}={raw!r} is not supported; allowed: {', '.join(choices)}"
            )
        return value

    return parse


def _acks(name: str, raw: str) -> int:
    value = _int_in(-1, 1)(name, raw)
    return value


def _duration_ms(name: str, raw: str) -> int:
    units = {"ms": 1, "s": 1000, "m": 60_000}
    for suffix in ("ms", "s", "m"):
        if raw.endswith(suffix) and raw[: -len(suffix)].isdigit():
            return int(raw[: -len(suffix)]) * units[suffix]
    raise SinkConfigError(f"sink URI parameter {name}={raw!r} is not a duration such as 10s or 500ms")


def _text(name: str, raw: str) -> str:
    if not raw:
        raise SinkConfigError(f"sink URI parameter {name} is empty")
    return raw


# URI parameter -> (dataclass field, parser)
PARAMETERS: dict[str, tuple[str, Callable[[str, str], Any]]] = {
    "protocol": ("protocol", _choice(PROTOCOLS)),
    "partition-num": ("partition_num", _int_in(1, 100_000)),
    "replication-factor": ("replication_factor", _int_in(1, 1000)),
    "max-message-bytes": ("max_message_bytes", _int_in(1024, MAX_MESSAGE_BYTES_LIMIT)),
    "required-acks": ("required_acks", _acks),
    "compression": ("compression", _choice(COMPRESSIONS)),
    "auto-create-topic": ("auto_create_topic", _bool),
    "enable-tidb-extension": ("enable_tidb_extension", _bool),
    "content-compatible": ("content_compatible", _bool),
    "only-output-updated-columns": ("only_output_updated_columns", _bool),
    "message-key": ("message_key", _choice(MESSAGE_KEYS)),
    "kafka-client-id": ("kafka_client_id", _text),
    "kafka-version": ("kafka_version", _text),
    "dial-timeout": ("dial_timeout_ms", _duration_ms),
    "write-timeout": ("write_timeout_ms", _duration_ms),
    "read-timeout": ("read_timeout_ms", _duration_ms),
    "enable-tls": ("enable_tls", _bool),
    "ca": ("ca", _text),
    "cert": ("cert", _text),
    "key": ("key", _text),
    "insecure-skip-verify": ("insecure_skip_verify", _bool),
    "sasl-user": ("sasl_user", _text),
    "sasl-password": ("sasl_password", _text),
    "sasl-password-file": ("sasl_password_file", _text),
    "sasl-password-env": ("sasl_password_env", _text),
    "sasl-mechanism": ("sasl_mechanism", _choice(SASL_MECHANISMS, str.upper)),
    "large-message-handle-option": ("large_message_handle", _choice(LARGE_MESSAGE_HANDLES)),
    "claim-check-storage-uri": ("claim_check_storage_uri", _text),
    "transactional-id": ("transactional_id", _text),
}


def _password_from_secret(values: dict[str, Any]) -> None:
    """`sasl-password-file`/`sasl-password-env` keep the SASL password out of the stored sink URI; read where the
    URI is parsed (the changefeed server, at create and at each start), lakefeed_common/secrets.py."""
    given = [name for name in ("sasl_password", "sasl_password_file", "sasl_password_env") if name in values]
    if len(given) > 1:
        raise SinkConfigError("sink URI: give the SASL password one way: sasl-password, sasl-password-file or "
                              f"sasl-password-env (got {', '.join(n.replace('_', '-') for n in given)})")
    for name, kind in (("sasl_password_file", "file"), ("sasl_password_env", "env")):
        where = values.pop(name, None)
        if where is not None:
            try:
                values["sasl_password"] = read_secret(kind, where)
            except SecretUnavailable as exc:
                raise SinkConfigError(f"sink URI {name.replace('_', '-')}={where}: {exc}") from exc


def parse_sink_uri(uri: str) -> KafkaSinkConfig:
    """Validate `uri`; every problem is a SinkConfigError naming the part and what is allowed."""
    parts = urlsplit(uri)
    if parts.scheme not in ("kafka", "kafka+ssl"):
        raise SinkConfigError(f"sink URI {uri!r}: scheme must be kafka:// (got {parts.scheme or 'none'!r})")
    servers = tuple(s.strip() for s in parts.netloc.split(",") if s.strip())
    if not servers:
        raise SinkConfigError(f"sink URI {uri!r} names no broker; use kafka://host:port/topic")
    for server in servers:
        host, _, port = server.rpartition(":")
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise SinkConfigError(f"sink URI broker {server!r} is not host:port")
    topic = unquote(parts.path.lstrip("/"))
    if not topic:
        raise SinkConfigError(f"sink URI {uri!r} names no topic; use kafka://host:port/topic")
    values: dict[str, Any] = {"enable_tls": parts.scheme == "kafka+ssl"}
    for name, raws in parse_qs(parts.query, keep_blank_values=True).items():
        if name not in PARAMETERS:
            raise SinkConfigError(
                f"sink URI parameter {name!r} is unknown; known: {', '.join(sorted(PARAMETERS))}"
            )
        if len(raws) > 1:
            raise SinkConfigError(f"sink URI parameter {name!r} is given {len(raws)} times")
        field_name, parser = PARAMETERS[name]
        values[field_name] = parser(name, raws[0])
    _password_from_secret(values)
    if ("sasl_user" in values or "sasl_password" in values) and "sasl_mechanism" not in values:
        values["sasl_mechanism"] = "PLAIN"
    if values.get("large_message_handle") == "claim-check" and not values.get("claim_check_storage_uri"):
        raise SinkConfigError(
            "large-message-handle-option=claim-check needs claim-check-storage-uri, e.g. "
            "claim-check-storage-uri=file:///var/lib/lakefeed/claim-check"
        )
    if values.get("transactional_id") and values.get("required_acks", -1) != -1:
        raise SinkConfigError("transactional-id needs required-acks=-1: Kafka transactions need the idempotent "
                              "producer, which acknowledges with acks=all")
    return KafkaSinkConfig(bootstrap_servers=servers, topic=topic, **values)

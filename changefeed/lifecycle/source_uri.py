"""`mysql://user:password@host:port[?tls=true|false]` -> ConnectionSettings, with clear errors."""

from __future__ import annotations

from urllib.parse import parse_qs, unquote, urlsplit

from changefeed.errors import ConfigError
from changefeed.source.server import ConnectionSettings


def parse_source_uri(uri: str) -> ConnectionSettings:
    try:
        parts = urlsplit(uri)
        port = parts.port
    except ValueError as exc:
        raise ConfigError(f"source URI {_redact(uri)!r}: {exc}; use mysql://user:password@host:3306") from exc
    if parts.scheme not in ("mysql", "mariadb"):
        raise ConfigError(
            f"source URI {_redact(uri)!r}: scheme must be mysql:// (got {parts.scheme or 'none'!r}); "
            "use mysql://user:password@host:3306")
    if not parts.hostname:
        raise ConfigError(f"source URI {_redact(uri)!r} names no host; use mysql://user:password@host:3306")
    if not parts.username:
        raise ConfigError(f"source URI {_redact(uri)!r} names no user; use mysql://user:password@host:3306")
    tls: bool | None = None
    for name, values in parse_qs(parts.query, keep_blank_values=True).items():
        if name != "tls" or values[-1].lower() not in ("true", "false"):
            raise ConfigError(f"source URI parameter {name}={values[-1]!r} is not allowed; known: tls=true|false")
        tls = values[-1].lower() == "true"
    return ConnectionSettings(parts.hostname, port or 3306, unquote(parts.username),
                              unquote(parts.password or ""), tls=tls)


def _redact(uri: str) -> str:
    """The URI without its password, for messages and listings."""
    try:
        parts = urlsplit(uri)
        if parts.password:
            return uri.replace(f":{parts.password}@", ":***@", 1)
    except ValueError:
        pass
    return uri


redact = _redact

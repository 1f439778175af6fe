"""`mysql://user:password@host:port[/database][?tls=true|false]` -> ConnectionSettings, with clear errors.

The optional path names the one database to capture (`mysql://u:p@h:3306/shop` captures only `shop`);
it narrows the changefeed's table filter rules, which still apply within that database.
"""

from __future__ import annotations

from urllib.parse import SplitResult, parse_qs, unquote, urlsplit

from changefeed.errors import ConfigError
from changefeed.source.server import ConnectionSettings

_FORM = "use mysql://user:password@host:3306[/database]"


def _split(uri: str) -> SplitResult:
    try:
        parts = urlsplit(uri)
        parts.port  # noqa: B018 - parsing the port is what raises on a bad one
    except ValueError as exc:
        raise ConfigError(f"source URI {_redact(uri)!r}: {exc}; {_FORM}") from exc
    return parts


def parse_source_uri(uri: str) -> ConnectionSettings:
    parts = _split(uri)
    if parts.scheme not in ("mysql", "mariadb"):
        raise ConfigError(
            f"source URI {_redact(uri)!r}: scheme must be mysql:// (got {parts.scheme or 'none'!r}); {_FORM}")
    if not parts.hostname:
        raise ConfigError(f"source URI {_redact(uri)!r} names no host; {_FORM}")
    if not parts.username:
        raise ConfigError(f"source URI {_redact(uri)!r} names no user; {_FORM}")
    source_database(uri)  # a path of more than one name is refused here too
    tls: bool | None = None
    for name, values in parse_qs(parts.query, keep_blank_values=True).items():
        if name != "tls" or values[-1].lower() not in ("true", "false"):
            raise ConfigError(f"source URI parameter {name}={values[-1]!r} is not allowed; known: tls=true|false")
        tls = values[-1].lower() == "true"
    return ConnectionSettings(parts.hostname, parts.port or 3306, unquote(parts.username),
                              unquote(parts.password or ""), tls=tls)


def source_database(uri: str) -> str | None:
    """The database the URI's path names (None: no path, every database the filter rules allow)."""
    path = _split(uri).path.strip("/")
    if not path:
        return None
    if "/" in path:
        raise ConfigError(f"source URI {_redact(uri)!r}: the path {path!r} names more than one database; "
                          f"{_FORM} (one database, or none and filter.rules in the config)")
    return unquote(path)


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

"""`mysql://user:password@host:port[/database][?tls=true|false]` -> ConnectionSettings, with clear errors.

The optional path names the one database to capture (`mysql://u:p@h:3306/shop` captures only `shop`);
it narrows the changefeed's table filter rules, which still apply within that database.

The password need not be in the URI (which the server stores in its metadata database and shows, redacted, in
the API): `?password-file=/run/secrets/cdc` reads it from a file on the server's host, `?password-env=CDC_PASSWORD`
from the server's environment, each time the server connects (lakefeed_common/secrets.py).
"""

from __future__ import annotations

from urllib.parse import SplitResult, parse_qs, unquote, urlsplit

from changefeed.errors import ConfigError
from changefeed.source.server import ConnectionSettings
from lakefeed_common.secrets import SecretUnavailable, read_secret

_FORM = "use mysql://user:password@host:3306[/database]"
_PARAMETERS = "known: tls=true|false, password-file=PATH, password-env=NAME"


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
    password = unquote(parts.password or "")
    secret: tuple[str, str] | None = None
    for name, values in parse_qs(parts.query, keep_blank_values=True).items():
        value = values[-1]
        if name == "tls" and value.lower() in ("true", "false"):
            tls = value.lower() == "true"
        elif name in ("password-file", "password-env") and value:
            if secret is not None or parts.password is not None:
                raise ConfigError(f"source URI {_redact(uri)!r}: give the password one way: in the URI, "
                                  "password-file or password-env")
            secret = (name, value)
        else:
            raise ConfigError(f"source URI parameter {name}={value!r} is not allowed; {_PARAMETERS}")
    if secret is not None:
        password = _read_secret(*secret)
    return ConnectionSettings(parts.hostname, parts.port or 3306, unquote(parts.username), password, tls=tls)


def _read_secret(kind: str, where: str) -> str:
    try:
        return read_secret("env" if kind == "password-env" else "file", where)
    except SecretUnavailable as exc:
        raise ConfigError(f"source URI {kind}={where}: {exc}") from exc


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

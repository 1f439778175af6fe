"""Claim-check storage for rows too large for one Kafka message (large-message-handle=claim-check).

The changefeed writes the full canal-JSON message here and sends a small message carrying only the
row's key columns plus `_tidb.claimCheckLocation`; consumers call `resolve` to get the full message
back. file:// is implemented; object storage can be added behind the same two methods.
"""

import os
import tempfile
import uuid
from pathlib import Path
from urllib.parse import unquote, urlsplit

import orjson

from sink.errors import SinkConfigError, SinkError


class ClaimCheckError(SinkError):
    """A claim-check could not be written or read (missing file, unsupported storage)."""


def _directory(uri: str) -> Path:
    parts = urlsplit(uri)
    if parts.scheme != "file":
        raise SinkConfigError(
            f"claim-check-storage-uri {uri!r}: only file:// storage is supported (e.g. file:///data/claim-check)"
        )
    if parts.netloc not in ("", "localhost"):
        raise SinkConfigError(f"claim-check-storage-uri {uri!r}: file:// takes an absolute path, no host")
    return Path(unquote(parts.path))


class FileClaimCheckStorage:
    def __init__(self, uri: str) -> None:
        self.root = _directory(uri)
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise SinkConfigError(f"claim-check-storage-uri {uri!r}: cannot create {self.root}: {exc}") from exc

    def write(self, value: bytes) -> str:
        """Store `value` durably (fsynced, atomically renamed) and return its location URI."""
        path = self.root / f"{uuid.uuid4().hex}.json"
        try:
            fd, tmp = tempfile.mkstemp(dir=self.root, prefix=".tmp-")
            with os.fdopen(fd, "wb") as handle:
                handle.write(value)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, path)
        except OSError as exc:
            raise ClaimCheckError(f"writing claim-check {path} failed: {exc}", retriable=True) from exc
        return path.as_uri()


def read_location(location: str) -> bytes:
    path = _directory(location)
    try:
        return path.read_bytes()
    except OSError as exc:
        raise ClaimCheckError(f"claim-check {location} cannot be read: {exc}") from exc


def resolve(value: bytes) -> bytes:
    """Consumer side: the full message for `value`, reading its claim-check when it has one."""
    message = orjson.loads(value)
    tidb = message.get("_tidb") if isinstance(message, dict) else None
    location = tidb.get("claimCheckLocation") if isinstance(tidb, dict) else None
    return read_location(location) if location else value

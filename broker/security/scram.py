"""SCRAM credentials (RFC 5802, RFC 7677) as Kafka keeps them, and their store.

Kafka stores per user and mechanism the salt, StoredKey = H(HMAC(SaltedPassword, "Client Key")),
ServerKey = HMAC(SaltedPassword, "Server Key") and the iteration count, never the password.
AlterUserScramCredentials carries the SaltedPassword the client computed (KIP-554); mechanisms are
numbered as in Kafka's `ScramMechanism` (1 = SCRAM-SHA-256, 2 = SCRAM-SHA-512) and iterations must lie in
4096..16384 (Kafka's bounds).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from kio.schema.errors import ErrorCode

from broker.protocol.errors import KafkaApiError
from broker.security import json_file

MECHANISM_IDS = {"SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2}
MECHANISM_NAMES = {number: name for name, number in MECHANISM_IDS.items()}
_HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
MIN_ITERATIONS, MAX_ITERATIONS = 4096, 16384


@dataclass(frozen=True, slots=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    def encoded(self) -> dict[str, Any]:
        """As JSON keeps it (the file store, the cluster's ScramCredentialChange records): base64 salt and keys."""
        return {"salt": _b64(self.salt), "stored_key": _b64(self.stored_key), "server_key": _b64(self.server_key),
                "iterations": self.iterations}

    @classmethod
    def decoded(cls, fields: Mapping[str, Any]) -> ScramCredential:
        """The credential `encoded` gave (other keys of `fields` are ignored)."""
        return cls(base64.b64decode(fields["salt"]), base64.b64decode(fields["stored_key"]),
                   base64.b64decode(fields["server_key"]), int(fields["iterations"]))


def from_salted_password(mechanism: str, salt: bytes, salted_password: bytes, iterations: int) -> ScramCredential:
    digest = _HASHES[mechanism]
    client_key = hmac.digest(salted_password, b"Client Key", digest)
    stored_key = hashlib.new(digest, client_key).digest()
    server_key = hmac.digest(salted_password, b"Server Key", digest)
    return ScramCredential(salt, stored_key, server_key, iterations)


def from_password(mechanism: str, password: str, salt: bytes, iterations: int = MIN_ITERATIONS) -> ScramCredential:
    """RFC 5802 Hi(): PBKDF2 with HMAC of the mechanism's hash (used by tests and tools)."""
    salted = hashlib.pbkdf2_hmac(_HASHES[mechanism], password.encode("utf-8"), salt, iterations)
    return from_salted_password(mechanism, salt, salted, iterations)


def mechanism_name(number: int) -> str:
    name = MECHANISM_NAMES.get(number)
    if name is None:
        raise KafkaApiError(ErrorCode.unsupported_sasl_mechanism,
                            f"unknown SCRAM mechanism {number}: 1 (SCRAM-SHA-256) or 2 (SCRAM-SHA-512)")
    return name


def check_iterations(iterations: int) -> None:
    if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
        raise KafkaApiError(ErrorCode.unacceptable_credential,
                            f"iterations={iterations}: SCRAM iterations must be {MIN_ITERATIONS}..{MAX_ITERATIONS}")


@dataclass(frozen=True, slots=True)
class CredentialChange:
    """Set (`credential`) or delete (None) one user's credential for one mechanism."""

    user: str
    mechanism: str
    credential: ScramCredential | None


class CredentialStore(Protocol):
    """Where SCRAM credentials live: a file on a single node (FileCredentialStore), the cluster metadata on a
    cluster node (broker/cluster/security_stores.py)."""

    def get(self, user: str, mechanism: str) -> ScramCredential | None: ...

    def users(self) -> dict[str, dict[str, ScramCredential]]: ...

    async def apply(self, changes: Sequence[CredentialChange]) -> None:
        """Apply every change or none; KafkaApiError when they cannot be kept."""


class FileCredentialStore:
    """user -> mechanism -> credential, persisted in one JSON file."""

    def __init__(self, path: Path) -> None:
        self._path = path
        raw = json_file.load(path, {})
        self._users: dict[str, dict[str, ScramCredential]] = {
            user: {mech: ScramCredential.decoded(c) for mech, c in mechs.items()} for user, mechs in raw.items()
        }

    def get(self, user: str, mechanism: str) -> ScramCredential | None:
        return self._users.get(user, {}).get(mechanism)

    def users(self) -> dict[str, dict[str, ScramCredential]]:
        return {user: dict(mechs) for user, mechs in self._users.items()}

    async def apply(self, changes: Sequence[CredentialChange]) -> None:
        for change in changes:
            if change.credential is not None:
                self._users.setdefault(change.user, {})[change.mechanism] = change.credential
                continue
            mechanisms = self._users.get(change.user, {})
            mechanisms.pop(change.mechanism, None)
            if not mechanisms:
                self._users.pop(change.user, None)
        if changes:
            self._save()

    def _save(self) -> None:
        json_file.save(self._path, {
            user: {mech: c.encoded() for mech, c in mechs.items()} for user, mechs in self._users.items()
        })


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")

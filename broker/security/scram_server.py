"""The server side of one SCRAM exchange (RFC 5802, RFC 7677), as Apache Kafka's ScramSaslServer runs it.

Messages: client-first `n,[a=authzid],n=user,r=cnonce[,ext]` -> server-first `r=cnonce+snonce,s=salt,i=n` ->
client-final `c=biws,r=nonce[,ext],p=proof` -> server-final `v=signature`. The proof is checked against the
stored credential (StoredKey = H(ClientKey), ClientKey = proof XOR HMAC(StoredKey, AuthMessage)).

Written here rather than taken from a SCRAM library because Kafka accepts a client-final nonce that merely
*ends with* the server-first nonce (`clientFinalMessage.nonce().endsWith(...)`), and librdkafka 2.0 (kcat
on Debian 12) relies on it: it repeats the client nonce in front. Strict RFC libraries refuse those logins.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from collections.abc import Callable
from dataclasses import dataclass

from broker.security.scram import ScramCredential

_HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}


class ScramFailure(Exception):
    """The login cannot succeed; the message says why (for the broker's log, not the client)."""


@dataclass(frozen=True, slots=True)
class _First:
    user: str
    bare: str  # client-first-message-bare, part of the AuthMessage
    gs2_header: str
    server_first: str
    nonce: str


class ScramServer:
    """One login: `first(client_first)` -> server-first, then `final(client_final)` -> server-final."""

    def __init__(self, mechanism: str, lookup: Callable[[str], ScramCredential | None],
                 server_nonce: str | None = None) -> None:
        self._digest = _HASHES[mechanism]
        # As long as Kafka's (ScramFormatter.secureRandomString); fixed only by tests of RFC vectors.
        self._server_nonce = server_nonce or secrets.token_urlsafe(20)
        self._lookup = lookup
        self._first: _First | None = None
        self._credential: ScramCredential | None = None
        self.user: str | None = None

    def first(self, message: str) -> str:
        gs2_flag, authzid, bare = _split_gs2(message)
        if gs2_flag != "n":
            raise ScramFailure(f"channel binding flag {gs2_flag!r} is not supported (only 'n')")
        attributes = _attributes(bare)
        user = _saslname(attributes.get("n", ""))
        if not user or "r" not in attributes:
            raise ScramFailure("client-first message without user name or nonce")
        if authzid and _saslname(authzid.removeprefix("a=")) != user:
            raise ScramFailure("authorization id differs from the user name")
        credential = self._lookup(user)
        if credential is None:
            raise ScramFailure(f"no SCRAM credential for user {user!r} and this mechanism")
        nonce = attributes["r"] + self._server_nonce
        server_first = f"r={nonce},s={base64.b64encode(credential.salt).decode()},i={credential.iterations}"
        self._first = _First(user, bare, message[: len(message) - len(bare)], server_first, nonce)
        self._credential, self.user = credential, user
        return server_first

    def final(self, message: str) -> str:
        first, credential = self._first, self._credential
        if first is None or credential is None:
            raise ScramFailure("client-final message before client-first")
        without_proof, sep, proof_text = message.rpartition(",p=")
        attributes = _attributes(without_proof)
        if not sep or "r" not in attributes or "c" not in attributes:
            raise ScramFailure("client-final message without channel binding, nonce or proof")
        if base64.b64decode(attributes["c"]) != first.gs2_header.encode():
            raise ScramFailure("channel binding does not repeat the client-first gs2 header")
        if not attributes["r"].endswith(first.nonce):  # Kafka's (lenient) nonce check, see the module doc
            raise ScramFailure("client-final nonce does not end with the server nonce")
        auth_message = f"{first.bare},{first.server_first},{without_proof}".encode()
        signature = hmac.digest(credential.stored_key, auth_message, self._digest)
        proof = base64.b64decode(proof_text)
        if len(proof) != len(signature):
            raise ScramFailure("client proof has the wrong length")
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        if not hmac.compare_digest(hashlib.new(self._digest, client_key).digest(), credential.stored_key):
            raise ScramFailure("client proof does not match the stored key (wrong password)")
        server_signature = hmac.digest(credential.server_key, auth_message, self._digest)
        return "v=" + base64.b64encode(server_signature).decode()


def _split_gs2(message: str) -> tuple[str, str, str]:
    flag, sep1, rest = message.partition(",")
    authzid, sep2, bare = rest.partition(",")
    if not sep1 or not sep2:
        raise ScramFailure("client-first message without a gs2 header")
    return flag, authzid, bare


def _attributes(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        if sep and len(key) == 1:
            out.setdefault(key, value)
    return out


def _saslname(text: str) -> str:
    # RFC 5802 saslname: "=2C" is ',' and "=3D" is '='.
    return text.replace("=2C", ",").replace("=3D", "=")

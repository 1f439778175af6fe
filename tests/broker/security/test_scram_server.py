"""The SCRAM server against RFC 7677's SCRAM-SHA-256 example exchange, Kafka's lenient final nonce, and the
refusals (wrong proof, unknown user, foreign nonce)."""

from __future__ import annotations

import base64

import pytest

from broker.security.scram import ScramCredential, from_password
from broker.security.scram_server import ScramFailure, ScramServer

# RFC 7677 section 3: user "user", password "pencil".
SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
CLIENT_FIRST = "n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
CLIENT_FINAL = ("c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
SERVER_FINAL = "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def _server(credential: ScramCredential | None = None) -> ScramServer:
    stored = credential or from_password("SCRAM-SHA-256", "pencil", SALT, 4096)
    return ScramServer("SCRAM-SHA-256", lambda user: stored if user == "user" else None, SERVER_NONCE)


def test_rfc_7677_exchange() -> None:
    server = _server()
    assert server.first(CLIENT_FIRST) == (
        "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
    assert server.final(CLIENT_FINAL) == SERVER_FINAL
    assert server.user == "user"


def test_wrong_password_unknown_user_and_foreign_nonce_are_refused() -> None:
    wrong = _server(from_password("SCRAM-SHA-256", "pencil2", SALT, 4096))
    wrong.first(CLIENT_FIRST)
    with pytest.raises(ScramFailure, match="wrong password"):
        wrong.final(CLIENT_FINAL)
    with pytest.raises(ScramFailure, match="no SCRAM credential for user 'bob'"):
        _server().first("n,,n=bob,r=abc")
    server = _server()
    server.first(CLIENT_FIRST)
    with pytest.raises(ScramFailure, match="does not end with the server nonce"):
        server.final(CLIENT_FINAL.replace("k0,p=", "k1,p="))


def test_a_final_nonce_that_ends_with_the_server_nonce_passes_the_nonce_check() -> None:
    # librdkafka 2.0 repeats its client nonce in front; Kafka only checks the end. The proof then covers the
    # text the client sent, so here it fails on the proof, not on the nonce.
    server = _server()
    server.first(CLIENT_FIRST)
    with pytest.raises(ScramFailure, match="wrong password"):
        server.final(CLIENT_FINAL.replace("r=", "r=rOprNGfwEbeRWgbNEkqO"))

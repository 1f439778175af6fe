"""`caching_sha2_password` (MySQL 8's default authentication) over plain TCP, as capture connects.

No MySQL 8 runs here (tests/changefeed/test_mysql8_containers.py does it where Docker answers), so the
server side of the exchange is played on a loopback socket by the script MySQL documents for a full
authentication without TLS (MySQL Source Code Documentation, "Caching_sha2_password information" and
"Protocol::HandshakeV10"): the server asks for full authentication, the client asks for the server's
RSA public key and sends the password XOR the scramble, RSA-OAEP encrypted. The client side is the
real PyMySQL with our ConnectionSettings, so this fails when the `cryptography` package (PyMySQL's
`rsa` extra, pinned in pyproject.toml) is missing. python-mysql-replication opens its binlog and
control connections with `pymysql.connect(**ConnectionSettings.as_kwargs())` too, so the same holds
for the binlog stream.
"""

import os
import socket
import struct
import threading

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from changefeed.source.server import ConnectionSettings, connect

PLUGIN = b"caching_sha2_password"
# CLIENT_LONG_PASSWORD | CLIENT_PROTOCOL_41 | CLIENT_TRANSACTIONS | CLIENT_SECURE_CONNECTION | CLIENT_PLUGIN_AUTH
CAPABILITIES = 0x1 | 0x200 | 0x2000 | 0x8000 | 0x80000
OK_AUTOCOMMIT = b"\x00\x00\x00\x02\x00\x00\x00"  # OK packet, status SERVER_STATUS_AUTOCOMMIT


def _send(sock: socket.socket, seq: int, payload: bytes) -> None:
    sock.sendall(struct.pack("<I", len(payload))[:3] + bytes([seq]) + payload)


def _receive(sock: socket.socket) -> tuple[int, bytes]:
    header = _exactly(sock, 4)
    return header[3], _exactly(sock, int.from_bytes(header[:3], "little"))


def _exactly(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("client closed")
        data += chunk
    return data


def _serve_one(listener: socket.socket, password: bytes, outcome: dict[str, object]) -> None:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    scramble = os.urandom(20)
    sock, _ = listener.accept()
    with sock:
        sock.settimeout(10)
        _send(sock, 0, b"\x0a8.4.3\x00" + struct.pack("<I", 7) + scramble[:8] + b"\x00"
              + struct.pack("<H", CAPABILITIES & 0xFFFF) + bytes([255]) + struct.pack("<H", 2)
              + struct.pack("<H", CAPABILITIES >> 16) + bytes([21]) + b"\x00" * 10 + scramble[8:] + b"\x00"
              + PLUGIN + b"\x00")
        seq, response = _receive(sock)
        outcome["plugin"] = PLUGIN in response
        _send(sock, seq + 1, b"\x01\x04")  # fast authentication failed: perform full authentication
        seq, request = _receive(sock)
        outcome["asked_for_key"] = request == b"\x02"
        _send(sock, seq + 1, b"\x01" + pem)
        seq, encrypted = _receive(sock)
        oaep = padding.OAEP(mgf=padding.MGF1(algorithm=hashes.SHA1()), algorithm=hashes.SHA1(), label=None)
        plain = key.decrypt(encrypted, oaep)
        outcome["password"] = bytes(b ^ scramble[i % len(scramble)] for i, b in enumerate(plain)).rstrip(b"\x00")
        _send(sock, seq + 1, OK_AUTOCOMMIT)
        while True:  # SET NAMES and the like get OK; COM_QUIT ends the session
            try:
                _, command = _receive(sock)
            except (ConnectionError, OSError):
                return
            if command[:1] == b"\x01":
                return
            _send(sock, 1, OK_AUTOCOMMIT)


def test_full_caching_sha2_authentication_over_plain_tcp() -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    outcome: dict[str, object] = {}
    server = threading.Thread(target=_serve_one, args=(listener, b"s3cret-pw", outcome), daemon=True)
    server.start()
    settings = ConnectionSettings("127.0.0.1", listener.getsockname()[1], "lakefeed", "s3cret-pw", tls=False)
    try:
        connection = connect(settings)
        connection.close()
        server.join(10)
    finally:
        listener.close()
    assert outcome == {"plugin": True, "asked_for_key": True, "password": b"s3cret-pw"}

"""A small private certificate authority: a CA, server certificates for host names, client certificates, written as
PEM files in Kafka's `ssl.keystore.type=PEM` layout (chain + key in one file) next to the certificate and key alone.

For the docker compose deployment (its `pki` job) and the tests; a production deployment brings its own CA. Run
again on the same directory, it keeps the CA and every certificate already issued (a restarted job changes nothing):

    python -m lakefeed_common.pki /pki --server broker-1 --server mysql --client admin --owner 10001
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import click
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

ORGANIZATION = "lakefeed"


@dataclass(frozen=True)
class Pem:
    certificate: Path  # the certificate alone
    key: Path  # the private key alone (unencrypted PKCS#8, mode 0600)
    keystore: Path  # certificate chain followed by the key: what ssl.keystore.location points at


def _name(common_name: str, organization: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization),
                      x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _san(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def write_private(path: Path, data: bytes) -> None:
    """Write `data` to `path` readable by its owner only (mode 0600 from the start, never a wider moment)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(data)


def give_to(directory: Path, owner: int) -> None:
    """Give `directory` and its files to user id `owner` (a job running as root writes for the services)."""
    for path in [directory, *directory.iterdir()]:
        os.chown(path, owner, owner)


class CertificateAuthority:
    """The CA in `root` (ca.pem, ca.key), made on first use; `issue` writes NAME.crt, NAME.key, NAME-keystore.pem."""

    def __init__(self, root: Path, *, organization: str = ORGANIZATION, days: int = 825) -> None:
        self.root = root
        self.organization = organization
        self.days = days
        root.mkdir(parents=True, exist_ok=True)
        self.ca_file = root / "ca.pem"
        key_file = root / "ca.key"
        if self.ca_file.exists() and key_file.exists():
            self._cert = x509.load_pem_x509_certificate(self.ca_file.read_bytes())
            loaded = serialization.load_pem_private_key(key_file.read_bytes(), password=None)
            assert isinstance(loaded, ec.EllipticCurvePrivateKey), f"{key_file}: not the EC key this CA writes"
            self._key = loaded
            return
        self._key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        self._cert = (
            x509.CertificateBuilder().subject_name(_name(f"{organization}-ca", organization))
            .issuer_name(_name(f"{organization}-ca", organization))
            .public_key(self._key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=days))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .sign(self._key, hashes.SHA256())
        )
        write_private(key_file, self._key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
        self.ca_file.write_bytes(self._cert.public_bytes(serialization.Encoding.PEM))

    def pem(self, common_name: str) -> Pem:
        return Pem(self.root / f"{common_name}.crt", self.root / f"{common_name}.key",
                   self.root / f"{common_name}-keystore.pem")

    def issue(self, common_name: str, hosts: Sequence[str] = ()) -> Pem:
        """A certificate for `common_name` (principal `User:CN=<name>,O=<organization>` on a Kafka listener);
        with `hosts` a server certificate valid for those names and addresses too (it still works as a client's).
        Kept when already issued."""
        pem = self.pem(common_name)
        if pem.certificate.exists() and pem.key.exists() and pem.keystore.exists():
            return pem
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        usages = [ExtendedKeyUsageOID.CLIENT_AUTH] + ([ExtendedKeyUsageOID.SERVER_AUTH] if hosts else [])
        builder = (
            x509.CertificateBuilder().subject_name(_name(common_name, self.organization))
            .issuer_name(self._cert.subject).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=self.days))
            .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
        )
        if hosts:
            builder = builder.add_extension(x509.SubjectAlternativeName([_san(h) for h in hosts]), critical=False)
        cert_pem = builder.sign(self._key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)
        key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption())
        pem.certificate.write_bytes(cert_pem)
        write_private(pem.key, key_pem)
        write_private(pem.keystore, cert_pem + key_pem)
        return pem


@click.command()
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@click.option("--server", "servers", multiple=True, metavar="NAME[,HOST...]",
              help="a server certificate for NAME, valid for NAME and each HOST (repeatable)")
@click.option("--client", "clients", multiple=True, metavar="NAME", help="a client certificate (repeatable)")
@click.option("--owner", type=int, default=None, metavar="UID",
              help="give every file to this user id (the services' user), keys stay mode 0600")
@click.option("--days", type=click.IntRange(1), default=825, show_default=True, help="validity of new certificates")
def main(directory: Path, servers: tuple[str, ...], clients: tuple[str, ...], owner: int | None, days: int) -> None:
    """Make (or keep) a CA and certificates in DIRECTORY."""
    ca = CertificateAuthority(directory, days=days)
    for spec in servers:
        name, *extra = spec.split(",")
        ca.issue(name, [name, *extra])
    for name in clients:
        ca.issue(name)
    if owner is not None:
        give_to(directory, owner)
    click.echo(f"CA and {len(servers) + len(clients)} certificates in {directory}")


if __name__ == "__main__":
    main()

"""TLS for SSL and SASL_SSL listeners: an ssl.SSLContext from Kafka's `ssl.*` properties.

Key stores and trust stores are PEM, as Kafka's `ssl.keystore.type=PEM` / `ssl.truststore.type=PEM`
(KIP-651): either files (`ssl.keystore.location` holding the certificate chain and the private key,
`ssl.truststore.location` holding CA certificates) or the PEM text itself in `ssl.keystore.certificate.chain`
+ `ssl.keystore.key` and `ssl.truststore.certificates`. `ssl.key.password` decrypts an encrypted key.
Each property may be given per listener as `listener.name.<name>.ssl.<...>`, which wins (Kafka's rule).
`ssl.client.auth` = required | requested | none asks clients for certificates; a verified client
certificate makes the principal `User:<subject DN>` (RFC 4514, like Kafka's default principal builder).

A broker connecting to another (follower fetches, the controller quorum) is a TLS client with the same listener's
settings, as Kafka's inter-broker client: it verifies the server against the trust store, checks the server's
name when `ssl.endpoint.identification.algorithm=https` (Kafka's default) and presents the key store's
certificate, which a listener with `ssl.client.auth=required` demands (mutual TLS).
"""

from __future__ import annotations

import os
import re
import ssl
import tempfile
from pathlib import Path

from cryptography import x509

from broker.config import BrokerConfig, ConfigError

_PEM_BLOCK = re.compile(r"-----BEGIN ([A-Z0-9 ]+)-----(.*?)-----END \1-----", re.DOTALL)
_CLIENT_AUTH = {"required": ssl.CERT_REQUIRED, "requested": ssl.CERT_OPTIONAL, "none": ssl.CERT_NONE}
_PROTOCOL_VERSIONS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}


def setting(config: BrokerConfig, listener: str, key: str) -> str:
    """A property for one listener: `listener.name.<listener>.<key>` when set, else `<key>`."""
    scoped = f"listener.name.{listener.lower()}.{key}"
    return config.properties[scoped] if scoped in config.properties else config.get(key)


def server_context(config: BrokerConfig, listener: str) -> ssl.SSLContext:
    """The server-side TLS context of `listener`; raises ConfigError naming the missing or bad property."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    _set_versions(context, config, listener)
    _load_key_store(context, config, listener)
    auth = setting(config, listener, "ssl.client.auth").lower() or "none"
    context.verify_mode = _CLIENT_AUTH[auth]
    if auth != "none":
        _load_trust_store(context, config, listener, "has ssl.client.auth set")
    return context


def client_context(config: BrokerConfig, listener: str) -> ssl.SSLContext:
    """The TLS context this broker connects to another broker's `listener` with (see the module docstring);
    raises ConfigError naming the missing or bad property."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    _set_versions(context, config, listener)
    _load_trust_store(context, config, listener, "is how brokers reach each other over TLS")
    context.check_hostname = setting(config, listener, "ssl.endpoint.identification.algorithm").lower() == "https"
    if any(setting(config, listener, key) for key in ("ssl.keystore.location", "ssl.keystore.certificate.chain")):
        _load_key_store(context, config, listener)
    return context


def _set_versions(context: ssl.SSLContext, config: BrokerConfig, listener: str) -> None:
    versions = [v.strip() for v in setting(config, listener, "ssl.enabled.protocols").split(",") if v.strip()]
    unknown = [v for v in versions if v not in _PROTOCOL_VERSIONS]
    if unknown or not versions:
        raise ConfigError(f"ssl.enabled.protocols={','.join(versions)!r}: use TLSv1.2 and/or TLSv1.3")
    context.minimum_version = min(_PROTOCOL_VERSIONS[v] for v in versions)
    context.maximum_version = max(_PROTOCOL_VERSIONS[v] for v in versions)


def _load_key_store(context: ssl.SSLContext, config: BrokerConfig, listener: str) -> None:
    location = setting(config, listener, "ssl.keystore.location")
    chain = setting(config, listener, "ssl.keystore.certificate.chain")
    key = setting(config, listener, "ssl.keystore.key")
    password = setting(config, listener, "ssl.key.password") or None
    try:
        if location:
            context.load_cert_chain(location, password=password)
        elif chain and key:
            _load_inline_chain(context, chain, key, password)
        else:
            raise ConfigError(f"listener {listener} uses TLS but has no key store: set ssl.keystore.location to a PEM"
                              " file with the certificate chain and private key, or ssl.keystore.certificate.chain"
                              " and ssl.keystore.key")
    except (ssl.SSLError, OSError) as exc:
        where = location or "ssl.keystore.certificate.chain/ssl.keystore.key"
        raise ConfigError(f"cannot load the TLS key store of listener {listener} from {where}: {exc}"
                          " (PEM certificate chain + private key; ssl.key.password for an encrypted key)") from None


def _load_inline_chain(context: ssl.SSLContext, chain: str, key: str, password: str | None) -> None:
    # The ssl module loads certificate chains from files only: write the PEM to a private temporary file,
    # load it, and delete it at once.
    fd, name = tempfile.mkstemp(prefix="broker-keystore-", suffix=".pem")
    try:
        with os.fdopen(fd, "w", encoding="ascii") as handle:
            handle.write(_pem(chain) + "\n" + _pem(key) + "\n")
        context.load_cert_chain(name, password=password)
    finally:
        Path(name).unlink(missing_ok=True)


def _pem(text: str) -> str:
    """PEM blocks re-wrapped at 64 columns: properties files cannot hold newlines, so Kafka accepts the PEM
    text on one line; OpenSSL wants it in lines."""
    blocks = _PEM_BLOCK.findall(text)
    if not blocks:
        raise ConfigError("expected PEM text (-----BEGIN ...----- base64 -----END ...-----)")
    out = []
    for label, body in blocks:
        data = "".join(body.split())
        lines = [data[i : i + 64] for i in range(0, len(data), 64)]
        out.append("\n".join([f"-----BEGIN {label}-----", *lines, f"-----END {label}-----"]))
    return "\n".join(out)


def _load_trust_store(context: ssl.SSLContext, config: BrokerConfig, listener: str, why: str) -> None:
    location = setting(config, listener, "ssl.truststore.location")
    certificates = setting(config, listener, "ssl.truststore.certificates")
    try:
        if location:
            context.load_verify_locations(cafile=location)
        elif certificates:
            context.load_verify_locations(cadata=_pem(certificates))
        else:
            raise ConfigError(f"listener {listener} {why} but has no trust store: set"
                              " ssl.truststore.location (PEM CA certificates) or ssl.truststore.certificates")
    except (ssl.SSLError, OSError) as exc:
        raise ConfigError(f"cannot load the TLS trust store of listener {listener}: {exc}") from None


def peer_principal(ssl_object: ssl.SSLObject | None) -> str | None:
    """`User:<subject DN>` of a verified client certificate, or None without one."""
    if ssl_object is None:
        return None
    der = ssl_object.getpeercert(binary_form=True)
    if not der:
        return None
    return "User:" + x509.load_der_x509_certificate(der).subject.rfc4514_string()

"""A throw-away certificate authority for TLS tests (lakefeed_common.pki with test names): a server certificate
for 127.0.0.1/localhost and client certificates, valid two days, principal `User:CN=<name>,O=lakefeed-test`."""

from __future__ import annotations

from pathlib import Path

from lakefeed_common.pki import CertificateAuthority, Pem

__all__ = ["Pem", "TestCA"]


class TestCA:
    __test__ = False  # not a pytest test class

    def __init__(self, root: Path) -> None:
        self._ca = CertificateAuthority(root, organization="lakefeed-test", days=2)
        self.root = root
        self.ca_file = self._ca.ca_file

    def issue(self, common_name: str, *, server: bool) -> Pem:
        return self._ca.issue(common_name, ["localhost", "127.0.0.1"] if server else [])

"""The source URI: its optional /database path, and clear errors."""

import re
from pathlib import Path

import pytest

from changefeed.errors import ConfigError
from changefeed.lifecycle.source_uri import parse_source_uri, source_database


def test_database_path() -> None:
    assert source_database("mysql://u:p@h:3306/shop?tls=false") == "shop"
    assert source_database("mysql://u:p@h:3306/my%20db") == "my db"
    assert source_database("mysql://u:p@h:3306/") is None
    assert source_database("mysql://u:p@h:3306") is None
    assert parse_source_uri("mysql://u:p@h:3306/shop").port == 3306
    with pytest.raises(ConfigError, match="more than one database"):
        parse_source_uri("mysql://u:secret@h:3306/shop/orders")


def test_the_password_from_a_file_or_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = tmp_path / "pw"
    secret.write_text("s3cret:@/x\n")
    assert parse_source_uri(f"mysql://cdc@h:3306/shop?password-file={secret}").password == "s3cret:@/x"
    monkeypatch.setenv("CDC_PW", "from-env")
    assert parse_source_uri("mysql://cdc@h:3306?password-env=CDC_PW&tls=true").password == "from-env"
    secret.write_text("rotated")  # read at each connection: a rotated secret is used the next time
    assert parse_source_uri(f"mysql://cdc@h?password-file={secret}").password == "rotated"
    with pytest.raises(ConfigError, match="one way"):
        parse_source_uri(f"mysql://cdc@h?password-file={secret}&password-env=CDC_PW")
    with pytest.raises(ConfigError, match=re.escape("known: tls=true|false, password-file=PATH, password-env=NAME")):
        parse_source_uri("mysql://cdc@h?password=x")

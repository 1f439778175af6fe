"""The source URI: its optional /database path, and clear errors."""

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

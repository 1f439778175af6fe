"""Claim-check storage on file://: write, resolve, and clear errors for bad locations."""

from pathlib import Path

import orjson
import pytest

from sink.claim_check import ClaimCheckError, FileClaimCheckStorage, resolve
from sink.errors import SinkConfigError


def test_write_then_resolve(tmp_path: Path) -> None:
    storage = FileClaimCheckStorage((tmp_path / "claims").as_uri())
    full = orjson.dumps({"type": "INSERT", "data": [{"id": "1", "body": "x" * 1000}]})
    location = storage.write(full)
    pointer = orjson.dumps({"type": "INSERT", "data": [{"id": "1"}], "_tidb": {"claimCheckLocation": location}})
    assert resolve(pointer) == full
    assert not list((tmp_path / "claims").glob(".tmp-*"))  # written atomically


def test_bad_storage_uri_names_the_fix() -> None:
    with pytest.raises(SinkConfigError, match="only file:// storage is supported"):
        FileClaimCheckStorage("s3://bucket/claims")
    with pytest.raises(SinkConfigError, match="absolute path, no host"):
        FileClaimCheckStorage("file://somehost/claims")


def test_missing_claim_check_is_a_clear_error(tmp_path: Path) -> None:
    pointer = orjson.dumps({"_tidb": {"claimCheckLocation": (tmp_path / "gone.json").as_uri()}})
    with pytest.raises(ClaimCheckError, match=r"gone\.json cannot be read"):
        resolve(pointer)

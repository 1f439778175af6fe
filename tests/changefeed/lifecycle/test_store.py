"""Metadata store: one owner per changefeed through leases; writes fenced by owner and epoch."""

import time
from pathlib import Path
from urllib.parse import quote

import pytest

from changefeed.lifecycle.state import State
from changefeed.lifecycle.store import AlreadyExists, MetadataStore
from changefeed.model import Checkpoint, Position

START = Checkpoint(Position("bin.000001", 4), 1)


@pytest.fixture(params=["sqlite", pytest.param("mariadb", marks=pytest.mark.integration)])
def stores(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[MetadataStore, MetadataStore]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'meta.db'}"
    else:  # the same store on a MySQL-protocol server (timestamps need DOUBLE there, not FLOAT)
        mysql = request.getfixturevalue("mysql")
        database = request.getfixturevalue("database")
        url = f"mysql+pymysql://{quote(mysql.user)}:{quote(mysql.password)}@{mysql.host}:{mysql.port}/{database}"
    a, b = MetadataStore(url), MetadataStore(url)  # two servers on one database
    a.create("cf", "mysql://u@h:1", "kafka://h:1/t", "", START, None)
    return a, b


def test_duplicate_ids_are_refused(stores: tuple[MetadataStore, MetadataStore]) -> None:
    with pytest.raises(AlreadyExists):
        stores[1].create("cf", "mysql://u@h:1", "kafka://h:1/t", "", START, None)


def test_one_owner_until_its_lease_expires(stores: tuple[MetadataStore, MetadataStore]) -> None:
    a, b = stores
    assert a.acquire("cf", "A", ttl=0.5)
    assert not b.acquire("cf", "B", ttl=0.5)
    assert a.acquire("cf", "A", ttl=0.5)  # renewal
    time.sleep(0.6)
    assert b.acquire("cf", "B", ttl=5)  # A went silent: B takes over
    assert not a.acquire("cf", "A", ttl=5)
    # A zombie's late checkpoint write is refused.
    assert not a.owner_set("cf", "A", 0, checkpoint=Checkpoint(Position("bin.000009", 4), 2))
    assert b.owner_set("cf", "B", 0, checkpoint=Checkpoint(Position("bin.000002", 4), 2))
    record = a.get("cf")
    assert record is not None and record.checkpoint is not None
    assert record.checkpoint.position.file == "bin.000002" and record.owner == "B"


def test_operator_changes_bump_the_epoch_and_fence_the_old_runner(
    stores: tuple[MetadataStore, MetadataStore],
) -> None:
    a, _ = stores
    assert a.acquire("cf", "A", ttl=5)
    assert a.operator_set("cf", restart=False, state=State.STOPPED)
    assert a.owner_set("cf", "A", 0, stats={"x": 1})  # pause keeps the epoch: final checkpoint saved
    assert not a.operator_set("cf", only_from=(State.FAILED,), config="x")  # update only when allowed
    assert a.operator_set("cf", state=State.NORMAL)
    assert not a.owner_set("cf", "A", 0, stats={"x": 2})
    record = a.get("cf")
    assert record is not None and record.epoch == 1 and record.state is State.NORMAL
    assert a.remove("cf") and a.get("cf") is None

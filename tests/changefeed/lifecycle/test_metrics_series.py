"""Series of a removed changefeed leave /metrics (regression: its per-table rows/bytes series, and every
series of a changefeed removed while stopped, stayed forever)."""

from pathlib import Path

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from changefeed.lifecycle.owner import Owner, OwnerSettings
from changefeed.lifecycle.state import State
from changefeed.lifecycle.store import MetadataStore
from tests.changefeed.lifecycle.test_owner import START, StubRunner


def _series_of(owner: Owner, changefeed: str) -> list[str]:
    text = generate_latest(owner.metrics.registry).decode()
    return sorted({s.name for f in text_string_to_metric_families(text) for s in f.samples
                   if s.labels.get("changefeed") == changefeed})


def test_removing_a_running_or_stopped_changefeed_drops_all_its_series(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'meta.db'}"
    store = MetadataStore(url)
    store.create("running", "mysql://u@h:1", "kafka://h:1/t", "", START, None)
    store.create("stopped", "mysql://u@h:1", "kafka://h:1/t", "", START, None)
    owner = Owner(store, url, StubRunner, OwnerSettings("A", lease_ttl=5))
    owner.tick()
    owner.tick()  # the second tick observes the runners: stats, checkpoint, gauges
    assert "changefeed_rows_total" in _series_of(owner, "running")
    store.operator_set("stopped", state=State.STOPPED)
    owner.tick()
    assert _series_of(owner, "stopped"), "a stopped changefeed still reports its state"

    store.remove("running")
    store.remove("stopped")
    owner.tick()
    assert _series_of(owner, "running") == []
    assert _series_of(owner, "stopped") == []

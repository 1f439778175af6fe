"""Model values (pure)."""

from changefeed.model import Column, Position, TableSchema, compose_tso, tso_logical, tso_physical_ms
from changefeed.source.capture import CommitClock


def test_tso_layout() -> None:
    ts = compose_tso(1_700_000_000_123, 5)
    assert ts == (1_700_000_000_123 << 18) | 5
    assert tso_physical_ms(ts) == 1_700_000_000_123 and tso_logical(ts) == 5


def test_commit_clock_strictly_increases_even_when_time_stands_or_steps_back() -> None:
    clock = CommitClock()
    stamps = [clock.next(s) for s in (100, 100, 100, 99, 101, 101)]
    assert stamps == sorted(set(stamps))
    assert tso_physical_ms(stamps[0]) == 100_000 and tso_logical(stamps[2]) == 2
    assert tso_physical_ms(stamps[3]) == 100_000  # clock stepped back: keep counting
    assert stamps[4] == compose_tso(101_000, 0)
    resumed = CommitClock(stamps[-1])
    assert resumed.next(50) == stamps[-1] + 1


def test_heartbeat_timestamps_leave_the_following_commits_unchanged() -> None:
    plain = CommitClock()
    stamps = [plain.next(s) for s in (100, 100, 103)]
    clock = CommitClock()
    # (kind, time): heartbeats at this host's time, commits at the source's second, interleaved.
    sequence = [("hb", 100.2), ("commit", 100), ("hb", 100.9), ("commit", 100), ("hb", 102.5),
                ("hb", 104.9), ("commit", 103), ("hb", 106.0)]
    out = [(kind, clock.resolved(t) if kind == "hb" else clock.next(int(t))) for kind, t in sequence]
    assert [ts for kind, ts in out if kind == "commit"] == stamps
    assert [ts for _, ts in out] == sorted(ts for _, ts in out)  # checkpoints never go back
    assert tso_physical_ms(out[-1][1]) == 104_000  # an idle source: 2 s behind this host's clock


def test_position_order_across_files() -> None:
    assert Position("binlog.000002", 4) > Position("binlog.000001", 9999)
    assert Position("binlog.000010", 4).sort_key > Position("binlog.000009", 5).sort_key
    assert Position("b.000001", 4, "0-1-1") == Position("b.000001", 4, "0-1-2")  # gtid is informative


def test_handle_key_falls_back_to_not_null_unique_key() -> None:
    cols = (Column("a", "int", "int", nullable=False), Column("b", "int", "int"))
    assert TableSchema("d", "t", cols, (), (("b",), ("a",))).handle_key == ("a",)
    assert TableSchema("d", "t", cols, ("b",)).handle_key == ("b",)
    assert TableSchema("d", "t", cols, (), (("b",),)).handle_key == ()

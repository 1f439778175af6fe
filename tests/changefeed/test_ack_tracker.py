"""The checkpoint never passes a transaction with an unacknowledged message."""

from changefeed.ack_tracker import MessageAckTracker
from changefeed.model import Checkpoint, Position


def cp(pos: int) -> Checkpoint:
    return Checkpoint(Position("binlog.000001", pos), pos)


def test_checkpoint_follows_acknowledgements_in_any_order() -> None:
    tracker = MessageAckTracker(cp(1))
    a, b = tracker.sent(), tracker.sent()
    tracker.transaction_done(cp(10))
    c = tracker.sent()
    tracker.transaction_done(cp(20))
    assert tracker.checkpoint == cp(1)
    tracker.acked(b)
    tracker.acked(c)
    assert tracker.checkpoint == cp(1), "message a of the first transaction is still in flight"
    tracker.acked(a)
    assert tracker.checkpoint == cp(20) and tracker.in_flight == 0


def test_empty_transaction_advances_at_once_and_failure_freezes_the_checkpoint() -> None:
    tracker = MessageAckTracker()
    tracker.transaction_done(cp(5))
    assert tracker.checkpoint == cp(5)
    seq = tracker.sent()
    tracker.transaction_done(cp(9))
    tracker.failed(RuntimeError("broker refused"))
    tracker.acked(seq)
    assert tracker.checkpoint == cp(5)
    assert isinstance(tracker.error, RuntimeError)

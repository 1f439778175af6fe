"""The transaction coordinator: transactional ids, producer epochs and the two-phase commit of a transaction.

Apache Kafka's TransactionCoordinator / TransactionStateManager, for clients of transaction version 1
(KIP-98): a producer registers its `transactional.id` with InitProducerId (bumping the epoch fences any
older instance, a "zombie", and aborts the transaction it left open), adds each partition with
AddPartitionsToTxn (AddOffsetsToTxn for the group's `__consumer_offsets` partition) before writing to it,
and ends with EndTxn. Every state change is written to `__transaction_state` before it is acted on, so a
coordinator that restarts or takes over finishes what was decided:

    Empty/Complete* --AddPartitions--> Ongoing --EndTxn--> PrepareCommit|PrepareAbort
        --markers written to every partition--> CompleteCommit|CompleteAbort

EndTxn is answered once Prepare* is durable (the decision); the markers follow, retried until every
partition has one, and until then the transactional id answers CONCURRENT_TRANSACTIONS, as in Kafka.
A transaction open longer than its timeout is aborted with a bumped epoch (the producer is fenced).

The broker supplies the I/O (`TxnEffects`): the journal write, the markers, new producer ids.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Protocol

from kio.schema.errors import ErrorCode

from broker.coordinator.transactions_codec import TxnLogValue, TxnStatus
from broker.protocol.errors import KafkaApiError

log = logging.getLogger("broker.transactions")

TopicPartition = tuple[str, int]
_MAX_EPOCH = 32767  # Short.MaxValue: an id whose epoch would reach it gets a new producer id
_PREPARED = {TxnStatus.PREPARE_COMMIT, TxnStatus.PREPARE_ABORT}
_COMPLETE = {TxnStatus.EMPTY, TxnStatus.COMPLETE_COMMIT, TxnStatus.COMPLETE_ABORT}


class TxnEffects(Protocol):
    async def write_state(self, transactional_id: str, value: TxnLogValue) -> None:
        """Append the record to `__transaction_state`; done once the in-sync replicas have it."""

    async def write_markers(self, transactional_id: str, producer_id: int, epoch: int, commit: bool,
                            partitions: tuple[TopicPartition, ...]) -> None:
        """A COMMIT or ABORT marker in every partition (raises KafkaApiError if any could not be written)."""

    async def new_producer_id(self) -> int: ...

    def coordinates(self, transactional_id: str) -> bool:
        """Whether this broker coordinates the id now (leads its `__transaction_state` partition)."""


@dataclass(frozen=True, slots=True)
class Transaction:
    """A transactional id as its coordinator knows it: the last record written for it, plus the epoch it
    had before its last bump (in memory only: a retried InitProducerId of KIP-360 names that one)."""

    transactional_id: str
    value: TxnLogValue
    previous_epoch: int = -1


def _fenced(transactional_id: str, producer_id: int, epoch: int, current: TxnLogValue | None) -> KafkaApiError | None:
    """Kafka's checks of (producer id, epoch) against the transactional id's current ones."""
    if current is None or current.producer_id != producer_id:
        return KafkaApiError(ErrorCode.invalid_producer_id_mapping,
                             f"producer id {producer_id} is not the one of transactional id {transactional_id!r}"
                             f" ({current.producer_id if current else 'none'}); call initTransactions() again")
    if epoch != current.producer_epoch:
        return KafkaApiError(ErrorCode.producer_fenced,
                             f"producer epoch {epoch} of transactional id {transactional_id!r} has been fenced by"
                             f" epoch {current.producer_epoch} (a newer producer with the same transactional.id,"
                             " or the transaction timed out)")
    return None


class TransactionCoordinator:
    def __init__(self, effects: TxnEffects, max_timeout_ms: int, clock: Callable[[], float] = time.time) -> None:
        self.effects = effects
        self.max_timeout_ms = max_timeout_ms
        self._clock = clock
        self._txns: dict[str, Transaction] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)

    def _lock(self, transactional_id: str) -> asyncio.Lock:
        return self._locks.setdefault(transactional_id, asyncio.Lock())

    # --- replay -------------------------------------------------------------------------------------
    def load(self, transactional_id: str, value: TxnLogValue | None) -> None:
        """One `__transaction_state` record, in log order (replay at start, or a follower keeping warm)."""
        if value is None:
            self._txns.pop(transactional_id, None)
        else:
            self._txns[transactional_id] = Transaction(transactional_id, value)

    def unload(self, owned: Callable[[str], bool]) -> None:
        """Forget the ids `owned` selects (their partition's leadership moved away)."""
        for transactional_id in [t for t in self._txns if owned(t)]:
            del self._txns[transactional_id]

    def get(self, transactional_id: str) -> TxnLogValue | None:
        found = self._txns.get(transactional_id)
        return found.value if found else None

    def all(self) -> list[tuple[str, TxnLogValue]]:
        return sorted((t.transactional_id, t.value) for t in self._txns.values())

    # --- the journal ----------------------------------------------------------------------------------
    async def _write(self, txn: Transaction, value: TxnLogValue, previous_epoch: int | None = None) -> Transaction:
        await self.effects.write_state(txn.transactional_id, value)  # durable first, then memory
        kept = txn.previous_epoch if previous_epoch is None else previous_epoch
        updated = Transaction(txn.transactional_id, value, kept)
        self._txns[txn.transactional_id] = updated
        return updated

    # --- InitProducerId ---------------------------------------------------------------------------------
    async def init_producer_id(self, transactional_id: str, timeout_ms: int, producer_id: int = -1,
                               epoch: int = -1) -> tuple[int, int]:
        if not transactional_id:
            raise KafkaApiError(ErrorCode.invalid_request, "transactional.id must not be empty")
        if not 0 < timeout_ms <= self.max_timeout_ms:
            raise KafkaApiError(ErrorCode.invalid_transaction_timeout,
                                f"transaction.timeout.ms={timeout_ms} must be between 1 and the broker's"
                                f" transaction.max.timeout.ms={self.max_timeout_ms}")
        async with self._lock(transactional_id):
            txn = self._txns.get(transactional_id)
            now = self._now_ms()
            if txn is None:
                new_id = await self.effects.new_producer_id()
                value = TxnLogValue(new_id, 0, timeout_ms, TxnStatus.EMPTY, (), now, -1)
                created = await self._write(Transaction(transactional_id, value), value)
                log.info("transactional id %r registered: producer id %d", transactional_id, new_id)
                return created.value.producer_id, created.value.producer_epoch
            current = txn.value
            if producer_id >= 0:  # KIP-360: the producer names the id and epoch it had
                if (producer_id, epoch) == (current.producer_id, txn.previous_epoch) and current.status in _COMPLETE:
                    return current.producer_id, current.producer_epoch  # a retry of the bump we already made
                fenced = _fenced(transactional_id, producer_id, epoch, current)
                if fenced is not None:
                    raise fenced
            if current.status == TxnStatus.ONGOING:
                # A new instance takes over: the old one's open transaction is aborted under a bumped epoch.
                txn = await self._abort(txn, fence=True, why="a new producer instance called initTransactions")
                current = txn.value
            if current.status in _PREPARED:
                txn = await self._complete(txn)
                current = txn.value
                if current.status in _PREPARED:
                    raise KafkaApiError(ErrorCode.concurrent_transactions,
                                        f"transaction of {transactional_id!r} is still writing its markers; retry")
            if current.producer_epoch + 1 >= _MAX_EPOCH:
                new_id, new_epoch = await self.effects.new_producer_id(), 0
            else:
                new_id, new_epoch = current.producer_id, current.producer_epoch + 1
            value = TxnLogValue(new_id, new_epoch, timeout_ms, TxnStatus.EMPTY, (), now, -1)
            txn = await self._write(txn, value, previous_epoch=current.producer_epoch)
            return new_id, new_epoch

    def _current(self, transactional_id: str, producer_id: int, epoch: int) -> Transaction:
        """The id's transaction, if (producer id, epoch) are its current ones; else Kafka's error."""
        txn = self._txns.get(transactional_id)
        fenced = _fenced(transactional_id, producer_id, epoch, txn.value if txn else None)
        if fenced is not None:
            raise fenced
        assert txn is not None
        return txn

    # --- AddPartitionsToTxn / AddOffsetsToTxn ----------------------------------------------------------
    async def add_partitions(self, transactional_id: str, producer_id: int, epoch: int,
                             partitions: Iterable[TopicPartition]) -> None:
        wanted = frozenset(partitions)
        async with self._lock(transactional_id):
            txn = self._current(transactional_id, producer_id, epoch)
            current = txn.value
            if current.status in _PREPARED or current.status == TxnStatus.PREPARE_EPOCH_FENCE:
                raise KafkaApiError(ErrorCode.concurrent_transactions,
                                    f"the previous transaction of {transactional_id!r} is still completing; retry")
            if current.status == TxnStatus.ONGOING and wanted <= set(current.partitions):
                return
            now = self._now_ms()
            start = current.start_ms if current.status == TxnStatus.ONGOING else now
            have = set(current.partitions) if current.status == TxnStatus.ONGOING else set()
            value = replace(current, status=TxnStatus.ONGOING, partitions=tuple(sorted(have | wanted)),
                            last_update_ms=now, start_ms=start)
            await self._write(txn, value)

    def includes(self, transactional_id: str, producer_id: int, epoch: int, tp: TopicPartition) -> bool:
        """AddPartitionsToTxn's verify_only (KIP-890): whether the ongoing transaction has `tp`."""
        txn = self._txns.get(transactional_id)
        if txn is None or _fenced(transactional_id, producer_id, epoch, txn.value) is not None:
            return False
        return txn.value.status == TxnStatus.ONGOING and tp in txn.value.partitions

    # --- EndTxn -------------------------------------------------------------------------------------------
    async def end_transaction(self, transactional_id: str, producer_id: int, epoch: int, commit: bool) -> None:
        async with self._lock(transactional_id):
            txn = self._current(transactional_id, producer_id, epoch)
            status = txn.value.status
            wanted = TxnStatus.COMPLETE_COMMIT if commit else TxnStatus.COMPLETE_ABORT
            prepared = TxnStatus.PREPARE_COMMIT if commit else TxnStatus.PREPARE_ABORT
            if status == wanted:
                return  # a retry of an EndTxn that completed
            if status == prepared:
                await self._complete(txn)  # a retry while the markers are still being written
                return
            if status != TxnStatus.ONGOING:
                verb = "commit" if commit else "abort"
                raise KafkaApiError(ErrorCode.invalid_txn_state,
                                    f"cannot {verb} transaction of {transactional_id!r} in state {status.display}")
            now = self._now_ms()
            txn = await self._write(txn, replace(txn.value, status=prepared, last_update_ms=now))
            await self._complete(txn)

    async def _abort(self, txn: Transaction, *, fence: bool, why: str) -> Transaction:
        """Abort an ongoing transaction; `fence` bumps the epoch first so the producer cannot go on."""
        current = txn.value
        epoch = current.producer_epoch + 1 if fence else current.producer_epoch
        log.warning("aborting transaction of %r (producer id %d, epoch %d -> %d, %d partitions): %s",
                    txn.transactional_id, current.producer_id, current.producer_epoch, epoch,
                    len(current.partitions), why)
        value = replace(current, producer_epoch=epoch, status=TxnStatus.PREPARE_ABORT, last_update_ms=self._now_ms())
        txn = await self._write(txn, value, previous_epoch=current.producer_epoch if fence else None)
        return await self._complete(txn)

    async def _complete(self, txn: Transaction) -> Transaction:
        """Write the markers of a prepared transaction, then its Complete* record. A marker that cannot be
        written leaves it prepared: `complete_prepared` retries, and the decision is already durable."""
        current = txn.value
        commit = current.status == TxnStatus.PREPARE_COMMIT
        try:
            await self.effects.write_markers(txn.transactional_id, current.producer_id, current.producer_epoch, commit,
                                             current.partitions)
        except KafkaApiError as exc:
            log.warning("markers of transaction %r not all written yet (%s); retrying", txn.transactional_id, exc)
            return txn
        done = TxnStatus.COMPLETE_COMMIT if commit else TxnStatus.COMPLETE_ABORT
        return await self._write(txn, replace(current, status=done, partitions=(), last_update_ms=self._now_ms()))

    # --- background work ------------------------------------------------------------------------------
    async def complete_prepared(self) -> int:
        """Retry the markers of every prepared transaction (after a failed marker write or a coordinator
        that took over); returns how many completed."""
        done = 0
        prepared = [t for t, x in self._txns.items() if x.value.status in _PREPARED and self.effects.coordinates(t)]
        for transactional_id in prepared:
            async with self._lock(transactional_id):
                txn = self._txns.get(transactional_id)
                if txn is not None and txn.value.status in _PREPARED:
                    done += (await self._complete(txn)).value.status not in _PREPARED
        return done

    async def abort_expired(self) -> int:
        """Abort (and fence) every transaction open longer than its timeout, as Kafka's
        `abortTimedOutTransactions`; returns how many were aborted."""
        now = self._now_ms()
        expired = [t for t, x in self._txns.items()
                   if x.value.status == TxnStatus.ONGOING and x.value.start_ms + x.value.timeout_ms < now
                   and self.effects.coordinates(t)]
        aborted = 0
        for transactional_id in expired:
            async with self._lock(transactional_id):
                txn = self._txns.get(transactional_id)
                if txn is None or txn.value.status != TxnStatus.ONGOING:
                    continue
                if txn.value.start_ms + txn.value.timeout_ms >= self._now_ms():
                    continue
                await self._abort(txn, fence=True, why=f"open longer than its timeout of {txn.value.timeout_ms} ms")
                aborted += 1
        return aborted

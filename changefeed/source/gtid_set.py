"""GTID sets as the two servers write them, parsed and compared (no server needed).

MariaDB (MariaDB Knowledge Base, "Global Transaction ID"): a GTID is `domain-server-seq`, and a GTID
*position* lists at most one GTID per replication domain, e.g. `0-1-100,1-2-7`. Sequence numbers rise
within a domain, so the position holds every transaction of a listed domain up to and including its
seq (whatever server wrote it), and none of an unlisted domain: this is how a replica's
`gtid_slave_pos` is read when it connects.

MySQL (MySQL 8.4 Reference Manual, 19.1.3.1 "GTID Format and Storage"): a GTID is `uuid:n`, and a set
is `uuid:interval[:interval...]` per source, comma-separated, an interval being `n` or `n-m`, e.g.
`3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5:11-18`. MySQL 8.3+ adds tags: `uuid:tag:interval`, where a
tag (letter or `_`, then up to 31 letters, digits or `_`, case-insensitive) applies to the intervals
after it (`uuid:1-5:tag1:1-3`).

python-mysql-replication has a GtidSet for MySQL only (no MariaDB positions, no tags), and it is kept
behind `binlog_reader`; these two small value types serve both servers with the same questions:
does the set hold this GTID, is it within that other set.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

EXPECTED_FORMS = ("MariaDB 'domain-server-seq[,domain-server-seq...]' such as 0-1-100, or MySQL "
                  "'uuid:1-100[:200-300][,uuid:...]' such as 3E11FA47-71CA-11E1-9E33-C80AA9429562:1-100")

_MARIADB_GTID = re.compile(r"^(\d+)-(\d+)-(\d+)$")
_UUID = re.compile(r"^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$")
_INTERVAL = re.compile(r"^(\d+)(?:-(\d+))?$")
_TAG = re.compile(r"^[a-z_][a-z0-9_]{0,31}$")
_U32 = 2**32 - 1
_U64 = 2**63 - 1  # MySQL's GTID numbers are signed 64-bit, from 1


class GtidSetError(ValueError):
    """The text is not a GTID set of either server; the message says what is wrong."""


@dataclass(frozen=True)
class MariadbGtids:
    """A MariaDB GTID position: the last seq per domain (`server` kept only to print it back)."""

    last: tuple[tuple[int, int, int], ...]  # (domain, server, seq), sorted by domain, one per domain

    is_mariadb = True

    def contains(self, gtid: str) -> bool:
        """Is the transaction `domain-server-seq` within the position?"""
        match = _MARIADB_GTID.match(gtid.strip())
        if match is None:
            return False
        domain, _server, seq = (int(g) for g in match.groups())
        return any(d == domain and seq <= s for d, _, s in self.last)

    def issubset(self, other: MariadbGtids) -> bool:
        """Is every transaction of this position also in `other`?"""
        ours = {d: s for d, _, s in other.last}
        return all(d in ours and seq <= ours[d] for d, _, seq in self.last)

    def __str__(self) -> str:
        return ",".join(f"{d}-{s}-{n}" for d, s, n in self.last)


@dataclass(frozen=True)
class MysqlGtids:
    """A MySQL GTID set: for each (source uuid, tag) its transaction numbers as merged closed intervals."""

    sources: tuple[tuple[str, str, tuple[tuple[int, int], ...]], ...]  # (uuid, tag or "", intervals), sorted

    is_mariadb = False

    def contains(self, gtid: str) -> bool:
        """Is the transaction `uuid:n` (or `uuid:tag:n`) in the set?"""
        try:
            single = parse_mysql(gtid)
        except GtidSetError:
            return False
        return single.issubset(self)

    def issubset(self, other: MysqlGtids) -> bool:
        theirs = {(u, t): iv for u, t, iv in other.sources}
        for uuid, tag, intervals in self.sources:
            covering = theirs.get((uuid, tag), ())
            if not all(any(a <= lo and hi <= b for a, b in covering) for lo, hi in intervals):
                return False
        return True

    def __str__(self) -> str:
        parts = []
        for uuid, tag, intervals in self.sources:
            shown = ":".join(f"{a}" if a == b else f"{a}-{b}" for a, b in intervals)
            parts.append(f"{uuid}:{tag + ':' if tag else ''}{shown}")
        return ",".join(parts)


GtidSet = MariadbGtids | MysqlGtids


def parse_gtid_set(text: str) -> GtidSet:
    """Either server's form, told apart by its shape (a MySQL set has a source uuid)."""
    stripped = "".join(text.split())  # MySQL prints long sets over several lines
    if not stripped:
        raise GtidSetError(f"the GTID set is empty; use {EXPECTED_FORMS}")
    first = stripped.split(",", 1)[0]
    return parse_mysql(stripped) if ":" in first else parse_mariadb(stripped)


def parse_mariadb(text: str) -> MariadbGtids:
    found: dict[int, tuple[int, int, int]] = {}
    for item in filter(None, "".join(text.split()).split(",")):
        match = _MARIADB_GTID.match(item)
        if match is None:
            raise GtidSetError(f"{item!r} is not a GTID; use {EXPECTED_FORMS}")
        domain, server, seq = (int(g) for g in match.groups())
        if domain > _U32 or server > _U32 or seq > _U64:
            raise GtidSetError(f"{item!r} is out of range (domain and server ids are 32-bit, seq 64-bit)")
        if domain in found:
            # One GTID per domain: a second would leave it unclear where the domain ends.
            raise GtidSetError(f"domain {domain} is given twice ({_dash(found[domain])} and {item}); a MariaDB "
                               "GTID position has one GTID per domain, the last transaction wanted")
        found[domain] = (domain, server, seq)
    return MariadbGtids(tuple(found[d] for d in sorted(found)))


def parse_mysql(text: str) -> MysqlGtids:
    spans: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for item in filter(None, "".join(text.split()).split(",")):
        uuid, *rest = item.lower().split(":")
        if not _UUID.match(uuid):
            raise GtidSetError(f"{item!r}: {uuid!r} is not a source uuid; use {EXPECTED_FORMS}")
        uuid = _canonical_uuid(uuid)
        if not any(rest):
            raise GtidSetError(f"{item!r} names a source but no transactions; use {EXPECTED_FORMS}")
        tag = ""
        for part in rest:
            interval = _INTERVAL.match(part)
            if interval is None:
                if not _TAG.match(part):
                    raise GtidSetError(f"{item!r}: {part!r} is neither an interval (n or n-m) nor a tag; "
                                       f"use {EXPECTED_FORMS}")
                tag = part
                spans.setdefault((uuid, tag), [])
                continue
            low = int(interval[1])
            high = int(interval[2]) if interval[2] is not None else low
            if not 1 <= low <= high <= _U64:
                raise GtidSetError(f"{item!r}: interval {part!r} must be n or n-m with 1 <= n <= m")
            spans.setdefault((uuid, tag), []).append((low, high))
    for key, intervals in spans.items():
        if not intervals:
            raise GtidSetError(f"tag {key[1]!r} of source {key[0]} is followed by no interval; use "
                               f"{EXPECTED_FORMS}")
    return MysqlGtids(tuple((u, t, _merged(spans[(u, t)])) for u, t in sorted(spans)))


def _merged(intervals: list[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    """Sorted, with overlapping and adjacent intervals joined (1-5:6-9 is 1-9, as MySQL prints it)."""
    out: list[tuple[int, int]] = []
    for low, high in sorted(intervals):
        if out and low <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], high))
        else:
            out.append((low, high))
    return tuple(out)


def _canonical_uuid(text: str) -> str:
    hexes = text.replace("-", "")
    return f"{hexes[:8]}-{hexes[8:12]}-{hexes[12:16]}-{hexes[16:20]}-{hexes[20:]}"


def _dash(gtid: tuple[int, int, int]) -> str:
    return "-".join(str(n) for n in gtid)

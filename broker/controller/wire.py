"""JSON-lines encoding of Raft messages for the TCP transport (sans-I/O)."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from broker.controller.raft import (
    AppendEntries,
    AppendReply,
    Entry,
    InstallSnapshot,
    Message,
    RequestVote,
    VoteReply,
)

_TYPES: dict[str, type[Any]] = {
    "vote": RequestVote,
    "vote_reply": VoteReply,
    "append": AppendEntries,
    "append_reply": AppendReply,
    "install_snapshot": InstallSnapshot,
}
_NAMES = {cls: name for name, cls in _TYPES.items()}


def encode(message: Message) -> bytes:
    body = asdict(message)
    body["type"] = _NAMES[type(message)]
    return json.dumps(body, separators=(",", ":")).encode() + b"\n"


def decode(line: bytes) -> Message:
    try:
        body: dict[str, Any] = json.loads(line)
        cls = _TYPES[body.pop("type")]
        if cls is AppendEntries:
            body["entries"] = tuple(Entry(e["term"], e["data"]) for e in body["entries"])
        msg: Message = cls(**body)
        return msg
    except (ValueError, KeyError, TypeError) as e:
        raise ValueError(f"bad Raft message {line[:80]!r}: {e}") from e

"""A JSON document kept in one file, replaced atomically (temp, fsync, rename) on every change.

The single-node broker keeps its SCRAM credentials and ACLs this way, so a restart finds them again;
the files are created 0600 because credentials derive from passwords.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def load(path: Path, default: Any) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return default


def save(path: Path, document: Any) -> None:
    temporary = path.with_suffix(path.suffix + ".tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(document, handle, indent=1, sort_keys=True)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)

"""Where downloaded jars and caches live: outside the repo, shared by every run on the machine."""

import os
from pathlib import Path


def cache_dir() -> Path:
    """`$LAKEFEED_CACHE`, else `~/.cache/lakefeed`. Survives clean clones, so CI runs warm."""
    root = Path(os.environ.get("LAKEFEED_CACHE", Path.home() / ".cache" / "lakefeed"))
    root.mkdir(parents=True, exist_ok=True)
    return root


def ivy_dir() -> Path:
    return cache_dir() / "ivy"

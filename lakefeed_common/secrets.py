"""Secrets referenced instead of written into a stored definition: `*-file=PATH` reads a file on the host that
runs the process (trailing newline dropped; a Docker or Kubernetes secret), `*-env=NAME` a variable of its
environment, each time the secret is needed, so a rotated one is picked up at the next connection (as Kafka
Connect's FileConfigProvider / EnvVarConfigProvider keep secrets out of stored connector configs)."""

from __future__ import annotations

import os
from pathlib import Path


class SecretUnavailable(ValueError):
    """The referenced file or variable cannot be read; the message says which and where to set it."""

    retriable = False


def read_secret(kind: str, where: str) -> str:
    """The secret `where` names: `kind` is "file" (a path) or "env" (a variable name)."""
    if kind == "env":
        value = os.environ.get(where)
        if value is None:
            raise SecretUnavailable(f"the changefeed server's environment has no {where}; set it where the server"
                                    " starts (not where the CLI runs)")
        return value
    try:
        return Path(where).read_text(encoding="utf-8").rstrip("\r\n")
    except OSError as exc:
        raise SecretUnavailable(f"cannot read it on the changefeed server's host ({exc.strerror}); give a file the"
                                " server can read") from exc

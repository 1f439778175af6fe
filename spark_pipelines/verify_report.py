"""How `spark-pipeline verify` shows its results: a table per run, then the first differing rows."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from spark_pipelines.verify import TableResult

SHOWN_ROWS = 10  # differing rows printed per table (every key is in --output json)


def results_table(results: Sequence[TableResult]) -> Table:
    view = Table(title="Delta compared with MySQL", title_justify="left")
    for column in ("table", "equal", "MySQL rows", "Delta rows", "chunks (differing)", "differences", "time"):
        view.add_column(column, justify="left" if column in ("table", "differences") else "right")
    for result in results:
        counts = ", ".join(f"{n} {kind}" for kind, n in result.counts)
        problems = "; ".join(result.schema)
        view.add_row(escape(result.table), "[green]yes[/]" if result.equal else "[red]NO[/]",
                     str(result.mysql_rows), str(result.delta_rows), f"{result.chunks} ({result.differing_chunks})",
                     escape("; ".join(p for p in (problems, counts) if p) or "-"), f"{result.seconds:.1f} s")
    return view


def describe_differences(result: TableResult, limit: int = SHOWN_ROWS) -> list[str]:
    """Lines naming the first differing rows: the key, what differs, both sides' values."""
    lines = []
    for difference in result.rows[:limit]:
        key = ", ".join(f"{name}={value!r}" for name, value in zip(result.key, difference.key, strict=True))
        if difference.kind == "changed":
            assert difference.mysql is not None and difference.delta is not None
            at = {name: i for i, name in enumerate(result.columns)}
            detail = "; ".join(f"{c}: MySQL {difference.mysql[at[c]]!r}, Delta {difference.delta[at[c]]!r}"
                               for c in difference.columns)
            lines.append(f"{result.table} ({key}) changed: {detail}")
        else:
            where = {"missing": "in MySQL, not in Delta", "extra": "in Delta, not in MySQL",
                     "duplicate": "more than once in Delta"}[difference.kind]
            row = difference.mysql if difference.mysql is not None else difference.delta
            lines.append(f"{result.table} ({key}) {where}: {row!r}")
    hidden = sum(n for _, n in result.counts) - min(limit, len(result.rows))
    if hidden > 0:
        lines.append(f"{result.table}: {hidden} more differing keys (--output json lists up to 1000)")
    return lines


def show(console: Console, results: Sequence[TableResult]) -> None:
    console.print(results_table(results))
    for result in results:
        for line in describe_differences(result):
            console.print(escape(line), highlight=False)


def as_json(results: Sequence[TableResult]) -> str:
    document: dict[str, Any] = {"equal": all(r.equal for r in results), "tables": [r.as_json() for r in results]}
    return json.dumps(document, indent=2)

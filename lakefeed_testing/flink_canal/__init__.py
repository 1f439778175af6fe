"""Apache Flink's `canal-json` format as a real canal-JSON consumer from another project.

flink-json (and the table runtime it needs) come from Maven Central through pom.xml; a small Java
program (DecodeCanalJson.java, compiled here with javac) builds the decoder the way Flink's table
runtime does (CanalJsonDecodingFormat#createRuntimeDecoder) and feeds it message bytes. No Flink
cluster is involved: the format is a plain DeserializationSchema.
"""

from __future__ import annotations

import base64
import re
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from lakefeed_testing.errors import ServiceError
from lakefeed_testing.java import compiled, java_tool
from lakefeed_testing.maven import copy_dependencies
from lakefeed_testing.paths import cache_dir

POM = Path(__file__).with_name("pom.xml")
SOURCE = Path(__file__).with_name("DecodeCanalJson.java")
_VERSION = re.search(r"<flink.version>([^<]+)</flink.version>", POM.read_text())
assert _VERSION is not None, "pom.xml must set flink.version"
FLINK_VERSION = _VERSION.group(1)


@dataclass(frozen=True)
class Decoded:
    """What Flink made of one message: rows as (row kind `+I`/`-U`/`+U`/`-D`, field texts, None for
    NULL), or the error it raised (`error` is "" when it accepted the message)."""

    rows: tuple[tuple[str, tuple[str | None, ...]], ...]
    error: str = ""


def ensure_flink_libs() -> Path:
    """The directory with flink-json and its runtime jars; downloaded on first use."""
    return copy_dependencies(POM, cache_dir() / f"flink-{FLINK_VERSION}", f"Flink {FLINK_VERSION}")


_PURPOSE = "Flink's canal-json format"


def _compiled(libs: Path) -> Path:
    return compiled(SOURCE, libs, cache_dir() / f"flink-{FLINK_VERSION}", "DecodeCanalJson", _PURPOSE)


def decode(messages: Sequence[bytes], row_type: str, *, ignore_parse_errors: bool = False) -> list[Decoded]:
    """Decode `messages` with Flink's canal-json format for the physical row type `row_type` (Flink SQL,
    e.g. "ROW<`id` INT, `name` STRING>"); one Decoded per message, in order."""
    libs = ensure_flink_libs()
    classes = _compiled(libs)
    with tempfile.NamedTemporaryFile("w", suffix=".b64", encoding="ascii") as feed:
        feed.writelines(base64.b64encode(m).decode() + "\n" for m in messages)
        feed.flush()
        result = subprocess.run(
            [java_tool("java", "openjdk-17-jre-headless", _PURPOSE), "-Xmx256m", "-cp", f"{classes}:{libs}/*",
             "DecodeCanalJson", row_type, str(ignore_parse_errors).lower(), feed.name],
            capture_output=True, text=True, timeout=300,
        )
    if result.returncode != 0:
        raise ServiceError(f"Flink's canal-json decoder failed:\n{result.stderr[-3000:]}")
    return _parse(result.stdout)


def _field(text: str) -> str | None:
    if text == "\\N":
        return None
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), text)


def _parse(output: str) -> list[Decoded]:
    decoded: list[Decoded] = []
    rows: list[tuple[str, tuple[str | None, ...]]] = []
    error = ""
    for line in output.split("\n"):  # not splitlines(): values may hold U+2028
        if line.startswith("MSG "):
            if line != "MSG 0":
                decoded.append(Decoded(tuple(rows), error))
            rows, error = [], ""
        elif line.startswith("ROW "):
            kind, *fields = line[4:].split("\t")
            rows.append((kind, tuple(_field(f) for f in fields)))
        elif line.startswith("ERROR "):
            error = line[6:]
    if output.strip():
        decoded.append(Decoded(tuple(rows), error))
    return decoded

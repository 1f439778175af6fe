"""Topic expressions: `{schema}` and `{table}` placeholders, sanitised to Kafka's legal topic names."""

import re

from changefeed.errors import ConfigError

_PLACEHOLDER = re.compile(r"\{(\w+)\}")
_ILLEGAL = re.compile(r"[^a-zA-Z0-9._-]")
MAX_TOPIC_LENGTH = 249


class TopicExpression:
    def __init__(self, expression: str) -> None:
        unknown = {name for name in _PLACEHOLDER.findall(expression)} - {"schema", "table"}
        if unknown:
            raise ConfigError(
                f"topic expression {expression!r} uses unknown placeholder(s) "
                f"{', '.join(sorted(unknown))}; allowed: {{schema}}, {{table}}"
            )
        if not expression:
            raise ConfigError("topic expression is empty")
        self.expression = expression

    def topic(self, schema: str, table: str) -> str:
        name = self.expression.replace("{schema}", schema).replace("{table}", table)
        name = _ILLEGAL.sub("_", name)[:MAX_TOPIC_LENGTH]
        if name in (".", ".."):
            name = name.replace(".", "_")
        return name

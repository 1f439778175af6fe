"""Topic expressions: `{schema}` and `{table}` placeholders, sanitised to Kafka's legal topic names.

The placeholders are TiCDC's (TiCDC docs, "Customize the rules for Topic and Partition dispatchers"):
`{schema}` is the table's database, `{table}` its name. An expression is checked when the changefeed
config is parsed, so a typo such as `{db}` is refused at `changefeed create`, not at the first row.
"""

import re

from changefeed.errors import ConfigError

PLACEHOLDERS = ("schema", "table")
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
_ILLEGAL = re.compile(r"[^a-zA-Z0-9._-]")
MAX_TOPIC_LENGTH = 249


def check_topic_expression(expression: str) -> None:
    """Raise ConfigError naming every unknown placeholder and the valid ones."""
    if not expression:
        raise ConfigError("topic expression is empty; use e.g. cdc_{schema}_{table}")
    unknown = sorted({name for name in _PLACEHOLDER.findall(expression)} - set(PLACEHOLDERS))
    if unknown:
        raise ConfigError(
            f"topic expression {expression!r} uses unknown placeholder(s) "
            f"{', '.join('{' + name + '}' for name in unknown)}; valid placeholders: "
            f"{', '.join('{' + name + '}' for name in PLACEHOLDERS)}")


class TopicExpression:
    def __init__(self, expression: str) -> None:
        check_topic_expression(expression)
        self.expression = expression

    def topic(self, schema: str, table: str) -> str:
        name = self.expression.replace("{schema}", schema).replace("{table}", table)
        name = _ILLEGAL.sub("_", name)[:MAX_TOPIC_LENGTH]
        if name in (".", ".."):
            name = name.replace(".", "_")
        return name

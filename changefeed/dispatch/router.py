"""Ordered dispatch rules: the first rule whose matcher accepts the table decides topic and partition;
an implicit last rule sends everything else to the default topic with the default dispatcher."""

import fnmatch
from dataclasses import dataclass

from changefeed.dispatch.by_columns import ColumnsDispatcher
from changefeed.dispatch.by_index_value import IndexValueDispatcher
from changefeed.dispatch.by_table import TableDispatcher
from changefeed.dispatch.by_ts import TsDispatcher
from changefeed.dispatch.partition import PartitionDispatcher
from changefeed.dispatch.topic import TopicExpression
from changefeed.errors import ConfigError
from changefeed.model import RowChange

STRATEGIES = ("default", "table", "index-value", "columns", "ts")


@dataclass(frozen=True)
class DispatchRule:
    matcher: tuple[str, ...]  # table patterns like "db.*", "*.orders"
    partition: str = "default"
    topic: str | None = None
    index: tuple[str, ...] | None = None  # index-value: the index's columns
    columns: tuple[str, ...] = ()


def make_dispatcher(rule: DispatchRule) -> PartitionDispatcher:
    if rule.partition in ("default", "index-value"):
        return IndexValueDispatcher(rule.index)
    if rule.partition == "table":
        return TableDispatcher()
    if rule.partition == "columns":
        return ColumnsDispatcher(rule.columns)
    if rule.partition == "ts":
        return TsDispatcher()
    raise ConfigError(
        f"dispatch rule partition={rule.partition!r} is unknown; allowed: {', '.join(STRATEGIES)}"
    )


class Router:
    def __init__(self, default_topic: str, rules: tuple[DispatchRule, ...] = ()) -> None:
        self.default_topic = TopicExpression(default_topic)
        self._rules = [
            (rule, make_dispatcher(rule), TopicExpression(rule.topic) if rule.topic else None)
            for rule in rules
        ]
        self._default = IndexValueDispatcher()
        # (schema, table) -> (dispatcher, topic): the rule match and topic name are per table, not per row.
        self._routes: dict[tuple[str, str], tuple[PartitionDispatcher, str]] = {}

    def _rule_for(self, schema: str, table: str) -> tuple[PartitionDispatcher, TopicExpression]:
        name = f"{schema}.{table}".lower()
        for rule, dispatcher, topic in self._rules:
            if any(fnmatch.fnmatchcase(name, pattern.lower()) for pattern in rule.matcher):
                return dispatcher, topic or self.default_topic
        return self._default, self.default_topic

    def topic(self, schema: str, table: str) -> str:
        return self._rule_for(schema, table)[1].topic(schema, table)

    def route(self, change: RowChange, partitions_of: dict[str, int]) -> tuple[str, int]:
        """(topic, partition) for `change`; `partitions_of` gives each topic's partition count."""
        schema, table = change.table.schema, change.table.table
        route = self._routes.get((schema, table))
        if route is None:
            dispatcher, expression = self._rule_for(schema, table)
            route = self._routes[(schema, table)] = (dispatcher, expression.topic(schema, table))
        dispatcher, topic = route
        return topic, dispatcher.partition(change, partitions_of[topic])

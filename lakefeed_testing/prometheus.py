"""Reading a process's Prometheus endpoint in tests: scrape it, look samples up by name and labels."""

from __future__ import annotations

import urllib.request
from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families


@dataclass(frozen=True)
class Scrape:
    """One scrape: every sample as (name, labels) -> value, and the family names it declared."""

    samples: dict[tuple[str, frozenset[tuple[str, str]]], float]
    families: frozenset[str]

    def value(self, name: str, **labels: str) -> float | None:
        """The sample `name` whose labels include `labels`; None when there is none (several: the first)."""
        wanted = set(labels.items())
        for (sample, sample_labels), value in self.samples.items():
            if sample == name and wanted <= sample_labels:
                return value
        return None

    def names(self) -> frozenset[str]:
        """Sample names (with _total/_bucket/_sum/_count suffixes) and family names."""
        return frozenset(name for name, _ in self.samples) | self.families

    def with_label(self, label: str, value: str) -> list[str]:
        """Sample names that carry label=value (e.g. every series of one changefeed)."""
        return sorted({name for (name, labels) in self.samples if (label, value) in labels})


def scrape(url: str, timeout: float = 5.0) -> Scrape:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        text = response.read().decode()
    samples: dict[tuple[str, frozenset[tuple[str, str]]], float] = {}
    families: set[str] = set()
    for family in text_string_to_metric_families(text):
        families.add(family.name)
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return Scrape(samples, frozenset(families))

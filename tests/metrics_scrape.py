"""A daemon's /v1/metrics read by prometheus-client's own parser, as a scraper reads it."""

from __future__ import annotations

from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import Running
from tests.test_api import call

Series = dict[tuple[str, frozenset[tuple[str, str]]], float]


def parsed(text: str) -> tuple[Series, dict[str, str]]:
    """Every sample by (name, labels), and each family's type by name."""
    samples: Series = {}
    types: dict[str, str] = {}
    for family in text_string_to_metric_families(text):
        types[family.name] = family.type
        for sample in family.samples:
            samples[sample.name, frozenset(sample.labels.items())] = sample.value
    return samples, types


async def scrape(running: Running) -> tuple[Series, dict[str, str]]:
    status, text, response = await call(running.unix, "GET", "http://smemd/v1/metrics")
    assert status == 200 and response.content_type == "text/plain", text
    return parsed(text)


def value(samples: Series, name: str, **labels: Any) -> float:
    """A sample's value; 0 for one not (yet) written out."""
    return samples.get((name, frozenset((k, str(v)) for k, v in labels.items())), 0.0)


def total(samples: Series, name: str, **labels: Any) -> float:
    """The sum of a name's samples whose labels include `labels`."""
    wanted = {(k, str(v)) for k, v in labels.items()}
    return sum(v for (n, got), v in samples.items() if n == name and wanted <= got)

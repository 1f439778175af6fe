"""Session-wide real services: one MariaDB, one Spark session, one Apache Kafka per test run.

Tests that use them are marked `integration` automatically; `-m "not integration"` runs the rest. The
secured broker (one per pytest process: lakefeed_testing/suite.py runs two, and both streams have tests that
take it) is a light process and not marked. The Apache Kafka reference is the suite runner's when it runs one
for both streams (`LAKEFEED_KAFKA_REFERENCE`).
"""

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lakefeed_testing import KafkaReference, MySQLServer, kafka_reference, mysql_server
from lakefeed_testing.secure_broker import SecureBroker
from lakefeed_testing.secure_broker import secure_broker as start_secure_broker
from lakefeed_testing.spark import build_spark_session
from lakefeed_testing.suite import parse_reference_env

SERVICE_FIXTURES = {"mysql", "spark", "kafka", "database"}


BROKER_TESTS = Path(__file__).parent / "broker"
NOT_IN_BROKER_STREAM = {"mysql", "spark", "database"}  # the `rest` stream's session services


def stream_of(item: pytest.Item) -> str:
    """Which of lakefeed_testing/suite.py's two side-by-side pytest processes runs the test."""
    fixtures = set(getattr(item, "fixturenames", ()))
    return "broker" if item.path.is_relative_to(BROKER_TESTS) and not fixtures & NOT_IN_BROKER_STREAM else "rest"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if SERVICE_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.integration)
    stream = os.environ.get("LAKEFEED_TEST_STREAM")
    if stream:
        kept, dropped = [], []
        for item in items:
            (kept if stream_of(item) == stream else dropped).append(item)
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


@pytest.fixture(scope="session")
def mysql() -> Iterator[MySQLServer]:
    with mysql_server() as server:
        yield server


@pytest.fixture
def database(mysql: MySQLServer) -> Iterator[str]:
    """A fresh, empty database on the shared server, dropped after the test."""
    name = f"t_{uuid.uuid4().hex[:10]}"
    mysql.execute(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4")
    yield name
    mysql.execute(f"DROP DATABASE IF EXISTS `{name}`")


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    session = build_spark_session()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def kafka() -> Iterator[KafkaReference]:
    shared = os.environ.get("LAKEFEED_KAFKA_REFERENCE")  # lakefeed_testing/suite.py's, for both streams
    if shared:
        yield parse_reference_env(shared)
        return
    with kafka_reference() as reference:
        yield reference


@pytest.fixture(scope="session")
def secure_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureBroker]:
    """One secured broker for the broker's security tests and the pipeline's SASL_SSL test (Apache Kafka 4.3
    configured the same way with LAKEFEED_SECURITY_IMPL=kafka)."""
    with start_secure_broker(tmp_path_factory.mktemp("secure-broker")) as broker:
        yield broker

"""Session-wide real services: one MariaDB, one Spark session, one Apache Kafka per test run.

Tests that use them are marked `integration` automatically; `-m "not integration"` runs the rest.
"""

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from lakefeed_testing import KafkaReference, MySQLServer, kafka_reference, mysql_server
from lakefeed_testing.spark import build_spark_session

SERVICE_FIXTURES = {"mysql", "spark", "kafka", "database"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if SERVICE_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.integration)


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
    with kafka_reference() as reference:
        yield reference

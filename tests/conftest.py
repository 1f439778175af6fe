"""Session-wide real services: one MariaDB, one Spark session, one Apache Kafka per test run.

Tests that use them are marked `integration` automatically; `-m "not integration"` runs the rest. The
secured broker (one per run too) is a light process and not marked.
"""

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from lakefeed_testing import KafkaReference, MySQLServer, kafka_reference, mysql_server
from lakefeed_testing.secure_broker import SecureBroker
from lakefeed_testing.secure_broker import secure_broker as start_secure_broker
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


@pytest.fixture(scope="session")
def secure_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureBroker]:
    """One secured broker for the broker's security tests and the pipeline's SASL_SSL test (Apache Kafka 4.3
    configured the same way with LAKEFEED_SECURITY_IMPL=kafka)."""
    with start_secure_broker(tmp_path_factory.mktemp("secure-broker")) as broker:
        yield broker

"""root_cause on the texts a failed query carries (the Kafka ones as Spark 4.2's StreamingQueryException words
them when the source's SASL login or topic authorization fails; tests/spark_pipelines/test_sasl_ssl_source.py
produces them for real)."""

from spark_pipelines.config import SourceConfig
from spark_pipelines.errors import SchemaError
from spark_pipelines.failure import root_cause

QUERY = "[STREAM_FAILED] Query [id = 5d0c, runId = 9a1e] terminated with exception: "


def test_a_failed_sasl_login_names_the_fix_without_the_wrappers_sqlstate() -> None:
    error = Exception(QUERY + "org.apache.kafka.common.errors.SaslAuthenticationException: Authentication failed "
                      "during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512 "
                      "SQLSTATE: XXKST\n\nJVM stacktrace:\norg.apache.spark.sql.streaming.StreamingQueryException")
    assert root_cause(error) == (
        "org.apache.kafka.common.errors.SaslAuthenticationException: Authentication failed during authentication "
        "due to invalid credentials with SASL mechanism SCRAM-SHA-512; check the user and password of "
        "source.options kafka.sasl.jaas.config and kafka.sasl.mechanism against the broker's SCRAM users")


def test_a_denied_topic_names_the_acl_to_grant_and_the_topics() -> None:
    # Apache Kafka 4.3's answer to describeTopics names no topic; the fix does.
    error = Exception(QUERY + "org.apache.kafka.common.errors.TopicAuthorizationException: Topic authorization "
                      "failed. SQLSTATE: XXKST")
    topics = SourceConfig("127.0.0.1:9092", topics=("shop",)).described()
    assert root_cause(error, topics=topics) == (
        "org.apache.kafka.common.errors.TopicAuthorizationException: Topic authorization failed.; grant the "
        "pipeline's user READ on topic shop (docs/runbooks/secure-deployment.md)")


def test_the_source_described() -> None:
    assert SourceConfig("b:9092", topics=("a", "b")).described() == "topics a, b"
    assert SourceConfig("b:9092", topic_pattern="shop-.*").described() == "topics matching shop-.*"


def test_other_errors_are_left_as_they_are() -> None:
    assert root_cause(Exception(QUERY + "java.io.IOException: disk full SQLSTATE: XXKST")) == (
        "java.io.IOException: disk full")
    assert root_cause(Exception("boom"), SchemaError("no key")) == "SchemaError: no key"
    assert root_cause(Exception("org.apache.kafka.common.errors.TimeoutException: x SQLSTATE: 08000")) == (
        "org.apache.kafka.common.errors.TimeoutException: x SQLSTATE: 08000")  # not a query's wrapper

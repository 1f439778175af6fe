"""Errors of the Spark pipelines; every one says what is wrong and how to fix it.

    PipelineError (retriable: bool)
    ├── ConfigError              bad YAML config: names the key path, the value and what is allowed
    ├── SchemaError              a canal-JSON column type we cannot map exactly
    ├── MessageError             a message that is not valid canal-JSON for its table
    ├── DDLError                 a schema change Delta cannot follow (with the recovery to apply)
    │   └── TypeChangeError      a column type change beyond Delta's type widening
    ├── SparkJobError            a Spark job of a batch failed (retriable: restart the query)
    └── BatchInterrupted         the query was stopped during a batch (retriable; see jobs/failures.py)

Apart from the last two, none is retriable: each needs a person to fix the input or the configuration.
Spark or storage failures inside a batch are re-raised as SparkJobError with the Java error's first line
(jobs/failures.py says why) and are retried by restarting the query.
"""


class PipelineError(Exception):
    retriable = False

    def __init__(self, message: str, *, retriable: bool | None = None) -> None:
        super().__init__(message)
        if retriable is not None:
            self.retriable = retriable


class ConfigError(PipelineError):
    pass


class SchemaError(PipelineError):
    pass


class MessageError(PipelineError):
    pass


class DDLError(PipelineError):
    pass


class TypeChangeError(DDLError):
    pass


class SparkJobError(PipelineError):
    """A Spark job of the batch failed (its Java error, in one line); transient ones pass on restart."""

    retriable = True


class BatchInterrupted(PipelineError):
    """The query was stopped while a batch ran; the message is the form Spark recognises as a stop."""

    retriable = True

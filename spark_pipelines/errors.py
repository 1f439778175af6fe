"""Errors of the Spark pipelines; every one says what is wrong and how to fix it.

    PipelineError (retriable: bool)
    ├── ConfigError              bad YAML config: names the key path, the value and what is allowed
    ├── SchemaError              a canal-JSON column type we cannot map exactly
    ├── MessageError             a message that is not valid canal-JSON for its table
    └── DDLError                 a schema change Delta cannot follow (with the recovery to apply)
        └── TypeChangeError      a column type change beyond Delta's type widening

None of them is retriable: each needs a person to fix the input or the configuration. Transient Spark
or storage failures surface as Spark's own exceptions and are retried by restarting the query.
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

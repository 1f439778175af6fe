"""Errors raised when a test service cannot be provided.

    ServiceError            (retriable flag; message says what failed and how to fix it)
"""


class ServiceError(RuntimeError):
    """A real service (MariaDB, Kafka, Spark) could not be started or reached."""

    def __init__(self, message: str, *, retriable: bool = False) -> None:
        super().__init__(message)
        self.retriable = retriable

"""Errors of the sink package. Every error says whether retrying can help.

SinkError                      (retriable: bool)
├── SinkConfigError            bad sink URI or option; never retriable
├── TopicError                 topic missing, too few partitions, RF below min.insync.replicas
├── MessageTooLargeError       one message above the effective limit; never retriable
├── DeliveryError              the broker refused or lost a message (retriable per Kafka error)
└── SinkClosedError            the sink was closed (pause/remove) while work was pending
"""


class SinkError(Exception):
    """Base of every sink error; `retriable` tells the changefeed whether to back off and retry."""

    retriable: bool = False

    def __init__(self, message: str, *, retriable: bool | None = None) -> None:
        super().__init__(message)
        if retriable is not None:
            self.retriable = retriable


class SinkConfigError(SinkError):
    """The sink URI or an option is invalid; the message names it and what is allowed."""


class TopicError(SinkError):
    """A topic cannot be used as configured (missing, partitions, replication, limits)."""


class MessageTooLargeError(SinkError):
    """A single message is larger than the effective message limit."""


class DeliveryError(SinkError):
    """The broker did not acknowledge a message."""

    retriable = True


class SinkClosedError(SinkError):
    """The sink was closed while messages were in flight; they were not acknowledged."""

    retriable = True

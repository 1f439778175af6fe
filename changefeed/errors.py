"""Errors raised by the changefeed. Each carries `retriable`: may the same call succeed if retried later?

    ChangefeedError
    ├── ConfigError                   (not retriable) bad option, filter rule or start position
    ├── ServerConfigError             (not retriable) the MySQL server is not set up for capture
    │   └── PrivilegeError            (not retriable) the capture user lacks a grant
    ├── BinlogPurgedError             (not retriable) the resume position is no longer on the server
    ├── SnapshotRetryError            (retriable)     a table was created or changed under the snapshot
    ├── SchemaError                   (not retriable) a row cannot be matched to any known table schema
    ├── StoreError                    (not retriable) the schema history or checkpoint database is unusable
    ├── DDLParseError                 (not retriable) a DDL statement whose tables cannot be told
    ├── SourceConnectionError         (retriable)     the server went away; reconnect with backoff
    ├── CaptureProcessError           (retriable)     the capture's child process ended without saying why
    └── PipelineMetricsError          (retriable)     the console could not read the pipeline's metrics

The lifecycle layer turns a retriable error into the `warning` state (retry with backoff) and a
non-retriable one into `failed`; the message always says what to change.
"""


class ChangefeedError(Exception):
    retriable: bool = False


class ConfigError(ChangefeedError):
    """An option, filter rule or start position is invalid."""


class ServerConfigError(ChangefeedError):
    """The source server's settings do not allow row-based capture."""


class PrivilegeError(ServerConfigError):
    """The capture user lacks a privilege it needs."""


class BinlogPurgedError(ChangefeedError):
    """The binlog position to resume from has been purged from the server."""


class SnapshotRetryError(ChangefeedError):
    """A table was created, altered or dropped after the snapshot's read view was opened, so it cannot be
    read consistently (ER_TABLE_DEF_CHANGED, ER_NO_SUCH_TABLE): the snapshot is taken again."""

    retriable = True


class SchemaError(ChangefeedError):
    """A row event does not match any schema we know for its table."""


class StoreError(ChangefeedError):
    """The schema history or checkpoint store could not be read or written."""


class SourceConnectionError(ChangefeedError):
    """The connection to the source server failed or was lost."""

    retriable = True


class CaptureProcessError(ChangefeedError):
    """The capture's child process ended without saying why (killed, out of memory), or a failure in it could
    not be carried over as itself. The runner starts a new one from its checkpoint."""

    retriable = True


class DDLParseError(ChangefeedError):
    """A DDL statement whose tables or column changes cannot be told (capture would misattribute it)."""


class PipelineMetricsError(ChangefeedError):
    """The Spark pipeline's Prometheus endpoint (`--pipeline-metrics-url`) did not answer or did not
    answer in the Prometheus text format; the console shows the message and tries again."""

    retriable = True

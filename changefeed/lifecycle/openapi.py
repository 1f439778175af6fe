"""OpenAPI 3.0 description of the changefeed server's HTTP API (served at /api/v2/openapi.json)."""

from typing import Any

_nullable_str = {"type": "string", "nullable": True}
_CP = {"type": "object", "nullable": True, "required": ["file", "pos", "gtid", "commit_ts", "commit_time"],
       "properties": {"file": {"type": "string"}, "pos": {"type": "integer"}, "gtid": {"type": "string"},
                      "commit_ts": {"type": "integer"}, "commit_time": _nullable_str}}
_SUMMARY_PROPS: dict[str, Any] = {
    "id": {"type": "string"},
    "state": {"type": "string", "enum": ["normal", "stopped", "warning", "failed", "finished"]},
    "checkpoint": _CP,
    "checkpoint_time": _nullable_str,
    "owner": _nullable_str,
    "error": {"type": "object", "nullable": True, "required": ["message", "time"],
              "properties": {"message": {"type": "string"}, "time": _nullable_str}},
    "next_retry": _nullable_str,
}
_SUMMARY = {"type": "object", "required": list(_SUMMARY_PROPS), "properties": _SUMMARY_PROPS}
_DETAIL = {"type": "object", "required": [*_SUMMARY_PROPS, "source", "sink_uri", "config", "target_ts",
                                          "retry_count", "created", "updated"],
           "properties": {**_SUMMARY_PROPS, "source": {"type": "string"}, "sink_uri": {"type": "string"},
                          "config": {"type": "string"}, "target_ts": {"type": "integer", "nullable": True},
                          "retry_count": {"type": "integer"}, "created": {"type": "string"},
                          "updated": {"type": "string"},
                          "warnings": {"type": "array", "items": {"type": "string"}}}}
_ERROR = {"type": "object", "required": ["error", "message"],
          "properties": {"error": {"type": "string"}, "message": {"type": "string"}, "field": _nullable_str}}
_TABLE_STATS = {"type": "object", "properties": {
    "rows": {"type": "number"}, "bytes": {"type": "number"},
    "rows_per_second": {"type": "number"}, "bytes_per_second": {"type": "number"}}}
_STATS = {"type": "object", "required": ["id", "state", "checkpoint_time", "checkpoint_lag_seconds", "tables"],
          "properties": {"id": {"type": "string"}, "state": _SUMMARY_PROPS["state"],
                         "checkpoint_time": _nullable_str,
                         "checkpoint_lag_seconds": {"type": "number", "nullable": True},
                         "tables": {"type": "object", "additionalProperties": _TABLE_STATS}}}


def _json(schema: Any, description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _errors(*codes: int) -> dict[str, Any]:
    texts = {400: "invalid request or definition", 404: "no such changefeed", 409: "exists or wrong state"}
    return {str(code): _json({"$ref": "#/components/schemas/Error"}, texts[code]) for code in codes}


_INTS = {"type": "array", "items": {"type": "integer"}}
_PARTITION = {"type": "object", "required": ["partition", "leader", "replicas", "isr", "error"], "properties": {
    "partition": {"type": "integer"}, "leader": {"type": "integer", "description": "-1: no leader (offline)"},
    "replicas": _INTS, "isr": _INTS, "error": _nullable_str}}
_SINK_METADATA = {"type": "object", "required": ["bootstrap", "topic", "error", "brokers", "controller_id", "topics"],
                  "properties": {
    "bootstrap": {"type": "string"}, "topic": {"type": "string", "description": "the sink URI's topic"},
    "error": {"type": "string", "nullable": True, "description": "why the brokers did not answer (then empty)"},
    "controller_id": {"type": "integer", "nullable": True},
    "brokers": {"type": "array", "items": {"type": "object", "required": ["node_id", "host", "port"], "properties": {
        "node_id": {"type": "integer"}, "host": {"type": "string"}, "port": {"type": "integer"}}}},
    "topics": {"type": "array", "items": {"type": "object", "required": ["name", "partitions", "error"],
                                          "properties": {"name": {"type": "string"}, "error": _nullable_str,
                                                         "partitions": {"type": "array", "items": _PARTITION}}}}}}
_PIPELINE = {"type": "object", "required": ["configured", "url", "error", "samples"], "properties": {
    "configured": {"type": "boolean", "description": "false: the server has no --pipeline-metrics-url"},
    "url": _nullable_str,
    "error": {"type": "string", "nullable": True, "description": "why the pipeline's endpoint could not be read"},
    "samples": {"type": "array", "items": {"type": "object", "required": ["name", "labels", "value"], "properties": {
        "name": {"type": "string"}, "value": {"type": "number"},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}}}}}}}
_ID = {"name": "cf_id", "in": "path", "required": True, "schema": {"type": "string"}, "example": "cf1"}
_DETAIL_REF = {"$ref": "#/components/schemas/ChangefeedDetail"}


def _body(schema: Any, required: bool = True) -> dict[str, Any]:
    return {"required": required, "content": {"application/json": {"schema": schema}}}


SPEC: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {"title": "Lakefeed changefeed server", "version": "2"},
    "paths": {
        "/api/v2/health": {"get": {"operationId": "health", "responses": {"200": _json(
            {"type": "object", "required": ["status"], "properties": {"status": {"type": "string"}}}, "up")}}},
        "/api/v2/changefeeds": {
            "get": {"operationId": "listChangefeeds",
                    "parameters": [{"name": "all", "in": "query", "schema": {"type": "boolean"},
                                    "description": "include finished changefeeds"}],
                    "responses": {"200": _json({"type": "array", "items": {"$ref": "#/components/schemas/Summary"}},
                                               "changefeeds")}},
            "post": {"operationId": "createChangefeed",
                     "requestBody": _body({"$ref": "#/components/schemas/CreateRequest"}),
                     "responses": {"201": _json(_DETAIL_REF, "created, after every check passed"),
                                   **_errors(400, 409)}},
        },
        "/api/v2/changefeeds/{cf_id}": {
            "parameters": [_ID],
            "get": {"operationId": "queryChangefeed", "responses": {"200": _json(_DETAIL_REF, "the changefeed"),
                                                                    **_errors(404)}},
            "put": {"operationId": "updateChangefeed",
                    "requestBody": _body({"$ref": "#/components/schemas/UpdateRequest"}),
                    "responses": {"200": _json(_DETAIL_REF, "updated"), **_errors(400, 404, 409)}},
            "delete": {"operationId": "removeChangefeed", "responses": {"200": _json(
                {"type": "object", "required": ["id", "removed"],
                 "properties": {"id": {"type": "string"}, "removed": {"type": "boolean"}}}, "removed"),
                **_errors(404)}},
        },
        "/api/v2/changefeeds/{cf_id}/statistics": {"parameters": [_ID], "get": {
            "operationId": "changefeedStatistics",
            "responses": {"200": _json({"$ref": "#/components/schemas/Statistics"}, "per-table statistics"),
                          **_errors(404)}}},
        "/api/v2/changefeeds/{cf_id}/pause": {"parameters": [_ID], "post": {
            "operationId": "pauseChangefeed",
            "description": "Answers once the owner stopped the runner and saved its final checkpoint (at most 10 s).",
            "responses": {"200": _json(_DETAIL_REF, "stopped"), **_errors(404, 409)}}},
        "/api/v2/changefeeds/{cf_id}/resume": {"parameters": [_ID], "post": {
            "operationId": "resumeChangefeed",
            "requestBody": _body({"$ref": "#/components/schemas/ResumeRequest"}, required=False),
            "responses": {"200": _json(_DETAIL_REF, "resumed"), **_errors(400, 404, 409)}}},
        "/api/v2/changefeeds/{cf_id}/sink/metadata": {"parameters": [_ID], "get": {
            "operationId": "sinkMetadata",
            "description": "the sink cluster's brokers, topics, partition leaders and ISR (one Kafka Metadata "
                           "request to the sink URI's bootstrap servers)",
            "responses": {"200": _json(_SINK_METADATA, "the sink cluster, or why it did not answer"),
                          **_errors(404)}}},
        "/api/v2/pipeline/metrics": {"get": {
            "operationId": "pipelineMetrics",
            "description": "the Spark pipeline's batches and freshness, read from --pipeline-metrics-url",
            "responses": {"200": _json(_PIPELINE, "the pipeline's samples, or configured=false")}}},
    },
    "components": {"schemas": {
        "Summary": _SUMMARY,
        "ChangefeedDetail": _DETAIL,
        "Statistics": _STATS,
        "Error": _ERROR,
        "CreateRequest": {"type": "object", "required": ["changefeed_id", "source", "sink_uri"], "properties": {
            "changefeed_id": {"type": "string"}, "source": {"type": "string", "description": "mysql://user:pw@host:port"},
            "sink_uri": {"type": "string", "description": "kafka://host:port/topic?..."},
            "config": {"type": "string", "description": "changefeed config as YAML text"},
            "start": {"type": "string", "description": "now (default), FILE:POS, an ISO-8601 time, a TSO, or gtid:SET "
                      "(start at the first transaction not in SET: MariaDB domain-server-seq[,...], MySQL "
                      "uuid:1-100[:200-300][,...])"},
            "target": {"type": "string", "description": "TSO or ISO-8601 time to finish at"}}},
        "UpdateRequest": {"type": "object", "properties": {
            "sink_uri": {"type": "string"}, "config": {"type": "string"},
            "target": {"type": "string", "nullable": True}}},
        "ResumeRequest": {"type": "object", "properties": {
            "overwrite_checkpoint": {"type": "string",
                                     "description": "FILE:POS, ISO-8601 time, TSO or gtid:SET to restart "
                                                    "from (as start)"}}},
    }},
}

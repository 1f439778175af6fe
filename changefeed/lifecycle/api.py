"""The HTTP JSON API of `changefeed server` (Starlette). The OpenAPI spec is in openapi.py and served at
/api/v2/openapi.json; /metrics serves Prometheus metrics. The CLI is a client of exactly this API.

Errors are {"error": code, "message": text, "field": part or null} with 400 (invalid definition),
404 (no such changefeed), 409 (exists, or not allowed in the current state).
"""

from __future__ import annotations

import datetime
import re
import time
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from changefeed.console.routes import console_routes
from changefeed.lifecycle.auth import BearerTokenMiddleware
from changefeed.lifecycle.metrics import Metrics
from changefeed.lifecycle.openapi import SPEC
from changefeed.lifecycle.source_uri import redact
from changefeed.lifecycle.state import State
from changefeed.lifecycle.store import AlreadyExists, ChangefeedRecord, MetadataStore
from changefeed.lifecycle.validate import (
    InvalidDefinition,
    check_id,
    overwrite_checkpoint,
    parse_config_text,
    parse_target,
    validate,
)
from changefeed.model import Checkpoint, tso_physical_ms
from sink.errors import SinkError
from sink.uri import parse_sink_uri

_SECRET = re.compile(r"(sasl-password=)[^&]*")
PAUSE_WAIT = 10.0  # seconds pause waits for the owner to stop the runner and release the changefeed


def _error(status: int, code: str, message: str, field: str | None = None) -> JSONResponse:
    return JSONResponse({"error": code, "message": message, "field": field}, status_code=status)


def _iso(ts: float | None) -> str | None:
    return None if ts is None else datetime.datetime.fromtimestamp(ts, datetime.UTC).isoformat()


def _checkpoint(cp: Checkpoint | None) -> dict[str, Any] | None:
    if cp is None:
        return None
    return {"file": cp.position.file, "pos": cp.position.pos, "gtid": cp.position.gtid, "commit_ts": cp.commit_ts,
            "commit_time": _iso(tso_physical_ms(cp.commit_ts) / 1000)}


def summary(rec: ChangefeedRecord) -> dict[str, Any]:
    return {
        "id": rec.id, "state": rec.state.value, "checkpoint": _checkpoint(rec.checkpoint),
        "checkpoint_time": _iso(rec.checkpoint_at), "owner": rec.owner,
        "error": None if rec.error is None else {"message": rec.error, "time": _iso(rec.error_at)},
        "next_retry": _iso(rec.next_retry),
    }


def detail(rec: ChangefeedRecord) -> dict[str, Any]:
    return {**summary(rec), "source": redact(rec.source), "sink_uri": _SECRET.sub(r"\1***", rec.sink_uri),
            "config": rec.config, "target_ts": rec.target_ts, "retry_count": rec.retry_count,
            "created": _iso(rec.created_at), "updated": _iso(rec.updated_at)}


def statistics(rec: ChangefeedRecord) -> dict[str, Any]:
    lag = None if rec.checkpoint is None else max(0.0, time.time() - tso_physical_ms(rec.checkpoint.commit_ts) / 1000)
    return {"id": rec.id, "state": rec.state.value, "checkpoint_time": _iso(rec.checkpoint_at),
            "checkpoint_lag_seconds": lag, "tables": rec.stats}


async def _body(request: Request) -> dict[str, Any] | JSONResponse:
    try:
        body = await request.json()
    except ValueError:
        return _error(400, "invalid_json", "the request body is not JSON")
    if not isinstance(body, dict):
        return _error(400, "invalid_body", "the request body must be a JSON object")
    return body


def _text(body: dict[str, Any], key: str, required: bool = False) -> str | None:
    value = body.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or (required and not value):
        raise InvalidDefinition(key, f"{key} must be a {'non-empty ' if required else ''}string")
    return value


def build_app(store: MetadataStore, metrics: Metrics, *, check_services: bool = True,
              pipeline_metrics_url: str | None = None, auth_token: str | None = None) -> Starlette:
    """The API; with `auth_token`, every route but the health check needs it as a bearer token."""
    def get_record(cf_id: str) -> ChangefeedRecord | JSONResponse:
        rec = store.get(cf_id)
        return _error(404, "not_found", f"changefeed {cf_id!r} does not exist") if rec is None else rec

    async def health(_: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    async def openapi(_: Request) -> JSONResponse:
        return JSONResponse(SPEC)

    async def prometheus(_: Request) -> Response:
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    def list_feeds(request: Request) -> JSONResponse:
        show_all = request.query_params.get("all", "false").lower() == "true"
        records = [r for r in store.all() if show_all or r.state is not State.FINISHED]
        return JSONResponse([summary(r) for r in records])

    async def create(request: Request) -> JSONResponse:
        body = await _body(request)
        if isinstance(body, JSONResponse):
            return body
        try:
            cf_id = _text(body, "changefeed_id", True) or ""
            check_id(cf_id)
            args = (cf_id, _text(body, "source", True) or "", _text(body, "sink_uri", True) or "",
                    _text(body, "config") or "", _text(body, "start"), _text(body, "target"))
        except InvalidDefinition as exc:
            return _error(400, "invalid_definition", str(exc), exc.field)
        if store.get(cf_id) is not None:
            return _error(409, "exists", f"changefeed {cf_id!r} already exists; remove it or choose another id")
        try:
            definition = await run_in_threadpool(validate, *args, check_services=check_services)
            store.create(cf_id, definition.source, definition.sink_uri, definition.config_text, definition.start,
                         definition.target_ts)
        except InvalidDefinition as exc:
            return _error(400, "invalid_definition", str(exc), exc.field)
        except AlreadyExists as exc:
            return _error(409, "exists", str(exc))
        rec = store.get(cf_id)
        assert rec is not None
        return JSONResponse({**detail(rec), "warnings": list(definition.warnings)}, status_code=201)

    def _wait_released(cf_id: str) -> None:
        """Pause answers once the owner stopped the runner, saved its final checkpoint and released the lease
        (TiCDC's pause is asynchronous; a caller reading the checkpoint right after pause, e.g. to resume from
        an earlier point, would see it move). Bounded: an owner that died keeps its lease until it expires,
        and after PAUSE_WAIT the answer shows the state as it is."""
        deadline = time.monotonic() + PAUSE_WAIT
        while time.monotonic() < deadline:
            rec = store.get(cf_id)
            if rec is None or rec.owner is None or (rec.lease_expires or 0.0) < time.time():
                return
            time.sleep(0.05)

    def query(request: Request) -> JSONResponse:
        rec = get_record(request.path_params["cf_id"])
        return rec if isinstance(rec, JSONResponse) else JSONResponse(detail(rec))

    def stats(request: Request) -> JSONResponse:
        rec = get_record(request.path_params["cf_id"])
        return rec if isinstance(rec, JSONResponse) else JSONResponse(statistics(rec))

    def pause(request: Request) -> JSONResponse:
        cf_id = request.path_params["cf_id"]
        rec = get_record(cf_id)
        if isinstance(rec, JSONResponse):
            return rec
        if rec.state is State.FINISHED:
            return _error(409, "wrong_state", f"changefeed {cf_id!r} is finished; nothing to pause")
        store.operator_set(cf_id, restart=False, state=State.STOPPED)
        _wait_released(cf_id)
        return query(request)

    async def resume(request: Request) -> JSONResponse:
        cf_id = request.path_params["cf_id"]
        rec = get_record(cf_id)
        if isinstance(rec, JSONResponse):
            return rec
        body = await _body(request) if await request.body() else {}
        if isinstance(body, JSONResponse):
            return body
        values: dict[str, Any] = {"state": State.NORMAL, "error": None, "error_at": None, "retry_count": 0,
                                  "next_retry": None, "first_error_at": None}
        try:
            overwrite = _text(body, "overwrite_checkpoint")
            if overwrite:  # checked against the source now, not when the runner trips over it
                values["checkpoint"] = await run_in_threadpool(overwrite_checkpoint, rec.source, overwrite,
                                                               check_services=check_services)
        except InvalidDefinition as exc:
            return _error(400, "invalid_definition", str(exc), exc.field)
        if rec.state in (State.NORMAL, State.WARNING) and not overwrite:
            return query(request)  # already running: resume is a no-op
        if rec.state is State.FINISHED:
            return _error(409, "wrong_state", f"changefeed {cf_id!r} is finished; create a new one")
        store.operator_set(cf_id, **values)
        return query(request)

    async def change(request: Request) -> JSONResponse:
        cf_id = request.path_params["cf_id"]
        rec = get_record(cf_id)
        if isinstance(rec, JSONResponse):
            return rec
        body = await _body(request)
        if isinstance(body, JSONResponse):
            return body
        if rec.state not in (State.STOPPED, State.FAILED):
            return _error(409, "wrong_state", f"changefeed {cf_id!r} is {rec.state}; pause it before update")
        values: dict[str, Any] = {}
        try:
            sink_uri = _text(body, "sink_uri")
            if sink_uri is not None:
                try:
                    parse_sink_uri(sink_uri)
                except SinkError as exc:
                    raise InvalidDefinition("sink_uri", str(exc)) from exc
                values["sink_uri"] = sink_uri
            config = _text(body, "config")
            if config is not None:
                parse_config_text(config)
                values["config"] = config
            if "target" in body:
                values["target_ts"] = parse_target(_text(body, "target"))
        except InvalidDefinition as exc:
            return _error(400, "invalid_definition", str(exc), exc.field)
        if values and not store.operator_set(cf_id, only_from=(State.STOPPED, State.FAILED), **values):
            return _error(409, "wrong_state", f"changefeed {cf_id!r} changed state meanwhile; try again")
        return query(request)

    def remove(request: Request) -> JSONResponse:
        cf_id = request.path_params["cf_id"]
        if not store.remove(cf_id):
            return _error(404, "not_found", f"changefeed {cf_id!r} does not exist")
        return JSONResponse({"id": cf_id, "removed": True})

    middleware = [Middleware(BearerTokenMiddleware, token=auth_token)] if auth_token else []
    return Starlette(middleware=middleware, routes=[
        Route("/api/v2/health", health, methods=["GET"]),
        Route("/api/v2/openapi.json", openapi, methods=["GET"]),
        Route("/metrics", prometheus, methods=["GET"]),
        Route("/api/v2/changefeeds", list_feeds, methods=["GET"]),
        Route("/api/v2/changefeeds", create, methods=["POST"]),
        Route("/api/v2/changefeeds/{cf_id}", query, methods=["GET"]),
        Route("/api/v2/changefeeds/{cf_id}", change, methods=["PUT"]),
        Route("/api/v2/changefeeds/{cf_id}", remove, methods=["DELETE"]),
        Route("/api/v2/changefeeds/{cf_id}/statistics", stats, methods=["GET"]),
        Route("/api/v2/changefeeds/{cf_id}/pause", pause, methods=["POST"]),
        Route("/api/v2/changefeeds/{cf_id}/resume", resume, methods=["POST"]),
        *console_routes(store, pipeline_metrics_url),  # GET / and the two read-only routes it polls
    ])

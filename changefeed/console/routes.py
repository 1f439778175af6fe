"""The console's routes on the changefeed server: the page and its static files, and two read-only API
routes the page polls besides the changefeed routes (`changefeed pause`/`resume` and the page call the
same POST routes, so the same state rules apply).

- GET /api/v2/changefeeds/{id}/sink/metadata: brokers, controller, topics, partition leaders, replicas
  and ISR of the changefeed's sink cluster, from one Kafka Metadata request to its bootstrap servers.
- GET /api/v2/pipeline/metrics: the pipeline's batches and freshness samples, or configured=false.

An unreachable cluster or pipeline is part of what they report (200 with `error` set), not a failure of
this server: 5xx stays reserved for the server's own faults.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from changefeed.console import pipeline_metrics
from changefeed.errors import PipelineMetricsError
from changefeed.lifecycle.store import MetadataStore
from sink.errors import SinkError
from sink.kafka.admin import describe_cluster
from sink.uri import parse_sink_uri

STATIC = Path(__file__).parent / "static"


def _error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": code, "message": message, "field": None}, status_code=status)


def console_routes(store: MetadataStore, pipeline_metrics_url: str | None) -> list[BaseRoute]:
    async def index(_: Request) -> FileResponse:
        return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-cache"})

    async def sink_metadata(request: Request) -> JSONResponse:
        cf_id = request.path_params["cf_id"]
        rec = store.get(cf_id)
        if rec is None:
            return _error(404, "not_found", f"changefeed {cf_id!r} does not exist")
        config = parse_sink_uri(rec.sink_uri)  # stored only after it parsed at creation or update
        try:
            # short: the page polls again soon, and a live cluster answers a Metadata request in milliseconds
            cluster = await run_in_threadpool(describe_cluster, config, timeout=2.0)
        except SinkError as exc:
            return JSONResponse({"bootstrap": config.bootstrap, "topic": config.topic, "error": str(exc),
                                 "controller_id": None, "brokers": [], "topics": []})
        return JSONResponse({"bootstrap": config.bootstrap, "topic": config.topic, "error": None,
                             **dataclasses.asdict(cluster)})

    async def pipeline(_: Request) -> JSONResponse:
        if pipeline_metrics_url is None:
            return JSONResponse({"configured": False, "url": None, "error": None, "samples": []})
        try:
            samples = await run_in_threadpool(pipeline_metrics.fetch, pipeline_metrics_url)
        except PipelineMetricsError as exc:
            return JSONResponse({"configured": True, "url": pipeline_metrics_url, "error": str(exc), "samples": []})
        return JSONResponse({"configured": True, "url": pipeline_metrics_url, "error": None,
                             "samples": [{"name": s.name, "labels": dict(s.labels), "value": s.value}
                                         for s in samples]})

    return [
        Route("/", index, methods=["GET"]),
        Mount("/console", StaticFiles(directory=STATIC), name="console"),
        Route("/api/v2/changefeeds/{cf_id}/sink/metadata", sink_metadata, methods=["GET"]),
        Route("/api/v2/pipeline/metrics", pipeline, methods=["GET"]),
    ]

"""The Kafka-Connect-compatible REST API: same paths, bodies, status codes and error shape."""

from __future__ import annotations

import logging
from collections.abc import Callable
from importlib.metadata import version as package_version

from fastapi import FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from herder.errors import (
    ConnectorExists,
    ConnectorNotFound,
    ConnectorNotStopped,
    HerderError,
    InvalidConnectorConfig,
    InvalidOffsets,
    NoHandOff,
    NotLeader,
    TaskNotFound,
    TasksStillRunning,
)
from herder.requests import RequestTimedOut, WorkerStopping
from herder.views import WorkerState
from rest.auth import require_authentication
from rest.body_limit import BodyLimit
from rest.connector_plugins_routes import connector_plugins_router
from rest.connectors import connectors_router
from rest.errors import error_response
from rest.forwarding import FORWARDED_HEADER, forward_to_leader
from rest.herder_api import HerderApi, HerderDep, provide_herder
from rest.leave_group import leave_group_router
from rest.loggers import LoggerLevels, loggers_router
from rest.metrics import RuntimeMetrics, metrics_router
from rest.models import ClusterBody, HealthBody, ServerInfoBody, WorkerBody
from rest.offsets import offsets_router
from rest.progress import progress_router
from rest.security import RestSecurity
from rest.ui import ui_router
from rest.worker_seam import RegistryPlugins, overload_line

log = logging.getLogger(__name__)

ERROR_STATUS: dict[type[HerderError], int] = {
    ConnectorNotFound: 404,
    TaskNotFound: 404,
    ConnectorExists: 409,
    InvalidConnectorConfig: 400,
    ConnectorNotStopped: 400,
    InvalidOffsets: 400,
    TasksStillRunning: 409,
    NotLeader: 409,
    NoHandOff: 409,
    RequestTimedOut: 409,
    WorkerStopping: 503,
}
"""Connect answers a request its herder could not serve in time, as during a rebalance,
with 409; one that reaches a worker on its way out is worth retrying on another worker."""


def create_app(
    herder: HerderApi,
    cluster_id: Callable[[], str | None],
    commit: str,
    plugins: RegistryPlugins,
    logger_levels: LoggerLevels,
    security: RestSecurity,
    runtime: RuntimeMetrics,
) -> FastAPI:
    app = FastAPI(title="sparkherd", version=package_version("sparkherd"))
    provide_herder(app, herder)

    @app.exception_handler(HerderError)
    async def _herder_error(request: Request, exc: HerderError) -> Response:
        if (
            isinstance(exc, NotLeader)
            and exc.leader_url is not None
            and FORWARDED_HEADER not in request.headers
        ):
            return await forward_to_leader(request, exc.leader_url, security.peer_verify)
        return error_response(ERROR_STATUS.get(type(exc), 500), str(exc))

    @app.exception_handler(RequestValidationError)
    async def _invalid_request(request: Request, exc: RequestValidationError) -> Response:
        content_type = request.headers.get("content-type", "")
        if _about_the_body(exc) and _has_body(request) and not _is_json(content_type):
            return error_response(
                415,
                f"Unsupported Media Type {content_type or '(none)'!r}: send the body as "
                "application/json (curl: -H 'Content-Type: application/json')",
            )
        return error_response(400, _describe_validation_error(exc))

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> Response:
        return error_response(exc.status_code, str(exc.detail))

    @app.exception_handler(Exception)
    async def _internal_error(request: Request, exc: Exception) -> Response:
        log.exception("internal error serving %s %s", request.method, request.url.path)
        return error_response(500, f"internal error: {exc}")

    @app.get("/", response_model=ServerInfoBody)
    async def server_info() -> ServerInfoBody:
        return ServerInfoBody(
            version=package_version("sparkherd"), commit=commit, kafka_cluster_id=cluster_id()
        )

    @app.get(
        "/health",
        response_model=HealthBody,
        responses={503: {"model": HealthBody}, 500: {"model": HealthBody}},
    )
    async def health(herder: HerderDep) -> Response:
        """KIP-1017: 200 once the worker has joined the group and read its configs, 503
        while it starts, 500 when it was ready and no longer is. An overloaded worker
        (`worker.runtime.trigger_lag`) stays healthy, since a restart would not give its
        tasks more driver, and its message says which tasks are behind."""
        if herder.ready:
            ready = "Worker has completed startup and is ready to handle requests."
            overload = overload_line(runtime.trigger_lags())
            message = ready if overload is None else f"{ready} {overload}"
            return JSONResponse(HealthBody(status="healthy", message=message).model_dump())
        if herder.unhealthy is not None:
            body = HealthBody(status="unhealthy", message=herder.unhealthy)
            return JSONResponse(body.model_dump(), status_code=500)
        message = (
            "Worker is warming up (starting Spark) before it joins the group."
            if herder.state is WorkerState.WARMING
            else "Worker is still joining the group and reading its configs."
        )
        body = HealthBody(status="starting", message=message)
        return JSONResponse(body.model_dump(), status_code=503)

    @app.get("/workers", response_model=ClusterBody)
    async def workers(herder: HerderDep) -> ClusterBody:
        """Extension: this worker's view of the group and of who runs what."""
        view = herder.cluster_view()
        return ClusterBody(
            leader=view.leader_url,
            generation=view.generation,
            protocol_version=view.protocol_version,
            scheduled_rebalance_ms=view.scheduled_rebalance_ms,
            workers=[
                WorkerBody(
                    id=worker,
                    url=f"http://{worker}",
                    connectors=sorted(allocation.connectors),
                    tasks=[str(task) for task in sorted(allocation.tasks)],
                    state=view.state if worker == herder.worker_id else None,
                )
                for worker, allocation in sorted(view.workers.items())
            ],
        )

    app.include_router(connectors_router(plugins.secret_keys, plugins.registry.version_of))
    app.include_router(offsets_router())
    app.include_router(connector_plugins_router(plugins))
    app.include_router(loggers_router(logger_levels, herder.admin))
    app.include_router(leave_group_router())
    app.include_router(metrics_router(runtime))
    app.include_router(progress_router(runtime, security.peer_verify))
    app.include_router(ui_router())
    # The last middleware added runs first: credentials are checked before a byte of the
    # body is read, so an unauthenticated caller cannot make the worker buffer 1 MB.
    app.add_middleware(BodyLimit)
    if security.auth is not None:
        require_authentication(app, *security.auth)
    return app


def _describe_validation_error(exc: RequestValidationError) -> str:
    """One readable line naming the first offending field, e.g. `config.tasks.max: ...`."""
    problems = []
    for error in exc.errors():
        location = ".".join(str(part) for part in error.get("loc", ()) if part != "body")
        message = str(error.get("msg", "invalid value"))
        problems.append(f"{location}: {message}" if location else message)
    return "Invalid request: " + "; ".join(problems)


def _about_the_body(exc: RequestValidationError) -> bool:
    return any(tuple(error.get("loc", ()))[:1] == ("body",) for error in exc.errors())


def _has_body(request: Request) -> bool:
    return request.headers.get("content-length", "0") != "0" or (
        "transfer-encoding" in request.headers
    )


def _is_json(content_type: str) -> bool:
    """`application/json` or `application/<x>+json`, parameters aside: the bodies FastAPI
    reads as JSON (without a Content-Type it reads none, and Connect takes none)."""
    media_type = content_type.split(";", 1)[0].strip().lower()
    return media_type == "application/json" or (
        media_type.startswith("application/") and media_type.endswith("+json")
    )

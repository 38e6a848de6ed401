"""`/admin/loggers/...`: Kafka Connect's runtime log-level control, on Python's logging.

Operators turn up one component's logging while a problem is happening, without a
restart, and with the tools and level names they use for Kafka Connect: log4j's names
are mapped onto Python's levels both ways. A change applies to a logger and every
logger under it (its namespace), on this worker (`scope=worker`) or, through the
herder, on every worker of the cluster (`scope=cluster`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from types import MappingProxyType
from typing import Annotated, Final, Protocol

from fastapi import APIRouter, Query, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from rest.errors import error_response
from rest.models import ErrorBody, LoggerName
from rest.worker_seam import InvalidName, check_name

log = logging.getLogger(__name__)

ROOT_LOGGER: Final = "root"
WORKER_SCOPE: Final = "worker"
CLUSTER_SCOPE: Final = "cluster"
LOG4J_LEVELS: Final = MappingProxyType(
    {
        "TRACE": 5,
        "DEBUG": logging.DEBUG,
        "INFO": logging.INFO,
        "WARN": logging.WARNING,
        "ERROR": logging.ERROR,
        "FATAL": logging.CRITICAL,
        "OFF": logging.CRITICAL + 1,
    }
)
"""log4j's level names, least severe first, and the Python level each one sets."""
MAX_CREATED_LOGGERS: Final = 200
"""How many loggers that no code had asked for this API may create on one worker: Python
never frees a logger, so each new name a client sends would otherwise cost memory for
the worker's lifetime."""


class TooManyLoggers(ValueError):
    def __init__(self, namespace: str) -> None:
        super().__init__(
            f"Cannot create logger {namespace}: this worker already created "
            f"{MAX_CREATED_LOGGERS} loggers that no code uses; set the level of an existing "
            "logger or of a parent namespace instead"
        )


class UnknownLogLevel(ValueError):
    def __init__(self, level: str) -> None:
        super().__init__(f"Invalid log level '{level}'; use one of {', '.join(LOG4J_LEVELS)}")


def log4j_level(level: str) -> str:
    """The canonical (upper-case) log4j name; Connect accepts any case."""
    canonical = level.upper()
    if canonical not in LOG4J_LEVELS:
        raise UnknownLogLevel(level)
    return canonical


def log4j_name(python_level: int) -> str:
    """The least severe log4j level that lets through what `python_level` lets through,
    so levels set by Python code in between (say 25) still read as a log4j name."""
    return next((name for name, number in LOG4J_LEVELS.items() if number >= python_level), "OFF")


class LoggerLevel(BaseModel):
    level: str
    last_modified: int | None = Field(
        description="epoch ms of the last change through this API; null if never changed"
    )


class LoggerLevelRequest(BaseModel):
    level: str | None = Field(default=None, description=", ".join(LOG4J_LEVELS))


class ClusterLoggerSetter(Protocol):
    async def set_cluster_logger_level(self, namespace: str, level: str) -> None:
        """Have every worker, this one included, set `level` (a canonical log4j name) on
        `namespace` and the loggers under it."""


class LoggerLevels:
    """This worker's loggers as Connect shows them, and when this API last changed each.

    Python's logging keeps no such time, hence the bookkeeping here; names are the ones
    Connect reports, `root` for the root logger.
    """

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._last_modified: dict[str, int] = {}
        self._created: set[str] = set()

    def level(self, name: str) -> LoggerLevel | None:
        """The effective level of an existing logger; None if there is no such logger."""
        if _is_root(name):
            return self._describe(ROOT_LOGGER, logging.root)
        logger = _existing_loggers().get(name)
        return None if logger is None else self._describe(name, logger)

    def all_levels(self) -> dict[str, LoggerLevel]:
        """The root logger and every logger whose level was set explicitly, by name."""
        loggers = {ROOT_LOGGER: logging.root} | {
            name: logger
            for name, logger in _existing_loggers().items()
            if logger.level != logging.NOTSET
        }
        return {name: self._describe(name, loggers[name]) for name in sorted(loggers)}

    def set_level(self, namespace: str, level: str) -> list[str]:
        """Set `level` (a log4j name) on `namespace` and every existing logger under it,
        creating the namespace's own logger if need be.

        Returns the loggers whose effective level this changed, sorted, as Kafka Connect
        does; only those get a new last-modified time. Raises `InvalidName` or
        `TooManyLoggers` (both `ValueError`) for a name it will not create: the names
        also arrive from the config topic, written by any worker.
        """
        number = LOG4J_LEVELS[log4j_level(level)]
        self.check_creatable(namespace)
        if not _is_root(namespace) and namespace not in _existing_loggers():
            self._created.add(namespace)
        targets = _namespace(namespace)
        changed = sorted(name for name, logger in targets if logger.getEffectiveLevel() != number)
        log.info("Setting the level of %s and the loggers under it to %s", namespace, level)
        for _, logger in targets:
            logger.setLevel(number)
        now_ms = round(self._clock() * 1000)
        self._last_modified.update(dict.fromkeys(changed, now_ms))
        return changed

    def check_creatable(self, namespace: str) -> None:
        """Raise unless `set_level(namespace, ...)` would be accepted here."""
        check_name(namespace, "logger name")
        new = not _is_root(namespace) and namespace not in _existing_loggers()
        if new and len(self._created) >= MAX_CREATED_LOGGERS:
            raise TooManyLoggers(namespace)

    def _describe(self, name: str, logger: logging.Logger) -> LoggerLevel:
        return LoggerLevel(
            level=log4j_name(logger.getEffectiveLevel()),
            last_modified=self._last_modified.get(name),
        )


def _is_root(name: str) -> bool:
    return name.lower() == ROOT_LOGGER


def _existing_loggers() -> dict[str, logging.Logger]:
    """Loggers some code has asked for; placeholders only mark where children live."""
    return {
        name: logger
        for name, logger in list(logging.Logger.manager.loggerDict.items())
        if isinstance(logger, logging.Logger)
    }


def _namespace(namespace: str) -> list[tuple[str, logging.Logger]]:
    """`namespace`'s logger and the existing loggers under it, by name (all for root)."""
    if _is_root(namespace):
        return [(ROOT_LOGGER, logging.root), *_existing_loggers().items()]
    own = logging.getLogger(namespace)
    children = [
        (name, logger)
        for name, logger in _existing_loggers().items()
        if name.startswith(f"{namespace}.")
    ]
    return [(namespace, own), *children]


def loggers_router(levels: LoggerLevels, cluster: ClusterLoggerSetter) -> APIRouter:
    router = APIRouter(prefix="/admin/loggers")

    @router.get("", response_model=dict[str, LoggerLevel])
    async def list_loggers() -> dict[str, LoggerLevel]:
        return levels.all_levels()

    @router.get("/{name}", response_model=LoggerLevel, responses={404: {"model": ErrorBody}})
    async def get_logger(name: str) -> LoggerLevel | Response:
        level = levels.level(name)
        if level is None:
            return error_response(404, f"Logger {name} not found.")
        return level

    @router.put(
        "/{name}",
        response_model=list[str],
        responses={
            204: {"description": "scope=cluster: every worker will apply the level"},
            400: {"model": ErrorBody},
        },
    )
    async def set_level(
        name: LoggerName,
        body: LoggerLevelRequest,
        scope: Annotated[str, Query(description="worker or cluster")] = WORKER_SCOPE,
    ) -> Response:
        """200 with the loggers whose level changed on this worker, or 204 for
        scope=cluster. An unknown scope means worker, as in Kafka Connect."""
        if body.level is None:
            return error_response(400, "Desired 'level' parameter was not specified in request.")
        try:
            level = log4j_level(body.level)
            levels.check_creatable(name)
        except (UnknownLogLevel, InvalidName, TooManyLoggers) as exc:
            return error_response(400, str(exc))
        if scope.lower() == CLUSTER_SCOPE:
            await cluster.set_cluster_logger_level(name, level)
            return Response(status_code=204)
        if scope.lower() != WORKER_SCOPE:
            log.warning("Unknown logging scope %r; setting %s on this worker only", scope, name)
        return JSONResponse(levels.set_level(name, level))

    return router

"""`/connectors/...`: Kafka Connect's connector and task resources.

Reads are answered from this worker's replay of the config and status topics; writes go
through the herder, which refuses them unless this worker leads (the app then forwards
them to the leader).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Annotated, Any

from fastapi import APIRouter, Query, Response
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from herder.admin.cluster_admin import ClusterAdmin
from herder.errors import ConnectorNotFound
from herder.stores.config_records import RestartRequest, TargetState
from herder.stores.status_store import Status
from herder.views import ConnectorView
from protocol.messages import ConnectorTaskId
from rest.herder_api import AdminDep
from rest.models import (
    ConnectorConfig,
    ConnectorInfoBody,
    ConnectorName,
    ConnectorStateBody,
    ConnectorStatusBody,
    CreateConnectorRequest,
    ErrorBody,
    ExpandedConnectorBody,
    TaskIdBody,
    TaskInfoBody,
    TaskStateBody,
    config_string,
    connector_location,
    string_config,
)
from rest.worker_seam import HiddenSecretError, TaskState, kept_secrets, shown_config

ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorBody} for code in (400, 404, 409, 500)
}
MAX_TASK_DIGITS = 9
"""More digits than any `tasks.max` the admission check allows."""
INITIAL_OFFSETS_SET = "The offsets for this connector have been set to the initial offsets given"
"""KIP-995's `offsets_status` of a create that had `initial_offsets`."""
INITIAL_STATES = {
    "RUNNING": TargetState.STARTED,
    "PAUSED": TargetState.PAUSED,
    "STOPPED": TargetState.STOPPED,
}


SecretKeys = Callable[[Mapping[str, str]], frozenset[str]]
"""The PASSWORD keys of the plugin a config names."""
PluginVersion = Callable[[Mapping[str, str]], str | None]
"""The version of the plugin a config names, as this worker has it (KIP-891)."""


def connectors_router(secrets: SecretKeys, versions: PluginVersion) -> APIRouter:
    """Every config this answers with has its secrets hidden (worker.admission.shown_configs);
    every state carries the version of its connector's plugin."""
    router = APIRouter(prefix="/connectors", responses=ERRORS)

    def info(view: ConnectorView) -> ConnectorInfoBody:
        return ConnectorInfoBody(
            name=view.name,
            config=shown(view.config),
            tasks=[TaskIdBody(connector=t.connector, task=t.task) for t in view.tasks],
            type=view.type,
        )

    def shown(config: Mapping[str, str]) -> dict[str, str]:
        return shown_config(config, secrets(config))

    def with_kept_secrets(admin: ClusterAdmin, name: str, given: dict[str, str]) -> dict[str, str]:
        """`given`, its secrets shown as `[hidden]` given back their stored values."""
        try:
            stored = admin.connector(name).config
        except ConnectorNotFound:
            stored = {}
        try:
            return kept_secrets(given, stored, secrets({**stored, **given}))
        except HiddenSecretError as exc:
            raise HTTPException(400, str(exc)) from None

    @router.get("", response_model=list[str] | dict[str, ExpandedConnectorBody])
    async def list_connectors(
        admin: AdminDep,
        expand: Annotated[list[str] | None, Query(description="status and/or info")] = None,
    ) -> list[str] | dict[str, ExpandedConnectorBody]:
        """Names, or with `expand` each connector's status and/or info, as Connect does.
        An unknown expansion adds nothing to a connector's entry, as in Kafka Connect."""
        names = admin.connector_names()
        if not expand:
            return names
        expanded: dict[str, ExpandedConnectorBody] = {name: {} for name in names}
        for name, entry in expanded.items():
            if "status" in expand:
                entry["status"] = _status(admin, name, versions)
            if "info" in expand:
                entry["info"] = info(admin.connector(name))
        return expanded

    @router.post("", status_code=201, response_model=ConnectorInfoBody)
    async def create_connector(
        admin: AdminDep, body: CreateConnectorRequest, response: Response
    ) -> ConnectorInfoBody:
        """KIP-995: with `initial_offsets` the tasks start from them; a bad offset is a
        400 and nothing is created."""
        initial = INITIAL_STATES[body.initial_state or "RUNNING"]
        config = with_kept_secrets(admin, body.name, string_config(body.config))
        offsets = (
            None
            if body.initial_offsets is None
            else [(entry.partition, entry.offset) for entry in body.initial_offsets]
        )
        view = await admin.create_connector(body.name, config, initial, offsets)
        response.headers["Location"] = connector_location(body.name)
        created = info(view)
        if offsets is not None:
            created.offsets_status = INITIAL_OFFSETS_SET
        return created

    @router.get("/{name}", response_model=ConnectorInfoBody)
    async def get_connector(admin: AdminDep, name: ConnectorName) -> ConnectorInfoBody:
        return info(admin.connector(name))

    @router.delete("/{name}", status_code=204)
    async def delete_connector(admin: AdminDep, name: ConnectorName) -> Response:
        await admin.delete_connector(name)
        return Response(status_code=204)

    @router.get("/{name}/config", response_model=dict[str, str])
    async def get_connector_config(admin: AdminDep, name: ConnectorName) -> dict[str, str]:
        return shown(admin.connector(name).config)

    @router.put(
        "/{name}/config",
        response_model=ConnectorInfoBody,
        responses={201: {"model": ConnectorInfoBody}},
    )
    async def put_connector_config(
        admin: AdminDep, name: ConnectorName, config: ConnectorConfig
    ) -> JSONResponse:
        """201 with a Location when this created the connector, 200 when it updated it."""
        given = with_kept_secrets(admin, name, string_config(config))
        created, view = await admin.put_connector_config(name, given)
        body = info(view).model_dump()
        if created:
            return JSONResponse(
                body, status_code=201, headers={"Location": connector_location(name)}
            )
        return JSONResponse(body)

    @router.patch("/{name}/config", response_model=ConnectorInfoBody)
    async def patch_connector_config(
        admin: AdminDep, name: ConnectorName, patch: ConnectorConfig
    ) -> ConnectorInfoBody:
        """Merge into the config; a null value removes that key (KIP-477)."""
        values = {k: config_string(v) for k, v in patch.items() if v is not None}
        kept = with_kept_secrets(admin, name, values)
        changes = {k: kept.get(k) for k in patch}
        return info(await admin.patch_connector_config(name, changes))

    @router.get("/{name}/status", response_model=ConnectorStatusBody)
    async def get_connector_status(admin: AdminDep, name: ConnectorName) -> ConnectorStatusBody:
        return _status(admin, name, versions)

    @router.get("/{name}/tasks", response_model=list[TaskInfoBody])
    async def get_tasks(admin: AdminDep, name: ConnectorName) -> list[TaskInfoBody]:
        return [
            TaskInfoBody(id=TaskIdBody(connector=t.connector, task=t.task), config=shown(c))
            for t, c in admin.task_configs(name)
        ]

    @router.get("/{name}/tasks/{task}/status", response_model=TaskStateBody)
    async def get_task_status(admin: AdminDep, name: ConnectorName, task: str) -> TaskStateBody:
        task_id = _task_id(name, task)
        version = versions(admin.connector(name).config)
        return _task_state(task_id, admin.task_status(task_id), version)

    @router.post("/{name}/tasks/{task}/restart", status_code=204)
    async def restart_task(admin: AdminDep, name: ConnectorName, task: str) -> Response:
        await admin.restart(RestartRequest(name, task=_task_id(name, task).task))
        return Response(status_code=204)

    @router.post(
        "/{name}/restart", status_code=204, responses={202: {"model": ConnectorStatusBody}}
    )
    async def restart_connector(
        admin: AdminDep,
        name: ConnectorName,
        include_tasks: Annotated[bool, Query(alias="includeTasks")] = False,
        only_failed: Annotated[bool, Query(alias="onlyFailed")] = False,
    ) -> Response:
        """204 for a plain connector restart; otherwise 202 with what will restart shown
        RESTARTING (KIP-745)."""
        request = RestartRequest(name, include_tasks=include_tasks, only_failed=only_failed)
        await admin.restart(request)
        if not include_tasks and not only_failed:
            return Response(status_code=204)
        return JSONResponse(_status(admin, name, versions, request).model_dump(), status_code=202)

    @router.put("/{name}/pause", status_code=202)
    async def pause_connector(admin: AdminDep, name: ConnectorName) -> Response:
        await admin.set_target_state(name, TargetState.PAUSED)
        return Response(status_code=202)

    @router.put("/{name}/resume", status_code=202)
    async def resume_connector(admin: AdminDep, name: ConnectorName) -> Response:
        await admin.set_target_state(name, TargetState.STARTED)
        return Response(status_code=202)

    @router.put("/{name}/stop", status_code=204)
    async def stop_connector(admin: AdminDep, name: ConnectorName) -> Response:
        """KIP-875: a STOPPED connector keeps its config but has no tasks."""
        await admin.set_target_state(name, TargetState.STOPPED)
        return Response(status_code=204)

    return router


def _task_id(name: str, task: str) -> ConnectorTaskId:
    """A task path segment that is not a task number names no task: 404, as in Kafka
    Connect, whose route matches only numbers (not a 400 for a malformed parameter)."""
    if not (task.isascii() and task.isdigit() and len(task) <= MAX_TASK_DIGITS):
        raise HTTPException(404, f"Task {name}-{task} not found")
    return ConnectorTaskId(name, int(task))


def _status(
    admin: ClusterAdmin,
    name: str,
    versions: PluginVersion,
    restarting: RestartRequest | None = None,
) -> ConnectorStatusBody:
    """The connector's status; with `restarting`, what that request restarts is shown
    RESTARTING, as Connect's 202 answer does. Tasks the connector no longer has are
    shown while they still run (`stopping_tasks`): a STOPPED connector lists none only
    once they have stopped, when its offsets can be altered."""
    view = admin.connector(name)
    version = versions(view.config)
    connector = admin.connector_status(name)
    state = connector.state if connector else TaskState.UNASSIGNED
    if restarting is not None and restarting.covers_connector(state is TaskState.FAILED):
        state = TaskState.RESTARTING
    tasks = []
    for task in view.tasks:
        body = _task_state(task, admin.task_status(task), version)
        if restarting is not None and restarting.covers_task(task, body.state == "FAILED"):
            body.state = TaskState.RESTARTING
        tasks.append(body)
    tasks += [_task_state(t, s, version) for t, s in admin.stopping_tasks(name).items()]
    return ConnectorStatusBody(
        name=name,
        connector=ConnectorStateBody(
            state=state,
            worker_id=connector.worker_id if connector else None,
            trace=connector.trace if connector else None,
            version=version,
        ),
        tasks=tasks,
        type=view.type,
    )


def _task_state(task: ConnectorTaskId, status: Status | None, version: str | None) -> TaskStateBody:
    if status is None:
        return TaskStateBody(
            id=task.task, state=TaskState.UNASSIGNED, worker_id=None, version=version
        )
    return TaskStateBody(
        id=task.task,
        state=status.state,
        worker_id=status.worker_id,
        trace=status.trace,
        started_at=status.started_at,
        version=version,
    )

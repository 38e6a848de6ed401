"""`/connectors/{c}/offsets` (KIP-875): show, alter and reset a connector's progress.

For a Spark task the progress is its checkpoint. A source's offsets are one partition
per task and source, `{"task": n, "source": i}`, whose offset is the source's own JSON
(for the generator `{"offset": rows, "timestamp": ms}`); a sink's are Connect's, one
partition per Kafka topic partition, `{"kafka_topic", "kafka_partition"}` with
`{"kafka_offset"}`, whichever task's checkpoint holds it.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel

from herder.errors import InvalidOffsets
from rest.herder_api import AdminDep
from rest.models import ConnectorName, ConnectorOffsetBody, ErrorBody
from rest.worker_seam import (
    KAFKA_PARTITION,
    KAFKA_TOPIC,
    OffsetsError,
    check_offset,
    sink_alterations,
    sink_entries,
    task_partition,
)

ALTERED = "The offsets for this connector have been altered successfully"
RESET = "The offsets for this connector have been reset successfully"


class ConnectorOffsetsBody(BaseModel):
    offsets: list[ConnectorOffsetBody]


class MessageBody(BaseModel):
    message: str


def offsets_router() -> APIRouter:
    router = APIRouter(prefix="/connectors")
    refusals: dict[int | str, dict[str, Any]] = {
        400: {"model": ErrorBody},
        404: {"model": ErrorBody},
        409: {"model": ErrorBody},
    }

    @router.get(
        "/{name}/offsets",
        response_model=ConnectorOffsetsBody,
        responses={404: {"model": ErrorBody}},
    )
    async def get_offsets(admin: AdminDep, name: ConnectorName) -> ConnectorOffsetsBody:
        committed = await admin.connector_offsets(name)
        if admin.connector(name).type == "sink":
            return ConnectorOffsetsBody(
                offsets=[
                    ConnectorOffsetBody(partition=partition, offset=offset)
                    for partition, offset in sink_entries(committed)
                ]
            )
        return ConnectorOffsetsBody(
            offsets=[
                ConnectorOffsetBody(partition={"task": o.task, "source": o.source}, offset=o.offset)
                for o in committed
            ]
        )

    @router.patch("/{name}/offsets", response_model=MessageBody, responses=refusals)
    async def alter_offsets(
        admin: AdminDep, name: ConnectorName, body: ConnectorOffsetsBody
    ) -> MessageBody:
        """Only while the connector is STOPPED; the tasks resume after these offsets."""
        if not body.offsets:
            raise InvalidOffsets("Partitions to modify cannot be empty")
        if admin.connector(name).type == "sink" and not _by_task_and_source(body):
            entries = [(entry.partition, entry.offset) for entry in body.offsets]
            committed = await admin.connector_offsets(name)
            try:
                by_task = sink_alterations(entries, committed)
            except OffsetsError as exc:
                raise InvalidOffsets(str(exc)) from exc
        else:
            by_task = _by_task(body)
        await admin.alter_connector_offsets(name, by_task)
        return MessageBody(message=ALTERED)

    @router.delete("/{name}/offsets", response_model=MessageBody, responses=refusals)
    async def reset_offsets(admin: AdminDep, name: ConnectorName) -> MessageBody:
        """Only while STOPPED: the tasks' checkpoints are removed, so they start from their
        sources' initial offsets at batch 0."""
        await admin.reset_connector_offsets(name)
        return MessageBody(message=RESET)

    return router


def _by_task_and_source(body: ConnectorOffsetsBody) -> bool:
    """Whether every entry names a task (and source), the shape a sink's offsets took
    before they took Connect's; kept so a caller written for it goes on working."""
    return all(
        isinstance(entry.partition, dict)
        and "task" in entry.partition
        and not {KAFKA_TOPIC, KAFKA_PARTITION} & entry.partition.keys()
        for entry in body.offsets
    )


def _by_task(body: ConnectorOffsetsBody) -> dict[int, dict[int, Any]]:
    by_task: dict[int, dict[int, Any]] = {}
    for index, entry in enumerate(body.offsets):
        try:
            task, source = task_partition(entry.partition, f"offsets[{index}].partition")
            if entry.offset is not None:
                check_offset(entry.offset, f"offsets[{index}].offset")
        except OffsetsError as exc:
            raise InvalidOffsets(str(exc)) from exc
        by_task.setdefault(task, {})[source] = entry.offset
    return by_task

"""`GET /workers/progress` (extension): every task's newest Spark progress and error
totals, whichever worker of the group runs it; `/ui` shows rows/s and errors from it.

Only the worker that runs a task knows its progress (Spark reports it to that driver,
which is why each `/metrics` covers its own tasks), and it changes every batch, too often
for the status topic. So the worker asked gathers the others' answers over their REST
APIs, as it forwards a write to the leader: with the caller's credentials and the
forwarded mark, which makes a peer answer with its own tasks only (one hop at most). A
worker that does not answer in time is named with why, so a page can say why its tasks
show no rate instead of showing nothing.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Iterable, Mapping
from typing import Final

import httpx
from fastapi import APIRouter, Request
from pydantic import BaseModel, Field, ValidationError

from protocol.messages import ConnectorTaskId
from rest.forwarding import FORWARDED_HEADER
from rest.herder_api import HerderDep
from rest.metrics import RuntimeMetrics
from rest.worker_seam import BatchErrors, TaskProgress

PEER_TIMEOUT: Final = httpx.Timeout(2.0)
"""Shorter than the page's refresh (2 s would be one lost refresh, not a hung page)."""


class TaskProgressBody(BaseModel):
    connector: str
    task: int
    worker_id: str = Field(description="The worker that runs the task and reported this.")
    batch_id: int = Field(description="The newest batch the task's checkpoint has committed.")
    input_rows_per_second: float
    processed_rows_per_second: float
    errors: BatchErrors | None = Field(
        default=None,
        description="The task's error totals over the batches its checkpoint committed, "
        "as /metrics gives them (kafka_connect_task_error_*); null while not counted yet, "
        "or from a worker of a version that does not count them.",
    )


class ProgressBody(BaseModel):
    tasks: list[TaskProgressBody]
    unanswered: dict[str, str] = Field(
        default_factory=dict,
        description="Workers whose progress is missing, by worker id, with why.",
    )


def own_progress(
    worker_id: str,
    progress: Mapping[ConnectorTaskId, TaskProgress],
    errors: Mapping[ConnectorTaskId, BatchErrors],
) -> list[TaskProgressBody]:
    return [
        TaskProgressBody(
            connector=task.connector,
            task=task.task,
            worker_id=worker_id,
            batch_id=seen.batch_id,
            input_rows_per_second=seen.input_rows_per_second,
            processed_rows_per_second=seen.processed_rows_per_second,
            errors=errors.get(task),
        )
        for task, seen in sorted(progress.items())
    ]


def gathered(
    own: list[TaskProgressBody], answers: Mapping[str, ProgressBody | str]
) -> ProgressBody:
    """This worker's tasks and each peer's (a peer's answer or why there is none); a peer
    speaks for its own tasks only, whatever else its answer holds."""
    tasks = list(own)
    unanswered: dict[str, str] = {}
    for worker, answer in sorted(answers.items()):
        if isinstance(answer, str):
            unanswered[worker] = answer
        else:
            tasks += [task for task in answer.tasks if task.worker_id == worker]
    return ProgressBody(tasks=tasks, unanswered=unanswered)


async def _ask(
    client: httpx.AsyncClient, url: str, headers: Mapping[str, str]
) -> ProgressBody | str:
    try:
        answer = await client.get(f"{url}/workers/progress", headers=dict(headers))
    except httpx.HTTPError as exc:
        return f"no answer: {type(exc).__name__} {exc}".rstrip()
    if answer.status_code != 200:
        return f"answered HTTP {answer.status_code}"
    try:
        return ProgressBody.model_validate_json(answer.content)
    except ValidationError:
        return "answered something that is not a progress body"


async def _ask_peers(
    peers: Iterable[str], scheme: str, headers: Mapping[str, str], verify: ssl.SSLContext | bool
) -> dict[str, ProgressBody | str]:
    workers = sorted(peers)
    if not workers:
        return {}
    async with httpx.AsyncClient(timeout=PEER_TIMEOUT, verify=verify) as client:
        answers = await asyncio.gather(
            *(_ask(client, f"{scheme}://{worker}", headers) for worker in workers)
        )
    return dict(zip(workers, answers, strict=True))


def progress_router(runtime: RuntimeMetrics, peer_verify: ssl.SSLContext | bool) -> APIRouter:
    router = APIRouter()

    @router.get("/workers/progress", response_model=ProgressBody)
    async def progress(request: Request, herder: HerderDep) -> ProgressBody:
        """Extension: the newest progress of every task that reports one, by its worker;
        a peer asked by another worker (forwarded) answers with its own tasks only."""
        own = own_progress(herder.worker_id, runtime.progress(), runtime.errors())
        if FORWARDED_HEADER in request.headers:
            return ProgressBody(tasks=own)
        headers = {FORWARDED_HEADER: "1"}
        if "authorization" in request.headers:
            headers["authorization"] = request.headers["authorization"]
        peers = herder.cluster_view().workers.keys() - {herder.worker_id}
        answers = await _ask_peers(peers, request.url.scheme, headers, peer_verify)
        return gathered(own, answers)

    return router

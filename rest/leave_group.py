"""`POST /admin/leave-group`: the scale-down path (a worker leaving for good).

A bounced worker comes back and should get its own work back; a worker removed by a
scale-down never does, and its work would wait `scheduled.rebalance.max.delay.ms` for
nothing. Kafka Connect cannot tell the two apart; here the operator (or a scale-down
script) says so before removing the pod.
"""

from __future__ import annotations

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from rest.herder_api import HerderDep
from rest.models import ErrorBody


class LeaveGroupBody(BaseModel):
    worker_id: str
    handed_over: bool
    running_tasks: int
    message: str


def leave_group_router() -> APIRouter:
    router = APIRouter()

    @router.post(
        "/admin/leave-group",
        response_model=LeaveGroupBody,
        responses={
            202: {"model": LeaveGroupBody},
            409: {"model": ErrorBody, "description": "Nobody to hand the work to"},
        },
    )
    async def leave_group(
        herder: HerderDep,
        timeout_ms: int = Query(default=60_000, ge=0, le=600_000),
    ) -> JSONResponse:
        """200 once this worker runs nothing and the statuses show all it ran on other
        workers; 202 if its work is still being handed over;
        409 at once if it cannot be: a group of one, or an eager group."""
        handed_over = await herder.leave_for_good(timeout_ms / 1000)
        body = LeaveGroupBody(
            worker_id=herder.worker_id,
            handed_over=handed_over,
            running_tasks=len(herder.owned.tasks),
            message=(
                "this worker runs nothing now and can be stopped"
                if handed_over
                else "leaving announced; its work is still being handed over"
            ),
        )
        return JSONResponse(body.model_dump(), status_code=200 if handed_over else 202)

    return router

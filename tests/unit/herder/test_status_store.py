"""Which of two statuses of one task a reader keeps: `Status.supersedes`."""

from __future__ import annotations

import pytest

from herder.stores.status_store import Status
from worker.plugins.task_state import TaskState

OLD_OWNER, NEW_OWNER = "127.0.0.1:8083", "127.0.0.1:8084"


@pytest.mark.parametrize(
    ("newer", "older", "kept"),
    [
        # A task handed over in the round that revokes it: one generation, two owners.
        (
            Status(TaskState.UNASSIGNED, OLD_OWNER, 7),
            Status(TaskState.RUNNING, NEW_OWNER, 7),
            False,
        ),
        (Status(TaskState.RUNNING, NEW_OWNER, 7), Status(TaskState.UNASSIGNED, OLD_OWNER, 7), True),
        # Otherwise the newer or equal generation wins, and a worker's own word always.
        (Status(TaskState.UNASSIGNED, OLD_OWNER, 8), Status(TaskState.RUNNING, NEW_OWNER, 7), True),
        (Status(TaskState.FAILED, OLD_OWNER, 7), Status(TaskState.RUNNING, NEW_OWNER, 7), True),
        (Status(TaskState.RUNNING, OLD_OWNER, 6), Status(TaskState.RUNNING, NEW_OWNER, 7), False),
        (Status(TaskState.UNASSIGNED, OLD_OWNER, 6), Status(TaskState.RUNNING, OLD_OWNER, 7), True),
    ],
)
def test_a_late_stop_does_not_hide_the_new_owner(newer: Status, older: Status, kept: bool) -> None:
    assert newer.supersedes(older) is kept

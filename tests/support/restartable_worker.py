"""What a test of a sink's exactly-once needs around a crash: one worker for a whole
module that a test may SIGKILL and start again under the same identity and checkpoints,
and a checkpoint left as a crash right after the sink's commit leaves it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from tests.support.processes import WorkerProcess, free_port
from tests.support.rest_client import Api
from worker.runtime.checkpoint_offsets import newest_committed_batch

TIMEOUT_S = 180


class RestartableWorker:
    """One worker for the whole module (each start costs a Spark start)."""

    def __init__(
        self,
        name: str,
        bootstrap_servers: str,
        root: Path,
        extra: Sequence[str] = (),
        environment: Mapping[str, str] | None = None,
    ) -> None:
        self.process = WorkerProcess(
            name,
            bootstrap_servers,
            root / "checkpoints",
            root,
            [
                f"group.id={name}-{free_port()}",
                "scheduled.rebalance.max.delay.ms=3000",
                *extra,
            ],
            environment=environment or {},
        )

    def start(self) -> Api:
        self.process.start().wait_ready(120)
        return Api(self.process.url, timeout_s=TIMEOUT_S)

    def restart(self) -> Api:
        self.process.kill()
        return self.start()


def forget_newest_commit(checkpoint: Path) -> int:
    """Leave the checkpoint as a crash between the sink's commit and Spark's commit log
    leaves it: the newest batch, which the output holds, runs again on the next start."""
    batch = newest_committed_batch(checkpoint)
    assert batch >= 0
    for name in (str(batch), f".{batch}.crc"):
        (checkpoint / "commits" / name).unlink(missing_ok=True)
    return batch

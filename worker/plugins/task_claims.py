"""Owner epochs in a task's checkpoint directory: the newest claim owns the task.

Group membership decides who should run a task, but a worker can lose its membership
without knowing it (a long pause, SIGSTOP, a partition) and keep running its queries
until it notices. So every start of a task first *claims* the task in its checkpoint
directory, which all workers share: it creates the next numbered file in `claims/` with
an exclusive create, so two workers can never hold the same epoch, and the newest file
names the owner. A query whose claim is no longer the newest is fenced: the runtime stops
it and refuses to start it.

A claim is also *released* when its run has stopped (`Claim.release`: a marker beside the
claim file). That is how a task moves in one round: the leader hands it to its next owner
in the round that revokes it, and the next owner starts it once the newest claim is
released (`is_released`), with no second round between them. The marker never replaces
the claim: a zombie of the releasing worker is still fenced by the next claim.

Epochs count claims, not group generations: a group's generation starts again at 1 when
the whole group is recreated (a broker without persistence, a group that expired), while
a checkpoint outlives it. Each claim also carries a random token, so a checkpoint that was
reset (removed and claimed again from 1) fences a claim made before the reset too.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

CLAIMS_DIR: Final = "claims"
KEPT_CLAIMS: Final = 8
"""Older claim files are removed; only the newest number matters."""
RELEASED_SUFFIX: Final = ".released"
STARTED_SUFFIX: Final = ".started"


@dataclass(frozen=True)
class Claim:
    """One start's ownership of a task: its epoch, and what it wrote there."""

    directory: Path
    epoch: int
    token: str
    worker_id: str
    generation: int

    def fenced_by(self) -> str | None:
        """None while this claim is the newest; otherwise who holds the task now."""
        newest = _newest_epoch(self.directory)
        if newest is None:
            return "nobody: the checkpoint was removed"
        holder = _read(self.directory / _name(newest))
        if newest == self.epoch and holder.get("token", self.token) == self.token:
            return None
        return (
            f"worker {holder.get('worker_id', '?')} (epoch {newest}, "
            f"generation {holder.get('generation', '?')})"
        )

    def release(self) -> None:
        """Say that this claim's run has stopped for good: written after its query ended,
        so that a worker waiting in `is_released` may claim the task at once."""
        fd = os.open(_released_marker(self.directory, self.epoch), os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def mark_started(self) -> None:
        """Say that this claim's start may now run a query on the checkpoint (written by a
        start that first had to look at other tasks' checkpoints: `runs_stopped`)."""
        _started_marker(self.directory, self.epoch).touch()

    def encode(self) -> str:
        """For code that commits outside the driver (a sink's executor-side writer), which
        must check the claim itself before each commit."""
        return json.dumps(
            {
                "directory": str(self.directory),
                "epoch": self.epoch,
                "token": self.token,
                "worker_id": self.worker_id,
                "generation": self.generation,
            }
        )

    @classmethod
    def decode(cls, text: str) -> Claim:
        fields = json.loads(text)
        return cls(
            Path(fields["directory"]),
            int(fields["epoch"]),
            str(fields["token"]),
            str(fields["worker_id"]),
            int(fields["generation"]),
        )


def claim(
    checkpoint_dir: Path,
    worker_id: str,
    generation: int,
    new_token: Callable[[], str] = lambda: secrets.token_hex(16),
) -> Claim:
    """Take the next epoch of the task whose checkpoint is `checkpoint_dir`."""
    directory = checkpoint_dir / CLAIMS_DIR
    directory.mkdir(parents=True, exist_ok=True)
    token = new_token()
    body = json.dumps({"worker_id": worker_id, "generation": generation, "token": token})
    while True:
        epoch = (_newest_epoch(directory) or 0) + 1
        try:
            fd = os.open(directory / _name(epoch), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            continue
        if _pruned_already(directory, epoch):
            os.close(fd)
            (directory / _name(epoch)).unlink(missing_ok=True)
            continue
        with os.fdopen(fd, "w") as file:
            file.write(body)
            file.flush()
            os.fsync(file.fileno())
        _prune(directory, epoch)
        return Claim(directory, epoch, token, worker_id, generation)


def is_released(checkpoint_dir: Path) -> bool:
    """Whether nobody holds the task whose checkpoint is `checkpoint_dir`: it was never
    claimed, or its newest claim was released."""
    directory = checkpoint_dir / CLAIMS_DIR
    newest = _newest_epoch(directory)
    return newest is None or _released_marker(directory, newest).exists()


def runs_stopped(checkpoint_dir: Path) -> bool:
    """Whether the newest claim that began a run on `checkpoint_dir`'s Spark state
    (`Claim.mark_started`) was released: a task taking partitions over from another
    task's checkpoint waits for that, and not for claims whose starts have not got that
    far (they wait for the take-over, and could not be waited for)."""
    directory = checkpoint_dir / CLAIMS_DIR
    started = [epoch for epoch in _epochs(directory) if _started_marker(directory, epoch).exists()]
    newest = max(started, default=None)
    return newest is None or _released_marker(directory, newest).exists()


def fence_stopping_run(checkpoint_dir: Path, worker_id: str, generation: int) -> None:
    """Fence the run `runs_stopped` waited for in vain (its worker died, or its stop is
    queued behind the wait): a claim over it, released at once, so that its next batch
    stops before it commits and the task's next owner need not wait. A newer claim
    fences it already, and one of a start still on its way must not be overtaken."""
    directory = checkpoint_dir / CLAIMS_DIR
    newest = _newest_epoch(directory)
    if (
        newest is not None
        and _started_marker(directory, newest).exists()
        and not _released_marker(directory, newest).exists()
    ):
        claim(checkpoint_dir, worker_id, generation).release()


def _started_marker(directory: Path, epoch: int) -> Path:
    return directory / f"{_name(epoch)}{STARTED_SUFFIX}"


def _name(epoch: int) -> str:
    return f"{epoch:012d}"


def _released_marker(directory: Path, epoch: int) -> Path:
    return directory / f"{_name(epoch)}{RELEASED_SUFFIX}"


def _epochs(directory: Path) -> list[int]:
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return []
    return [int(name) for name in names if name.isdigit()]


def _newest_epoch(directory: Path) -> int | None:
    return max(_epochs(directory), default=None)


def _read(path: Path) -> dict[str, object]:
    """A claim still being written reads as empty."""
    try:
        body = json.loads(path.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return {}
    return body if isinstance(body, dict) else {}


def _pruned_already(directory: Path, epoch: int) -> bool:
    """Whether `epoch` was taken and pruned while this claim was being made: a claimer
    that read the newest epoch, then waited while more than `KEPT_CLAIMS` others claimed,
    could create that number's file again, and two claims would share an epoch."""
    return epoch <= (_newest_epoch(directory) or epoch) - KEPT_CLAIMS


def _prune(directory: Path, newest: int) -> None:
    for epoch in _epochs(directory):
        if epoch <= newest - KEPT_CLAIMS:
            (directory / _name(epoch)).unlink(missing_ok=True)
            _released_marker(directory, epoch).unlink(missing_ok=True)
            _started_marker(directory, epoch).unlink(missing_ok=True)

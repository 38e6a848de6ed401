"""A worker's temp space: one directory of its own under `<data.dir>/tmp`, for Spark's
local directories (`spark.local.dir`: `blockmgr-*`, `spark-*`), the JVM's temp files
(`java.io.tmpdir`) and Python's (`TMPDIR`), so nothing a worker writes lands in /tmp.

Spark removes its directories when it stops cleanly; a killed worker leaves them (64 MB
each, tens of GB on a machine whose tests kill workers). So each directory has a lock
file beside it, `<name>.lock`, held for as long as the worker or its Spark JVM lives: the
kernel lets go of it when the last of them exits, however it exits. A worker starting on
the same data directory removes every directory whose lock it can take, a killed
predecessor's; never one whose lock is held, another live worker's.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Final

TEMP_DIR: Final = "tmp"
"""The folder of `data.dir` that holds every worker's temp space."""
LOCK_SUFFIX: Final = ".lock"


@dataclass(frozen=True)
class TempSpace:
    """This worker's directory and the open lock file that marks it as in use."""

    path: Path
    lock_fd: int

    def release(self) -> None:
        """Remove the directory, then let go of it (a clean stop leaves nothing behind)."""
        shutil.rmtree(self.path, ignore_errors=True)
        with contextlib.suppress(FileNotFoundError):
            self.path.with_name(self.path.name + LOCK_SUFFIX).unlink()
        os.close(self.lock_fd)


def claim_temp_space(data_dir: Path) -> TempSpace:
    """A new directory under `data_dir/tmp`, locked before it exists: a worker that
    starts at the same moment and looks for stale directories cannot take it for one."""
    root = data_dir / TEMP_DIR
    root.mkdir(parents=True, exist_ok=True)
    while True:
        path = root / f"{os.getpid()}-{secrets.token_hex(4)}"
        lock = path.with_name(path.name + LOCK_SUFFIX)
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
        if _still_linked(fd, lock):
            path.mkdir()
            return TempSpace(path, fd)
        os.close(fd)


def remove_stale_temp_spaces(data_dir: Path) -> list[Path]:
    """Remove the temp directories under `data_dir/tmp` that no live process holds
    (those of killed workers, and any without a lock file); returns what went."""
    root = data_dir / TEMP_DIR
    if not root.is_dir():
        return []
    removed = []
    for entry in sorted(root.iterdir()):
        if entry.name.endswith(LOCK_SUFFIX):
            if _remove_if_unheld(entry):
                removed.append(entry.with_name(entry.name.removesuffix(LOCK_SUFFIX)))
        elif entry.is_dir() and not entry.with_name(entry.name + LOCK_SUFFIX).exists():
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry)
    return removed


def _remove_if_unheld(lock: Path) -> bool:
    try:
        fd = os.open(lock, os.O_RDWR)
    except FileNotFoundError:
        return False
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        if not _still_linked(fd, lock):
            return False
        shutil.rmtree(lock.with_name(lock.name.removesuffix(LOCK_SUFFIX)), ignore_errors=True)
        lock.unlink()
        return True
    finally:
        os.close(fd)


def _still_linked(fd: int, lock: Path) -> bool:
    """Whether `lock` still names the file `fd` has open: another worker that took the
    lock first may have removed it (then this one locked a file nobody can see)."""
    try:
        named = lock.stat()
    except FileNotFoundError:
        return False
    opened = os.fstat(fd)
    return (named.st_dev, named.st_ino) == (opened.st_dev, opened.st_ino)

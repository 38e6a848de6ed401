"""Which temp directories a starting worker removes: those nobody holds, never one a live
process holds (a lock on the same file opened again stands for that other process)."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import pytest

from worker.runtime.spark_session import SparkSessionProvider, in_temp_space
from worker.runtime.temp_space import (
    LOCK_SUFFIX,
    TEMP_DIR,
    claim_temp_space,
    remove_stale_temp_spaces,
)


def test_a_claimed_space_is_kept_while_held_and_removed_once_let_go(tmp_path: Path) -> None:
    space = claim_temp_space(tmp_path)
    (space.path / "blockmgr-1").mkdir()
    assert space.path.parent == tmp_path / TEMP_DIR
    assert space.path.name.startswith(f"{os.getpid()}-")

    assert remove_stale_temp_spaces(tmp_path) == []
    assert (space.path / "blockmgr-1").is_dir()

    os.close(space.lock_fd)
    assert remove_stale_temp_spaces(tmp_path) == [space.path]
    assert list((tmp_path / TEMP_DIR).iterdir()) == []


def test_a_released_space_leaves_nothing(tmp_path: Path) -> None:
    space = claim_temp_space(tmp_path)
    (space.path / "spark-1" / "userFiles").mkdir(parents=True)
    space.release()
    assert list((tmp_path / TEMP_DIR).iterdir()) == []


def test_a_lock_held_by_another_open_file_is_a_live_worker(tmp_path: Path) -> None:
    space = claim_temp_space(tmp_path)
    lock = space.path.with_name(space.path.name + LOCK_SUFFIX)
    other = os.open(lock, os.O_RDWR)
    os.close(space.lock_fd)
    fcntl.flock(other, fcntl.LOCK_EX)
    try:
        assert remove_stale_temp_spaces(tmp_path) == []
        assert space.path.is_dir()
    finally:
        os.close(other)


def test_a_directory_without_its_lock_file_is_stale(tmp_path: Path) -> None:
    orphan = tmp_path / TEMP_DIR / "123-abcd"
    (orphan / "blockmgr-1").mkdir(parents=True)
    assert remove_stale_temp_spaces(tmp_path) == [orphan]
    assert not orphan.exists()


def test_no_data_directory_yet_is_nothing_to_remove(tmp_path: Path) -> None:
    assert remove_stale_temp_spaces(tmp_path / "absent") == []


def test_spark_and_the_jvm_write_their_temp_in_the_space_unless_told_otherwise() -> None:
    space = Path("/data/tmp/1-ab")
    options = "-XX:+UseSerialGC -Dlog4j2.configurationFile=x"
    conf = in_temp_space({"spark.driver.extraJavaOptions": options}, space)
    assert conf == {"spark.driver.extraJavaOptions": f"{options} -Djava.io.tmpdir={space}"}
    assert in_temp_space({}, space) == {
        "spark.driver.extraJavaOptions": f"-Djava.io.tmpdir={space}"
    }

    given = {"spark.driver.extraJavaOptions": "-Djava.io.tmpdir=/t"}
    assert in_temp_space(given, space) == given


def test_a_data_dir_that_cannot_hold_the_space_leaves_spark_where_it_was(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A pod whose working directory is not writable (the image's user 1000 in a
    root-owned /opt/sparkherd) still starts Spark, and says why its temp is elsewhere."""
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    provider = SparkSessionProvider({}, "test", data_dir=blocked / "data")
    conf = {"spark.master": "local[1]"}
    assert provider._in_temp_space(conf) == conf
    assert "cannot hold Spark's temp space" in caplog.text

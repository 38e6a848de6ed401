"""The settings the worker's SparkSession starts with: pure, no Spark started."""

from __future__ import annotations

from worker.runtime.spark_session import STREAMING_CHECKPOINT_FILE_MANAGER, SparkSessionProvider

FILE_SYSTEM_MANAGER = (
    "org.apache.spark.sql.execution.streaming.FileSystemBasedCheckpointFileManager"
)


def test_checkpoint_logs_are_written_through_the_file_system_api() -> None:
    """Through FileContext, every rename of a checkpoint log file ran `readlink` processes
    (issue 34): a light batch's costliest part."""
    conf = SparkSessionProvider({}, "test").conf
    assert conf[STREAMING_CHECKPOINT_FILE_MANAGER] == FILE_SYSTEM_MANAGER


def test_a_checkpoint_file_manager_given_wins() -> None:
    given = "com.example.MyCheckpointFileManager"
    conf = SparkSessionProvider({STREAMING_CHECKPOINT_FILE_MANAGER: given}, "test").conf
    assert conf[STREAMING_CHECKPOINT_FILE_MANAGER] == given

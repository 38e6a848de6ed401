"""What a task's checkpoint was made for (`worker.plugins.checkpoint_fingerprint`), and admission
refusing a config its checkpoints no longer fit (issue 29, item 2): a generator re-created
under its old name with another `output.path` looped in FAILED with Spark's
BATCH_METADATA_NOT_FOUND."""

from __future__ import annotations

from pathlib import Path

import pytest

from herder.tasks.auto_restart import needs_new_checkpoint
from tests.support.plugins import plugins_for
from worker.admission.connector_configs import RegistryPlugins
from worker.admission.registry import PluginRegistry
from worker.connectors import BUILTIN_CONNECTORS
from worker.plugins.api import ConnectorConfigError
from worker.plugins.checkpoint_fingerprint import (
    FINGERPRINT_FILE,
    CheckpointNotFit,
    changed_keys,
    fingerprint,
    fit,
    recorded,
)
from worker.plugins.checkpoint_layout import checkpoint_dir_for


def generator(output: Path | str, **extra: str) -> dict[str, str]:
    return {
        "name": "gen",
        "connector.class": "generator",
        "tasks.max": "2",
        "output.path": str(output),
        **extra,
    }


def commit_a_batch(checkpoint: Path) -> None:
    """What Spark leaves once batch 0 has committed."""
    (checkpoint / "commits").mkdir(parents=True, exist_ok=True)
    (checkpoint / "commits" / "0").write_text('v1\n{"nextBatchWatermarkMs":0}')


@pytest.fixture
def plugins(tmp_path: Path) -> RegistryPlugins:
    return plugins_for(PluginRegistry(BUILTIN_CONNECTORS), tmp_path / "checkpoints")


def test_only_the_recorded_keys_that_differ_are_changed() -> None:
    old = fingerprint({"output.path": "/a", "table": "t"})
    assert changed_keys(old, fingerprint({"output.path": "/a", "table": "t"})) == []
    assert changed_keys(old, fingerprint({"output.path": "/b", "table": "t"})) == ["output.path"]
    assert changed_keys(old, fingerprint({"output.path": "/a"})) == ["table"], "a removed value"
    assert (
        changed_keys(
            fingerprint({"output.path": "/a"}), fingerprint({"output.path": "/a", "x": "1"})
        )
        == []
    )


def test_a_fingerprint_holds_digests_not_values() -> None:
    made = fingerprint({"output.path": "s3a://bucket/secret-prefix"})
    assert "secret-prefix" not in str(made) and list(made) == ["output.path"]


def test_a_start_records_what_the_checkpoint_is_made_for_and_refuses_other_values(
    tmp_path: Path,
) -> None:
    checkpoint = tmp_path / "gen" / "task-0"
    fit("gen", 0, checkpoint, fingerprint({"output.path": "/a"}))
    assert (checkpoint / FINGERPRINT_FILE).is_file()
    assert recorded(checkpoint) is None, "no committed batch: nothing binds it yet"
    fit("gen", 0, checkpoint, fingerprint({"output.path": "/b"}))
    commit_a_batch(checkpoint)
    assert recorded(checkpoint) == fingerprint({"output.path": "/b"})
    fit("gen", 0, checkpoint, fingerprint({"output.path": "/b"}))
    with pytest.raises(CheckpointNotFit) as refused:
        fit("gen", 0, checkpoint, fingerprint({"output.path": "/a"}))
    message = str(refused.value)
    assert "output.path" in message and "DELETE /connectors/gen/offsets" in message
    assert needs_new_checkpoint(message), "the herder must not restart it"


def test_a_checkpoint_from_before_fingerprints_is_taken_to_fit(tmp_path: Path) -> None:
    checkpoint = tmp_path / "gen" / "task-0"
    commit_a_batch(checkpoint)
    fit("gen", 0, checkpoint, fingerprint({"output.path": "/a"}))
    assert recorded(checkpoint) == fingerprint({"output.path": "/a"})
    (checkpoint / FINGERPRINT_FILE).write_text("{cut sh")
    assert recorded(checkpoint) is None, "an unreadable record is recorded again"


def started(plugins: RegistryPlugins, root: Path, config: dict[str, str], task: int) -> None:
    """What a task's start leaves: the record, then a committed batch."""
    checkpoint = checkpoint_dir_for(root, config["name"], task)
    fit("gen", task, checkpoint, plugins.checkpoint_fingerprint(plugins.resolve(config)))
    commit_a_batch(checkpoint)


def test_admission_refuses_another_output_path_for_a_checkpoint_kept_by_name(
    plugins: RegistryPlugins, tmp_path: Path
) -> None:
    old = generator(tmp_path / "out")
    for task in (0, 1):
        started(plugins, tmp_path / "checkpoints", old, task)
    with pytest.raises(ConnectorConfigError) as refused:
        plugins.admit(generator(tmp_path / "elsewhere"), {})
    message = str(refused.value)
    assert "output.path: the checkpoints of tasks 0, 1 of connector gen were made for " in message
    assert "DELETE /connectors/gen/offsets" in message and "another name" in message
    assert '"initial_state": "STOPPED"' in message


def test_admission_takes_the_same_location_in_another_spelling_and_other_settings(
    plugins: RegistryPlugins, tmp_path: Path
) -> None:
    started(plugins, tmp_path / "checkpoints", generator(tmp_path / "out"), 0)
    plugins.admit(generator(f"{tmp_path}//out/", **{"rows.per.second": "50"}), {})


def test_a_stopped_connector_may_take_another_output_path_to_reset_its_offsets(
    plugins: RegistryPlugins, tmp_path: Path
) -> None:
    started(plugins, tmp_path / "checkpoints", generator(tmp_path / "out"), 0)
    plugins.admit(generator(tmp_path / "elsewhere"), {}, will_run=False)


def test_spark_finding_no_batch_in_the_sink_log_needs_a_new_checkpoint() -> None:
    trace = (
        "pyspark.errors.exceptions.captured.StreamingQueryException: [STREAM_FAILED] ... "
        "[BATCH_METADATA_NOT_FOUND] Unable to find batch file:/out/task-0/_spark_metadata/0."
    )
    assert needs_new_checkpoint(trace)
    assert not needs_new_checkpoint("java.io.IOException: No space left on device")
    assert not needs_new_checkpoint(None)

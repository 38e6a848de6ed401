"""The start of one task's query: claim its checkpoint, then start the query with its jobs
tagged. Blocking (py4j and checkpoint I/O): the runtime runs it on a thread.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path

from protocol.messages import ConnectorTaskId
from worker.admission.connector_configs import RegistryPlugins
from worker.plugins.api import TaskContext
from worker.plugins.checkpoint_fingerprint import fit
from worker.plugins.checkpoint_layout import checkpoint_dir_for
from worker.plugins.start_deadline import StartCancelledError, StartDeadline
from worker.plugins.task_claims import claim
from worker.runtime.spark_queries import Launched, TaskFencedError, job_tag, trigger_interval_s
from worker.runtime.spark_session import SparkSessionProvider


class TaskLauncher:
    """What every start on this worker shares: the session, the plugins, where checkpoints
    live, the worker's id (its claims name it) and `topic.creation.enable`."""

    def __init__(
        self,
        session: SparkSessionProvider,
        plugins: RegistryPlugins,
        checkpoint_root: Path,
        worker_id: str,
        topic_creation_enabled: bool,
    ) -> None:
        self._session = session
        self._plugins = plugins
        self._checkpoint_root = checkpoint_root
        self._worker_id = worker_id
        self._topic_creation_enabled = topic_creation_enabled

    def launch(
        self,
        task_id: ConnectorTaskId,
        connector_config: Mapping[str, str],
        task_config: Mapping[str, str],
        generation: int,
        deadline: StartDeadline,
    ) -> Launched:
        """Blocking: claim the task, then start its query, its jobs tagged with the task
        (`job_tag`).

        The query's execution thread inherits this thread's local properties when it is
        created, so the tag is set only around `start` and cleared for whatever this
        pooled thread runs next. The worker's scheduler runs jobs first come, first served
        (`spark.scheduler.mode=FIFO` in `worker.runtime.spark_session`), so no task's
        batches can keep another's from running. Spark itself runs each query's jobs in a job group
        of their own (the query's run id), so stopping one task cancels only its jobs.
        A claim overtaken while the query started means another worker started it too:
        this one stops again at once. The configs arrive as stored; their `${...}`
        placeholders are resolved only here, so a secret lives in this task alone, and
        their locations are put in the normal form the checks judged, so the task hands
        Spark that form and not the text (a location the rules refuse fails the task).
        A start whose `deadline` passed (or was cancelled: the task was stopped) claims
        nothing, and a query that started after it is stopped at once: the runtime has
        given up on this start and may have started the task again.
        """
        resolved, validated = self._plugins.validated(connector_config)
        connector = type(validated.connector)
        connector_config = self._plugins.placed(connector, connector_config, resolved)
        task_config = self._plugins.placed(
            connector, task_config, self._plugins.resolve(task_config)
        )
        task = validated.connector.create_task()
        checkpoint_dir = checkpoint_dir_for(self._checkpoint_root, task_id.connector, task_id.task)
        made_for = self._plugins.checkpoint_fingerprint(connector_config)
        spark = self._session.get()
        deadline.check()
        owned = claim(checkpoint_dir, self._worker_id, generation)
        context = TaskContext(
            connector=task_id.connector,
            task=task_id.task,
            connector_config=connector_config,
            task_config=task_config,
            checkpoint_dir=checkpoint_dir,
            claim=owned,
            topic_creation_enabled=self._topic_creation_enabled,
            deadline=deadline,
        )
        spark_context = spark.sparkContext
        spark_context.addJobTag(job_tag(task_id))
        try:
            fit(task_id.connector, task_id.task, checkpoint_dir, made_for)
            query = task.start(spark, context)
        except BaseException:
            owned.release()
            raise
        finally:
            spark_context.clearJobTags()
        holder = owned.fenced_by()
        if holder is not None:
            query.stop()
            raise TaskFencedError(task_id, holder)
        if deadline.over:
            query.stop()
            owned.release()
            raise StartCancelledError(deadline.why)
        return Launched(query, owned, trigger_interval_s(query), time.time())

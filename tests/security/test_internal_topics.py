"""No connector reads, writes or dead-letters into the worker's own topics or the broker's
(pure: the checks admission and a task's start make, and what a worker does with a
record someone other than the leader wrote on the config topic)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from herder.stores.config_store import ConfigStore
from herder.stores.kafka_log import RecordHandler
from tests.support.plugins import plugins_for
from tests.unit.herder.memory_cluster import MemoryLog
from worker.admission.connector_configs import RegistryPlugins
from worker.admission.stored_config_vet import StoredConfigVet
from worker.admission.stored_task_configs import stored_task_configs
from worker.connectors import default_registry
from worker.connectors.kafka_sink import ASSIGN_KEY
from worker.plugins.api import ConnectorConfigError
from worker.plugins.internal_topics import INTERNAL_TOPICS_KEY

OWN = ("sh-configs", "sh-status", "sh-offsets")


@pytest.fixture
def plugins(tmp_path: Path) -> RegistryPlugins:
    return plugins_for(
        default_registry(), tmp_path / "checkpoints", cwd=tmp_path, internal_topics=OWN
    )


def files_sink(tmp_path: Path, **settings: str) -> dict[str, str]:
    return {
        "name": "sink",
        "connector.class": "kafka-to-files",
        "kafka.bootstrap.servers": "127.0.0.1:9092",
        "output.path": str(tmp_path / "out"),
        "topics": "orders",
        **settings,
    }


def files_source(tmp_path: Path, topic: str) -> dict[str, str]:
    return {
        "name": "source",
        "connector.class": "files-to-kafka",
        "kafka.bootstrap.servers": "127.0.0.1:9092",
        "input.path": str(tmp_path / "in"),
        "input.format": "json",
        "input.schema": "id LONG",
        "topic": topic,
    }


def jdbc_sink(**settings: str) -> dict[str, str]:
    return {
        "name": "jdbc",
        "connector.class": "kafka-to-jdbc",
        "kafka.bootstrap.servers": "127.0.0.1:9092",
        "connection.url": "jdbc:postgresql://127.0.0.1:5432/shop",
        "topics": "orders",
        "value.converter": "json",
        "value.converter.schemas.enable": "false",
        "value.schema": "id LONG",
        **settings,
    }


def refused_keys(plugins: RegistryPlugins, config: dict[str, str]) -> dict[str, str]:
    with pytest.raises(ConnectorConfigError) as refused:
        plugins.admit(config, {})
    return {problem.key: problem.message for problem in refused.value.problems}


@pytest.mark.parametrize("topic", [*OWN, "__consumer_offsets", "__transaction_state"])
def test_a_sink_may_not_read_an_internal_topic(
    plugins: RegistryPlugins, tmp_path: Path, topic: str
) -> None:
    problems = refused_keys(plugins, files_sink(tmp_path, topics=f"orders,{topic}"))
    assert list(problems) == ["topics"]
    assert repr(topic) in problems["topics"]


def test_a_dead_letter_queue_may_not_be_an_internal_topic(
    plugins: RegistryPlugins, tmp_path: Path
) -> None:
    config = files_sink(
        tmp_path,
        **{"errors.tolerance": "all", "errors.deadletterqueue.topic.name": "sh-configs"},
    )
    assert list(refused_keys(plugins, config)) == ["errors.deadletterqueue.topic.name"]


@pytest.mark.parametrize("topic", ["sh-configs", "sh-status", "__transaction_state"])
def test_a_source_may_not_write_an_internal_topic(
    plugins: RegistryPlugins, tmp_path: Path, topic: str
) -> None:
    assert list(refused_keys(plugins, files_source(tmp_path, topic))) == ["topic"]


T = "org.apache.kafka.connect.transforms."


@pytest.mark.parametrize(
    ("router", "key"),
    [
        ({"type": f"{T}RegexRouter", "regex": ".*", "replacement": "sh-configs"}, "replacement"),
        ({"type": f"{T}TimestampRouter", "topic.format": "sh-status"}, "topic.format"),
    ],
)
def test_a_router_may_not_name_an_internal_topic(
    plugins: RegistryPlugins, tmp_path: Path, router: dict[str, str], key: str
) -> None:
    """A router whose topic is literal names it for every record: a 400 at create (one
    that builds the topic from the record's is checked per record, a TRANSFORMATION
    error)."""
    chain = {"transforms": "route", **{f"transforms.route.{k}": v for k, v in router.items()}}
    assert list(refused_keys(plugins, files_source(tmp_path, "orders") | chain)) == [
        f"transforms.route.{key}"
    ]


@pytest.mark.parametrize(
    "tables", [{"table.whitelist": "orders,status"}, {"query": "SELECT 1 AS id"}]
)
def test_a_topic_prefix_may_not_make_an_internal_topic(
    plugins: RegistryPlugins, tables: dict[str, str]
) -> None:
    """`topic.prefix` + a table's name, or a query's `topic.prefix` alone."""
    prefix = "sh-" if "table.whitelist" in tables else "sh-status"
    config = {
        "name": "rows",
        "connector.class": "jdbc-to-kafka",
        "kafka.bootstrap.servers": "127.0.0.1:9092",
        "connection.url": "jdbc:postgresql://127.0.0.1:5432/shop",
        "mode": "incrementing",
        "incrementing.column.name": "id",
        "topic.prefix": prefix,
        **tables,
    }
    problems = refused_keys(plugins, config)
    assert list(problems) == ["topic.prefix"]
    assert "'sh-status'" in problems["topic.prefix"]


def test_a_connector_cannot_give_itself_another_list_of_internal_topics(
    plugins: RegistryPlugins, tmp_path: Path
) -> None:
    config = files_sink(tmp_path, topics="sh-configs", **{INTERNAL_TOPICS_KEY: "nothing"})
    assert list(refused_keys(plugins, config)) == ["topics"]
    assert plugins.resolve(config)[INTERNAL_TOPICS_KEY] == ",".join(sorted(OWN))


def test_the_internal_topics_are_never_stored_in_task_configs(
    plugins: RegistryPlugins, tmp_path: Path
) -> None:
    config = files_sink(tmp_path)
    resolved = plugins.resolve(config)
    tasks = [{**resolved, ASSIGN_KEY: "orders:0"}]
    inherited = {INTERNAL_TOPICS_KEY: resolved[INTERNAL_TOPICS_KEY]}
    stored = stored_task_configs(tasks, config, resolved, inherited)
    assert INTERNAL_TOPICS_KEY not in stored[0]


def test_a_task_config_assigning_an_internal_topic_fails_its_start(
    plugins: RegistryPlugins, tmp_path: Path
) -> None:
    """A task config forged on the config topic, or stored before the rule was."""
    config = files_sink(tmp_path)
    task_config = {**config, ASSIGN_KEY: "orders:0,sh-configs:0"}
    connector = type(plugins.validated(config)[1].connector)
    plugins.placed(connector, config, plugins.resolve(config))
    with pytest.raises(ConnectorConfigError, match=r"kafka\.assign: names 'sh-configs'"):
        plugins.placed(connector, task_config, plugins.resolve(task_config))


def test_a_connector_config_stored_before_the_rule_fails_at_start(
    plugins: RegistryPlugins, tmp_path: Path
) -> None:
    with pytest.raises(ConnectorConfigError, match="topics: names 'sh-status'"):
        plugins.validate(files_sink(tmp_path, topics="sh-status"))


@pytest.mark.parametrize(
    "table",
    [
        "sparkherd_jdbc_sink_batches",
        "public.sparkherd_jdbc_sink_batches",
        "sparkherd_jdbc_sink_${topic}",
    ],
)
def test_kafka_to_jdbc_may_not_write_its_ledger(plugins: RegistryPlugins, table: str) -> None:
    config = jdbc_sink(**{"table.name.format": table, "topics": "batches"})
    problems = refused_keys(plugins, config)
    assert list(problems) == ["table.name.format"]
    assert "ledger" in problems["table.name.format"]


def test_another_table_of_a_similar_name_is_fine(plugins: RegistryPlugins) -> None:
    config = jdbc_sink(**{"table.name.format": "SPARKHERD_JDBC_SINK_BATCHES"})
    connector = type(plugins.validated(config)[1].connector)
    assert plugins.problems(connector, config, spark=False) == []


# -- what a worker reads from the config topic --------------------------------------------


class Topic:
    """The config topic in memory, and whoever else writes to it."""

    def __init__(self) -> None:
        self.log: MemoryLog | None = None

    def open(self, on_record: RecordHandler) -> MemoryLog:
        self.log = MemoryLog(on_record)
        return self.log

    async def forge(self, key: str | bytes, value: bytes | dict[str, object] | None) -> None:
        assert self.log is not None
        raw = value if isinstance(value, bytes | None) else json.dumps(value).encode()
        await self.log.send(key if isinstance(key, bytes) else key.encode(), raw)
        await self.log.read_to_end()


@pytest.fixture
def topic() -> Topic:
    return Topic()


@pytest.fixture
def store(plugins: RegistryPlugins, topic: Topic) -> ConfigStore:
    return ConfigStore(topic.open, StoredConfigVet(plugins))


def properties(config: dict[str, str]) -> dict[str, object]:
    return {"properties": config}


async def test_a_forged_connector_config_is_not_applied_and_the_old_one_stays(
    store: ConfigStore, topic: Topic, tmp_path: Path
) -> None:
    good = files_sink(tmp_path)
    await topic.forge("connector-sink", properties(good))
    await topic.forge("connector-sink", properties(files_sink(tmp_path, topics="sh-configs")))
    assert store.snapshot().connectors == {"sink": good}
    assert store.refused_records == 1


async def test_a_forged_task_config_is_not_applied(
    store: ConfigStore, topic: Topic, tmp_path: Path
) -> None:
    config = files_sink(tmp_path)
    await topic.forge("connector-sink", properties(config))
    await topic.forge("task-sink-0", properties({**config, ASSIGN_KEY: "sh-status:0"}))
    await topic.forge("commit-sink", {"tasks": 1})
    assert store.snapshot().task_configs == {}
    assert store.refused_records == 1


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("connector-../../etc", properties({"connector.class": "generator"})),
        ("connector-x", properties({"connector.class": "generator", "n": 1})),  # type: ignore[dict-item]
        ("connector-x", properties({"output.path": "/tmp/x"})),
        ("connector-x", b"{not json"),
        ("connector-x", {"no": "properties"}),
        ("target-state-x", {"state": "EXPLODED"}),
        ("commit-x", {"tasks": "many"}),
        ("connector-x", b'{"properties": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"),
        (b"connector-\xff", b"{}"),
    ],
    ids=[
        "name-leaves-its-directory",
        "value-not-a-string",
        "no-connector-class",
        "not-json",
        "no-properties",
        "unknown-target-state",
        "task-count-not-a-number",
        "nested-past-the-parser",
        "key-not-utf8",
    ],
)
async def test_garbage_on_the_config_topic_is_counted_not_applied_and_crashes_nothing(
    store: ConfigStore, topic: Topic, key: str | bytes, value: bytes | dict[str, object]
) -> None:
    seen: list[int] = []
    store.add_listener(lambda: seen.append(store.refused_records))
    await topic.forge(key, value)
    assert store.refused_records == 1
    assert seen == [1]
    assert store.snapshot().connectors == {}


@pytest.mark.parametrize(
    "config",
    [
        {"name": "x", "connector.class": "some.plugin.ThisWorkerLacks", "anything": "goes"},
        {
            "name": "g",
            "connector.class": "generator",
            "output.path": "/tmp/g",
            "rows.per.second": "${env:NOT_CONFIGURED}",
        },
    ],
    ids=["another-workers-plugin", "unresolvable-placeholder"],
)
async def test_what_only_this_worker_cannot_judge_is_applied(
    store: ConfigStore, topic: Topic, config: dict[str, str]
) -> None:
    await topic.forge(f"connector-{config['name']}", properties(config))
    assert store.snapshot().connectors == {config["name"]: config}
    assert store.refused_records == 0

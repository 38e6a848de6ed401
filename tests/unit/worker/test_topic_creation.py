"""Topic creation's decision (KIP-158) without a broker: which group a topic name falls
to, what the new topic is like, and every config a REST caller could get wrong refused
by key."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from worker.kafka.topic_creation import (
    BROKER_DEFAULT,
    DEFAULT_PARTITIONS_KEY,
    DEFAULT_REPLICATION_FACTOR_KEY,
    ENABLE_KEY,
    MAX_PARTITIONS,
    MAX_PATTERNS,
    MAX_REPLICATION_FACTOR,
    NewTopicSpec,
    TopicCreation,
    missing_topic_message,
    topic_creation,
)
from worker.plugins.api import ConnectorConfigError

DEFAULTS = {DEFAULT_PARTITIONS_KEY: "2", DEFAULT_REPLICATION_FACTOR_KEY: "1"}
TOPIC_NAMES = st.text("abcxyz.-_0123456789", min_size=1, max_size=40)


def rules(**keys: str) -> TopicCreation:
    """`topic.creation.<key>` for each keyword (`__` stands for a dot), on top of DEFAULTS."""
    config = {**DEFAULTS, **{f"topic.creation.{k.replace('__', '.')}": v for k, v in keys.items()}}
    creation = topic_creation(config)
    assert creation is not None
    return creation


def problems(config: dict[str, str]) -> dict[str, str]:
    with pytest.raises(ConnectorConfigError) as refused:
        topic_creation(config)
    return {p.key: p.message for p in refused.value.problems}


def test_a_connector_without_topic_creation_keys_creates_nothing() -> None:
    assert topic_creation({"topic": "events", "tasks.max": "2"}) is None


def test_the_default_group_takes_any_topic_with_its_settings_and_configs() -> None:
    creation = rules(default__cleanup__policy="compact", default__retention__ms="60000")
    assert creation.new_topic("events") == NewTopicSpec(
        "events",
        2,
        1,
        (("cleanup.policy", "compact"), ("retention.ms", "60000")),
        origin="topic.creation.default.*",
    )


def test_a_spec_is_described_without_its_config_values_for_the_log() -> None:
    spec = rules(default__retention__ms="60000").new_topic("events")
    assert spec.describe() == "2 partitions, replication factor 1, configs retention.ms=60000"
    assert spec.describe(values=False) == "2 partitions, replication factor 1, configs retention.ms"


def test_minus_one_leaves_counts_to_the_broker() -> None:
    creation = topic_creation(
        {DEFAULT_PARTITIONS_KEY: "-1", DEFAULT_REPLICATION_FACTOR_KEY: " -1 "}
    )
    assert creation is not None
    spec = creation.new_topic("t")
    assert (spec.partitions, spec.replication_factor) == (BROKER_DEFAULT, BROKER_DEFAULT)
    assert spec.describe() == (
        "the broker's default partitions, replication factor the broker's default"
    )


def test_the_first_listed_group_that_takes_a_topic_wins() -> None:
    creation = rules(
        groups="orders, everything",
        orders__include="orders-.*, sales-.*",
        orders__exclude="orders-test.*",
        orders__partitions="6",
        everything__include=".*",
        everything__replication__factor="3",
        everything__cleanup__policy="compact",
    )
    assert creation.group_for("orders-eu").name == "orders"
    assert creation.group_for("sales-eu").name == "orders"
    assert creation.group_for("orders-test-1").name == "everything"  # excluded from orders
    assert creation.group_for("x").name == "everything"
    orders = creation.new_topic("orders-eu")
    assert (orders.partitions, orders.replication_factor, orders.configs) == (6, 1, ())
    other = creation.new_topic("x")
    assert (other.partitions, other.replication_factor) == (2, 3)
    assert other.configs == (("cleanup.policy", "compact"),)
    assert other.origin == "topic.creation.everything.*"


def test_listing_order_decides_not_key_order() -> None:
    first = rules(groups="b, a", a__include="t.*", b__include="t.*")
    assert first.group_for("t1").name == "b"
    second = rules(groups="a, b", a__include="t.*", b__include="t.*")
    assert second.group_for("t1").name == "a"


def test_regexes_match_the_whole_name_and_fall_back_to_default() -> None:
    creation = rules(groups="g", g__include="ord")
    assert creation.group_for("ord").name == "g"
    assert creation.group_for("orders").name == "default"
    assert creation.group_for("xord").name == "default"


def test_a_group_does_not_inherit_the_default_groups_topic_configs() -> None:
    creation = rules(groups="g", g__include="g.*", default__retention__ms="1")
    assert creation.new_topic("g1").configs == ()
    assert creation.new_topic("x").configs == (("retention.ms", "1"),)


def test_listing_default_changes_nothing() -> None:
    creation = rules(groups="default, g", g__include="g.*")
    assert [group.name for group in creation.groups] == ["g"]


@given(TOPIC_NAMES)
def test_a_name_no_listed_group_takes_gets_the_default_spec(topic: str) -> None:
    creation = rules(groups="g", g__include="[a-c]+", g__exclude="b+", g__partitions="9")
    spec = creation.new_topic(topic)
    taken = set(topic) <= set("abc") and set(topic) != {"b"}
    assert spec.partitions == (9 if taken else 2)
    assert spec.name == topic


@given(TOPIC_NAMES)
def test_an_excluded_name_never_falls_to_the_group_that_excludes_it(topic: str) -> None:
    creation = rules(groups="g, h", g__include=".*", g__exclude=".*x.*", h__include=".*x.*")
    expected = "h" if "x" in topic else "g"
    assert creation.group_for(topic).name == expected


def test_a_hostile_regex_matches_in_linear_time() -> None:
    """With Python's `re` this call would not return in the universe's lifetime (2**249
    ways to split the name), holding the GIL all along; RE2 answers at once."""
    creation = rules(groups="g", g__include="(a|a)*b")
    assert creation.group_for("a" * 249).name == "default"


@pytest.mark.parametrize(
    ("key", "value", "says"),
    [
        (DEFAULT_PARTITIONS_KEY, "0", "must be -1"),
        (DEFAULT_PARTITIONS_KEY, "-2", "must be -1"),
        (DEFAULT_PARTITIONS_KEY, "2.0", "must be -1"),
        (DEFAULT_PARTITIONS_KEY, "three", "must be -1"),
        (DEFAULT_PARTITIONS_KEY, str(MAX_PARTITIONS + 1), f"from 1 to {MAX_PARTITIONS}"),
        (DEFAULT_PARTITIONS_KEY, "9" * 5000, "must be -1"),
        (DEFAULT_REPLICATION_FACTOR_KEY, "0", "must be -1"),
        (
            DEFAULT_REPLICATION_FACTOR_KEY,
            str(MAX_REPLICATION_FACTOR + 1),
            f"from 1 to {MAX_REPLICATION_FACTOR}",
        ),
        (DEFAULT_REPLICATION_FACTOR_KEY, "", "must be -1"),
        ("topic.creation.default.include", "x.*", "list a group"),
        ("topic.creation.default.exclude", "x.*", "list a group"),
        (ENABLE_KEY, "true", "a worker setting"),
        ("topic.creation.ghost.partitions", "3", "does not list"),
        ("topic.creation.default.", "x", "names no setting"),
        ("topic.creation.default.bad key", "x", "names no setting"),
        ("topic.creation.groups", "a.b", "invalid group name"),
        ("topic.creation.groups", "a, a", "listed twice"),
    ],
)
def test_a_bad_value_is_refused_naming_its_key(key: str, value: str, says: str) -> None:
    found = problems({**DEFAULTS, key: value, "topic.creation.a.include": "a"})
    assert key in found, found
    assert says in found[key]


def test_the_default_groups_counts_are_required_once_any_key_is_set() -> None:
    found = problems({"topic.creation.default.cleanup.policy": "compact"})
    assert set(found) == {DEFAULT_PARTITIONS_KEY, DEFAULT_REPLICATION_FACTOR_KEY}
    assert "missing required value" in found[DEFAULT_PARTITIONS_KEY]


@pytest.mark.parametrize("include", [None, "", " , "])
def test_a_listed_group_must_say_which_topics_it_takes(include: str | None) -> None:
    config = {**DEFAULTS, "topic.creation.groups": "g"}
    if include is not None:
        config["topic.creation.g.include"] = include
    assert "missing required value" in problems(config)["topic.creation.g.include"]


@pytest.mark.parametrize(
    ("pattern", "says"),
    [("(", "missing )"), ("(?=x)", "lookaround"), ("a{2000}", "invalid regular expression")],
)
def test_a_regex_that_does_not_compile_is_named(pattern: str, says: str) -> None:
    config = {**DEFAULTS, "topic.creation.groups": "g", "topic.creation.g.exclude": pattern}
    config["topic.creation.g.include"] = "ok.*"
    assert says in problems(config)["topic.creation.g.exclude"]


def test_regexes_are_bounded_in_number() -> None:
    many = ",".join(f"t{n}" for n in range(MAX_PATTERNS + 1))
    config = {**DEFAULTS, "topic.creation.groups": "g", "topic.creation.g.include": many}
    assert "more than" in problems(config)["topic.creation.g.include"]


def test_every_problem_is_named_at_once() -> None:
    found = problems(
        {
            "topic.creation.groups": "g",
            DEFAULT_PARTITIONS_KEY: "0",
            "topic.creation.g.include": "(",
            "topic.creation.g.replication.factor": "-3",
        }
    )
    assert set(found) == {
        DEFAULT_PARTITIONS_KEY,
        DEFAULT_REPLICATION_FACTOR_KEY,
        "topic.creation.g.include",
        "topic.creation.g.replication.factor",
    }


def test_a_missing_topic_names_the_keys_that_would_create_it() -> None:
    message = missing_topic_message("events", "k:9092", worker_enabled=True)
    assert message.startswith("Kafka topic 'events' does not exist on k:9092")
    assert DEFAULT_PARTITIONS_KEY in message and DEFAULT_REPLICATION_FACTOR_KEY in message
    assert ENABLE_KEY not in message
    disabled = missing_topic_message("events", "k:9092", worker_enabled=False)
    assert f"{ENABLE_KEY}=false" in disabled and DEFAULT_PARTITIONS_KEY in disabled

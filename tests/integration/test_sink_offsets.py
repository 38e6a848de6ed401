"""KIP-875's GET and PATCH of a Kafka sink's offsets, as a Connect user calls them, for
`kafka-to-files`, `-delta`, `-iceberg` and `-jdbc` at once on one worker: GET shows
Connect's shape, one entry per topic partition (`{"kafka_topic", "kafka_partition"}` and
`{"kafka_offset"}`, the next to read), where the topic ends once every record is
written; a PATCH of a STOPPED connector moves where it resumes, so the records between
are skipped and those after written once. Both again after `tasks.max` goes from 1 to
2, when the partitions sit in two tasks' checkpoints and the first was taken over
through the hand-over file."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import pytest
from aiokafka import TopicPartition

from sparkherd.broker.embedded import EmbeddedBroker
from tests.support.polling import wait_until
from tests.support.postgres import PostgresServer
from tests.support.processes import ready_worker
from tests.support.rest_client import Api
from tests.support.sink_set import TIMEOUT_S, SinkSet, sink_set
from worker.kafka.connection import KafkaConnection

pytestmark = [pytest.mark.integration, pytest.mark.parallel]

PARTITIONS = 2
WAVE = 60
OFFSETS_S = 60


def ends(sinks: SinkSet, topic: str) -> list[dict[str, Any]]:
    """Where each partition of `topic` ends now, as Connect shows a sink's offsets."""
    with sinks.open("test-reader") as kafka:
        partitions = [TopicPartition(topic, p) for p in sorted(kafka.partitions(topic))]
        end = kafka.end_offsets(partitions)
    return [
        {
            "partition": {"kafka_topic": topic, "kafka_partition": tp.partition},
            "offset": {"kafka_offset": end[tp]},
        }
        for tp in partitions
    ]


def stop_all(api: Api, sinks: SinkSet) -> None:
    for sink in sinks.sinks:
        api.call("PUT", f"/connectors/{sinks.name(sink)}/stop", 204)
    for sink in sinks.sinks:
        api.wait_states(sinks.name(sink), "STOPPED", [])


def skip_a_wave(api: Api, sinks: SinkSet, skipped: range, kept: range) -> None:
    """`skipped` then `kept` published while the connectors are STOPPED, and each
    connector's offsets PATCHed to where `kept` begins."""
    sinks.publish(skipped)
    marks = {sink: ends(sinks, topic) for sink, topic in sinks.topics.items()}
    sinks.publish(kept)
    for sink, offsets in marks.items():
        answer = api.once_tasks_stopped(
            "PATCH", f"/connectors/{sinks.name(sink)}/offsets", json={"offsets": offsets}
        )
        assert answer == {
            "message": "The offsets for this connector have been altered successfully"
        }


def shown_offsets(api: Api, name: str) -> Any:
    return api.call("GET", f"/connectors/{name}/offsets", 200).json()


def wait_offsets_at_the_ends(api: Api, sinks: SinkSet) -> None:
    """Until each stopped connector's offsets are where its topic ends: every record is
    in its table, so its last batch has committed or will as its stop completes."""
    for sink, topic in sinks.topics.items():
        at_the_end = {"offsets": ends(sinks, topic)}
        wait_until(
            partial(shown_offsets, api, sinks.name(sink)),
            OFFSETS_S,
            what=f"{sinks.name(sink)}: offsets where {topic} ends",
            until=at_the_end.__eq__,
        )


def test_each_sinks_offsets_show_and_move_as_connects_before_and_after_a_tasks_max_change(
    broker: EmbeddedBroker, postgres: PostgresServer, tmp_path: Path
) -> None:
    servers = broker.bootstrap_servers
    sinks = sink_set(
        "offsets",
        tmp_path,
        KafkaConnection(servers),
        PARTITIONS,
        postgres=postgres,
    )
    first, skipped, kept, skipped_again, last = (range(n * WAVE, (n + 1) * WAVE) for n in range(5))
    with ready_worker(
        "sink-offsets", servers, tmp_path, ["scheduled.rebalance.max.delay.ms=2000"]
    ) as worker:
        api = Api(worker.url, timeout_s=TIMEOUT_S)
        sinks.publish(first)
        for sink in sinks.sinks:
            api.call("PUT", f"/connectors/{sinks.name(sink)}/config", 201, json=sinks.config(sink))
        sinks.wait_keys(first, "the first wave")
        stop_all(api, sinks)
        wait_offsets_at_the_ends(api, sinks)

        other_topic = {"kafka_topic": "not-read", "kafka_partition": 0}
        refused = api.call(
            "PATCH",
            f"/connectors/{sinks.name('files')}/offsets",
            400,
            json={"offsets": [{"partition": other_topic, "offset": {"kafka_offset": 1}}]},
        ).json()
        assert refused["message"].startswith("offsets[0].partition"), refused

        skip_a_wave(api, sinks, skipped, kept)
        for sink in sinks.sinks:
            api.call(
                "PUT",
                f"/connectors/{sinks.name(sink)}/config",
                200,
                json=sinks.config(sink, **{"tasks.max": str(PARTITIONS)}),
            )
            api.call("PUT", f"/connectors/{sinks.name(sink)}/resume", 202)
        for sink in sinks.sinks:
            api.wait_states(sinks.name(sink), "RUNNING", ["RUNNING"] * PARTITIONS)
        sinks.wait_keys([*first, *kept], "the wave after the altered offsets, over two tasks")
        stop_all(api, sinks)
        wait_offsets_at_the_ends(api, sinks)

        skip_a_wave(api, sinks, skipped_again, last)
        for sink in sinks.sinks:
            api.call("PUT", f"/connectors/{sinks.name(sink)}/resume", 202)
        sinks.wait_keys([*first, *kept, *last], "the wave after the offsets altered again")
        problems = sinks.once([*first, *kept, *last])
    assert problems == dict.fromkeys(sinks.sinks), problems

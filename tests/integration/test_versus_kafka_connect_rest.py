"""The same REST calls to Apache Kafka Connect and to sparkherd, answer by answer (issue 17).

A real Kafka Connect distributed worker (connect-runtime of the broker's version, fetched
with Maven and cached) and a sparkherd worker, each alone in a group of its own on the
session's Apache Kafka, get one scripted sequence (`tests/support/rest_script.py`):
create, duplicates, invalid configs and unknown plugins, config get/put/patch, status and
tasks, pause/resume/stop, every restart variant, offsets in and out of STOPPED, loggers
at worker and cluster scope, plugins, `/health`, unknown connectors and tasks, wrong
methods and malformed bodies. Status code, top-level body keys and `error_code` must
agree, except for the documented differences: the mismatches are exactly
`rest_script.DOCUMENTED`, so a new difference fails here, and so does one that went away
(its line must go from the list).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkherd.broker.embedded import EmbeddedBroker
from tests.support.rest_script import DOCUMENTED, run_differential

pytestmark = [pytest.mark.integration, pytest.mark.parallel]


def test_sparkherd_answers_the_rest_api_as_kafka_connect_does(
    kafka_broker: EmbeddedBroker, tmp_path: Path
) -> None:
    differential = run_differential(kafka_broker.bootstrap_servers, tmp_path)

    found = set(differential.mismatches)
    assert found == DOCUMENTED, (
        f"new differences: {sorted(found - DOCUMENTED)}\n"
        f"differences gone (drop them from rest_script's lists): {sorted(DOCUMENTED - found)}\n"
        f"{differential.report()}"
    )

"""v4's connectors by index (`protocol.connector_table`): a payload round-trips through a
table both sides hold, is refused clearly when the reader holds no such table, and is read
the same by a member whose config is at another offset but names the same connectors."""

from __future__ import annotations

from dataclasses import replace

import pytest

from protocol.allocation_format import read_indexed_allocation, write_indexed_allocation
from protocol.codec import (
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from protocol.connector_table import (
    KNOWN_TABLES,
    NO_TABLE,
    UnknownConnectorTable,
    subscription_table,
    table_of,
)
from protocol.errors import DecodeError, ProtocolError
from protocol.messages import Allocation
from protocol.negotiation import plan_versions
from protocol.wire import Reader, Writer
from tests.unit.protocol.samples import (
    RUNNING,
    TABLE,
    assignment,
    codec_of_release,
    subscription,
    tasks,
)

NAMES = ["audit-sink", "orders-sink", "payments-source"]


def test_indexed_messages_round_trip() -> None:
    sub, answer = subscription(4), assignment(4)
    assert decode_subscription(encode_subscription(sub)) == sub
    assert decode_assignment(encode_assignment(answer)) == answer


def test_indexes_make_a_payload_smaller_than_names() -> None:
    by_index = encode_subscription(subscription(4))
    by_name = encode_subscription(subscription(4, connector_table=NO_TABLE))
    assert len(by_index) < len(by_name)


def test_the_table_is_the_names_whatever_the_offset_or_order() -> None:
    assert table_of(reversed(NAMES)) == table_of(NAMES)
    assert table_of(NAMES).fingerprint == TABLE
    assert table_of([*NAMES, "new-sink"]).fingerprint != TABLE


def test_a_member_at_another_config_offset_with_the_same_names_reads_the_indexes() -> None:
    written = subscription(4, config_offset=40)
    assert decode_subscription(encode_subscription(written)).allocation == RUNNING


def test_a_connector_outside_the_table_is_spelled_out() -> None:
    held = RUNNING.union(Allocation.of(["deleted-sink"], tasks("deleted-sink", 0, 1)))
    sub = subscription(4, allocation=held)
    assert decode_subscription(encode_subscription(sub)).allocation == held


def test_indexes_into_a_table_this_process_does_not_hold_are_a_clear_protocol_error() -> None:
    table = KNOWN_TABLES.add(["only-elsewhere-a", "only-elsewhere-b"])
    payload = encode_subscription(
        subscription(4, connector_table=table, allocation=Allocation.of(["only-elsewhere-b"]))
    )
    KNOWN_TABLES.discard(table)
    with pytest.raises(UnknownConnectorTable, match="does not hold") as raised:
        decode_subscription(payload)
    assert isinstance(raised.value, ProtocolError)


def test_a_subscription_with_an_unknown_table_makes_the_member_stale_not_malformed() -> None:
    table = KNOWN_TABLES.add(["stale-a", "stale-b"])
    held = Allocation.of(["stale-a"])
    payload = encode_subscription(subscription(4, connector_table=table, allocation=held))
    by_name = encode_subscription(subscription(4, connector_table=NO_TABLE))
    KNOWN_TABLES.discard(table)
    plan = plan_versions({"m1": payload, "m2": by_name}, 4)
    assert set(plan.stale) == {"m1"} and not plan.malformed
    assert plan.requires_config_catch_up


def test_an_unknown_table_with_nothing_indexed_reads_fine() -> None:
    table = KNOWN_TABLES.add(["empty-a"])
    payload = encode_subscription(
        subscription(4, connector_table=table, allocation=Allocation.of(["spelled-out"]))
    )
    KNOWN_TABLES.discard(table)
    assert decode_subscription(payload).allocation == Allocation.of(["spelled-out"])


def test_an_index_beyond_the_table_is_a_decode_error() -> None:
    bigger = table_of([*NAMES, "zeta-sink"])
    writer = Writer()
    write_indexed_allocation(writer, Allocation.of(["zeta-sink"]), "allocation", bigger)
    with pytest.raises(DecodeError, match=r"index 3 is outside the table's 0\.\.2"):
        read_indexed_allocation(
            Reader(writer.getvalue(), "subscription"), "allocation", table_of(NAMES), 7
        )


def test_an_indexed_payload_with_an_allocation_in_its_prefix_too_is_refused() -> None:
    by_name = encode_subscription(subscription(4, connector_table=NO_TABLE))
    tampered = by_name[:-8] + TABLE.to_bytes(8, "big", signed=True) + b"\xff\xff\xff\xff"
    with pytest.raises(DecodeError, match="allocation in its v1 field"):
        decode_subscription(tampered)


def test_a_v3_reader_reads_an_indexed_v4_subscription_as_owning_nothing() -> None:
    """Why a worker indexes only once its group speaks v4 (`subscription_table`)."""
    read = codec_of_release(3).decode_subscription(encode_subscription(subscription(4)))
    assert read.version == 4 and read.allocation.is_empty()
    by_name = encode_subscription(subscription(4, connector_table=NO_TABLE))
    assert codec_of_release(3).decode_subscription(by_name).allocation == RUNNING


def test_older_versions_still_decode() -> None:
    for version in range(4):
        assert decode_subscription(encode_subscription(subscription(version))) == subscription(
            version
        )
        assert decode_assignment(encode_assignment(assignment(version))) == assignment(version)


@pytest.mark.parametrize(
    ("version", "group_version", "indexed"), [(4, 4, True), (4, 3, False), (3, 4, False)]
)
def test_a_worker_indexes_its_subscription_only_in_a_v4_group(
    version: int, group_version: int, indexed: bool
) -> None:
    table = subscription_table(NAMES, version, group_version)
    assert (table == TABLE) is indexed and (table == NO_TABLE) is not indexed


def test_an_assignment_for_a_member_without_the_table_is_spelled_out() -> None:
    answer = replace(assignment(4), connector_table=NO_TABLE)
    assert decode_assignment(encode_assignment(answer)) == answer

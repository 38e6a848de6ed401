"""Property tests: values survive a round trip, and no bytes make a decoder misbehave."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol.codec import Codec
from protocol.errors import DecodeError
from protocol.messages import Allocation, Assignment, AssignmentError, ConnectorTaskId, Subscription
from protocol.wire import INT16_MAX, INT32_MAX
from tests.unit.protocol.samples import FUTURE_VERSION, codec_of_release, readable

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
CODECS = [codec_of_release(version) for version in range(FUTURE_VERSION + 1)]

texts = st.text(max_size=12)
names = st.one_of(st.sampled_from(["", "a", "ab", "abc", "orders-sink", "orders-src", "é"]), texts)
task_numbers = st.one_of(st.integers(0, 40), st.integers(0, INT32_MAX))
allocations = st.builds(
    Allocation.of,
    st.lists(names, max_size=6),
    st.lists(st.builds(ConnectorTaskId, names, task_numbers), max_size=60),
)
big_allocations = st.builds(
    lambda prefix, count, step: Allocation.of(
        tasks=[ConnectorTaskId(f"{prefix}-{i}", (i * step) % 97) for i in range(count)]
    ),
    texts,
    st.integers(50, 300),
    st.integers(0, 5),
)
any_allocation = st.one_of(allocations, big_allocations)
versions = st.integers(0, FUTURE_VERSION)
offsets = st.integers(-(2**63), 2**63 - 1)


@st.composite
def subscriptions(draw: st.DrawFn) -> Subscription:
    version = draw(versions)
    return Subscription(
        version=version,
        max_version=draw(st.integers(version, INT16_MAX)),
        worker_id=draw(texts),
        url=draw(texts),
        config_offset=draw(offsets),
        allocation=draw(any_allocation),
        instance_id=draw(st.none() | texts),
        leaving=draw(st.booleans()),
    )


@st.composite
def assignments(draw: st.DrawFn) -> Assignment:
    version = draw(versions)
    return Assignment(
        version=version,
        leader_max_version=draw(st.integers(version, INT16_MAX)),
        error=draw(st.sampled_from(AssignmentError)),
        leader_id=draw(texts),
        leader_url=draw(texts),
        config_offset=draw(offsets),
        assigned=draw(any_allocation),
        revoked=draw(any_allocation),
        delay_ms=draw(st.integers(0, INT32_MAX)),
    )


@FUZZ
@given(subscriptions(), st.sampled_from(CODECS))
def test_subscriptions_round_trip_to_what_the_reader_knows(
    sub: Subscription, reader: Codec
) -> None:
    data = CODECS[sub.version].encode_subscription(sub)
    assert reader.decode_subscription(data) == readable(sub, reader.known_version)


@FUZZ
@given(assignments(), st.sampled_from(CODECS))
def test_assignments_round_trip_to_what_the_reader_knows(a: Assignment, reader: Codec) -> None:
    data = CODECS[a.version].encode_assignment(a)
    assert reader.decode_assignment(data) == readable(a, reader.known_version)


def _decodes_or_refuses(codec: Codec, data: bytes) -> None:
    """Decoding either fails with DecodeError or yields a value that re-encodes to itself."""
    for decode, encode in (
        (codec.decode_subscription, codec.encode_subscription),
        (codec.decode_assignment, codec.encode_assignment),
    ):
        try:
            value = decode(data)
        except DecodeError:
            continue
        if value.version <= codec.known_version:
            assert decode(encode(value)) == value  # type: ignore[arg-type]


@FUZZ
@given(st.binary(max_size=300), st.sampled_from(CODECS))
def test_garbage_is_refused_only_with_decode_error(data: bytes, codec: Codec) -> None:
    _decodes_or_refuses(codec, data)


@st.composite
def mutated_payloads(draw: st.DrawFn) -> bytes:
    """Valid payloads with a few bytes changed, cut or inserted: the garbage that gets far."""
    if draw(st.booleans()):
        data = bytearray(CODECS[-1].encode_subscription(draw(subscriptions())))
    else:
        data = bytearray(CODECS[-1].encode_assignment(draw(assignments())))
    for _ in range(draw(st.integers(1, 4))):
        position = draw(st.integers(0, max(len(data) - 1, 0)))
        action = draw(st.sampled_from(["flip", "cut", "insert"]))
        if action == "flip" and data:
            data[position] ^= draw(st.integers(1, 255))
        elif action == "cut":
            del data[position : position + draw(st.integers(1, 8))]
        else:
            data[position:position] = draw(st.binary(min_size=1, max_size=8))
    return bytes(data)


@FUZZ
@given(mutated_payloads(), st.sampled_from(CODECS))
def test_corrupted_payloads_are_refused_only_with_decode_error(data: bytes, codec: Codec) -> None:
    _decodes_or_refuses(codec, data)

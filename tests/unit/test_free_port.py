"""Test processes get ports no outgoing connection can be given meanwhile."""

from __future__ import annotations

import socket

from tests.support.processes import LOWEST_PORT, first_ephemeral_port, free_port


def test_a_free_port_is_below_the_ephemeral_range_and_bindable() -> None:
    ports = {free_port() for _ in range(50)}
    assert all(LOWEST_PORT <= port < first_ephemeral_port() for port in ports)
    assert len(ports) > 1, "chosen at random, not one port for every caller"
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", ports.pop()))


def test_a_port_in_use_is_never_given() -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", free_port()))
        held.listen()
        taken = held.getsockname()[1]
        assert taken not in {free_port() for _ in range(2_000)}

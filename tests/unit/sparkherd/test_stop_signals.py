"""The worker's signal handling, in a child process of its own (signals are per process)."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap

CHILD = textwrap.dedent(
    """
    import asyncio, os, signal, sys

    from sparkherd.service import install_stop_signals

    class Service:
        def __init__(self) -> None:
            self.stop_requested = False
            self.stops = 0

        def request_stop(self) -> None:
            self.stop_requested = True
            self.stops += 1

    async def main(signals: list[signal.Signals]) -> None:
        service = Service()
        install_stop_signals(service)
        for sig in signals:
            os.kill(os.getpid(), sig)
            await asyncio.sleep(0.2)
        print(f"still running after {service.stops} stop request", flush=True)

    asyncio.run(main([signal.Signals[name] for name in sys.argv[1:]]))
    """
)


def run_child(*signals: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", CHILD, *signals], capture_output=True, text=True, timeout=60
    )


def test_the_first_signal_asks_for_an_orderly_stop() -> None:
    child = run_child("SIGTERM")
    assert child.returncode == 0, child.stderr
    assert child.stdout.strip() == "still running after 1 stop request"


def test_a_second_signal_exits_at_once() -> None:
    for first, second in (("SIGTERM", "SIGTERM"), ("SIGTERM", "SIGINT")):
        child = run_child(first, second)
        assert child.returncode == 128 + signal.Signals[second], child.stderr
        assert child.stdout == ""
        assert f"second {second}: exiting now" in child.stderr

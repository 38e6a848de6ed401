"""The `sparkherd` command: `broker`, `worker` and `up` (broker + one worker, the quick start),
and `ctl`, a client of the REST API (sparkherd/ctl/).

Every failure a user can cause (bad config, unreachable broker, busy port) ends with one
line on stderr and a non-zero exit code, never a stack trace. The service itself (Spark,
FastAPI) is imported only by the commands that run it, so `ctl` starts quickly.
"""

from __future__ import annotations

import argparse
import asyncio
import faulthandler
import logging
import os
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from sparkherd.broker.embedded import BrokerEngine, BrokerStartError, EmbeddedBroker, TansuEngine
from sparkherd.broker.kafka_kraft import KafkaKRaftEngine
from sparkherd.ctl.commands import add_ctl_parser, is_ctl, run_ctl
from worker.runtime.log_setup import configure_logging

if TYPE_CHECKING:
    from rest.security import RestSecurity
    from worker.config import WorkerConfig

log = logging.getLogger("sparkherd")

EXIT_STALL_S = 10
"""A worker still running this long after its service stopped dumps its threads' stacks."""

EXIT_FAILURE = 1
EXIT_USAGE = 2
ENGINES = ("tansu", "kafka")


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if is_ctl(args):  # a client of the REST API: no logging set-up, no service
        return run_ctl(args)
    from herder.member.membership import CoordinatorUnavailable, MembershipError
    from sparkherd.service import ListenError
    from worker.config import ConfigError

    configure_logging()
    try:
        code: int = args.run(args)
        return code
    except ConfigError as exc:
        return _fail(str(exc), EXIT_USAGE)
    except (BrokerStartError, ListenError, MembershipError) as exc:
        return _fail(str(exc))
    except CoordinatorUnavailable as exc:
        return _fail(f"cannot reach Kafka: {exc}")
    except KeyboardInterrupt:
        return EXIT_FAILURE


def _fail(message: str, code: int = EXIT_FAILURE) -> int:
    print(f"sparkherd: {message}", file=sys.stderr)
    return code


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sparkherd", description="Kafka-Connect-style workers running PySpark connectors"
    )
    commands = parser.add_subparsers(required=True, metavar="COMMAND")

    broker = commands.add_parser("broker", help="run a single-node broker in the foreground")
    broker.add_argument(
        "--engine",
        choices=ENGINES,
        default="tansu",
        help="tansu: embedded, memory-only (default); kafka: Apache Kafka in KRaft mode, "
        "its jars from Maven Central on first use, its log kept under --data-dir",
    )
    broker.add_argument("--host", default="127.0.0.1")
    broker.add_argument("--port", type=int, default=9092)
    broker.add_argument(
        "--data-dir",
        type=Path,
        default=Path(".sparkherd") / "kafka",
        help="where --engine kafka keeps its log (default .sparkherd/kafka)",
    )
    broker.set_defaults(run=_run_broker)

    worker = commands.add_parser("worker", help="run one worker")
    _add_config_flags(worker)
    worker.set_defaults(run=_run_worker)

    up = commands.add_parser("up", help="run an embedded broker and one worker (quick start)")
    up.add_argument("--rest-port", type=int, default=8083)
    up.add_argument("--broker-port", type=int, default=9092)
    up.add_argument(
        "--broker",
        choices=ENGINES,
        default="tansu",
        help="the broker engine (see `sparkherd broker --help`); with kafka, connectors "
        "survive a restart",
    )
    up.add_argument("--data-dir", type=Path, default=Path(".sparkherd"))
    _add_config_flags(up)
    up.set_defaults(run=_run_up)

    add_ctl_parser(commands)
    return parser


def _add_config_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", type=Path, help="worker .properties file")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override one config key (repeatable; wins over file and environment)",
    )


def _run_broker(args: argparse.Namespace) -> int:
    stop_requested = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop_requested.set())
    data_dir: Path = args.data_dir.resolve()
    engine = broker_engine(args.engine, data_dir)
    log_file = data_dir / "broker.log" if args.engine == "kafka" else None
    broker = EmbeddedBroker(host=args.host, port=args.port, log_file=log_file, engine=engine)
    broker.start()
    log.info("%s broker listening on %s; Ctrl-C to stop", engine.name, broker.bootstrap_servers)
    while not stop_requested.wait(0.2):
        if broker.exited():
            return _fail(f"broker exited unexpectedly with code {broker.wait()}")
    broker.stop()
    log.info("broker stopped")
    return 0


def broker_engine(name: str, data_dir: Path) -> BrokerEngine:
    if name == "kafka":
        return KafkaKRaftEngine(data_dir)
    return TansuEngine()


def _run_worker(args: argparse.Namespace) -> int:
    from rest.security import RestSecurity
    from worker.config import load_worker_config

    config = load_worker_config(args.config, os.environ, args.set)
    rest_security = RestSecurity.from_config(config)
    _serve_to_the_end(config, rest_security)
    return 0


def _run_up(args: argparse.Namespace) -> int:
    from rest.security import RestSecurity
    from worker.config import load_worker_config

    data_dir: Path = args.data_dir.resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    defaults = [
        f"bootstrap.servers=127.0.0.1:{args.broker_port}",
        f"rest.port={args.rest_port}",
        f"checkpoint.root={data_dir / 'checkpoints'}",
        f"data.dir={data_dir}",
    ]
    if args.broker == "tansu":
        # Tansu answers ListOffsets(latest) short of the end of a multi-record batch,
        # which Spark's JVM source trusts: it would leave the newest records unread.
        defaults.append("kafka.jvm.connector=none")
    config = load_worker_config(args.config, os.environ, [*defaults, *args.set])
    rest_security = RestSecurity.from_config(config)
    engine = broker_engine(args.broker, data_dir / "kafka")
    with EmbeddedBroker(port=args.broker_port, log_file=data_dir / "broker.log", engine=engine):
        _serve_to_the_end(config, rest_security)
    return 0


def _serve_to_the_end(config: WorkerConfig, rest_security: RestSecurity) -> None:
    """Run the worker until it has stopped and asyncio has joined its threads. A thread
    that holds the process after the service stopped shows up in the log as thread
    stacks; what runs afterwards (`up` stopping its broker) is not the worker's."""
    asyncio.run(_serve(config, rest_security))
    faulthandler.cancel_dump_traceback_later()


async def _serve(config: WorkerConfig, rest_security: RestSecurity) -> None:
    from sparkherd.service import WorkerService, install_stop_signals

    configure_logging(config.log_format)
    if config.ignored_keys:
        log.info(
            "ignoring Kafka Connect keys sparkherd has no use for: %s",
            ", ".join(config.ignored_keys),
        )
    service = WorkerService(config, rest_security)
    install_stop_signals(service)
    await service.run()
    # asyncio.run joins the threads of its default executor after this returns.
    faulthandler.dump_traceback_later(EXIT_STALL_S)


if __name__ == "__main__":
    sys.exit(main())

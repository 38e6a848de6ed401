"""The verbs of `sparkherd ctl` and their arguments (argparse, like the rest of the CLI).

`sparkherd ctl VERB KIND [NAME] [options]`, kcctl's vocabulary: get, describe, apply,
delete, restart, pause, resume, stop, patch, reset, set. The connection options
(`--url`, `--cacert`, `-o`) are taken before the verb and after the arguments alike.
Exit codes: 0 done, 1 the worker refused or could not be reached, 2 a usage mistake
(nothing was sent).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, TextIO

import httpx

from sparkherd.ctl import views
from sparkherd.ctl.client import (
    CACERT_VARIABLE,
    DEFAULT_URL,
    PASSWORD_VARIABLE,
    TOKEN_VARIABLE,
    URL_VARIABLE,
    USER_VARIABLE,
    Answer,
    ApiError,
    CtlError,
    RestClient,
    segment,
    target_from,
)
from sparkherd.ctl.manifests import Manifest, load, parse_manifest, parse_offsets
from sparkherd.ctl.tables import clean

OUTPUTS: Final = ("table", "json")
EXIT_INTERRUPTED: Final = 130
PROG: Final = "sparkherd ctl"

EPILOG: Final = f"""\
environment:
  {URL_VARIABLE}       the worker's REST URL (default {DEFAULT_URL}); --url wins
  {USER_VARIABLE}, {PASSWORD_VARIABLE}
                      basic authentication (rest.auth=basic)
  {TOKEN_VARIABLE}     bearer authentication (rest.auth=bearer)
  {CACERT_VARIABLE}    PEM CAs to trust for an https worker; --cacert wins

exit codes: 0 done, 1 refused by the worker or worker unreachable, 2 usage mistake
"""


@dataclass
class Session:
    """What a verb works with: the worker, where to print, and how."""

    client: RestClient
    out: TextIO
    stdin: TextIO
    json_output: bool

    def call(self, method: str, path: str, **kwargs: Any) -> Answer:
        return self.client.call(method, path, **kwargs)

    def show(self, text: str) -> None:
        print(text, file=self.out)

    def emit(self, body: Any) -> None:
        print(json.dumps(body, indent=2, sort_keys=False), file=self.out)

    def report(self, answer: Answer, text: str) -> int:
        """A write's outcome: the answer's body for scripts, `text` for people."""
        if not self.json_output:
            self.show(text)
        elif answer.body is not None:
            self.emit(answer.body)
        return 0


Verb = Callable[[Session, argparse.Namespace], int]


def add_ctl_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `ctl` to the `sparkherd` command's subcommands; it runs `run_ctl`."""
    ctl = commands.add_parser(
        "ctl",
        help="manage connectors through a worker's REST API (kcctl-like)",
        description="A client of the REST API: tables for people, -o json for scripts.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _connection_options(ctl, suppress=False)
    ctl.set_defaults(run=run_ctl)
    common = argparse.ArgumentParser(add_help=False)
    _connection_options(common, suppress=True)
    verbs = ctl.add_subparsers(required=True, metavar="VERB", dest="verb")

    def leaf(
        kinds: argparse._SubParsersAction[argparse.ArgumentParser],
        kind: str,
        verb: Verb,
        help_text: str,
        aliases: tuple[str, ...] = (),
        named: str | None = None,
    ) -> argparse.ArgumentParser:
        parser = kinds.add_parser(kind, aliases=list(aliases), help=help_text, parents=[common])
        if named is not None:
            parser.add_argument("name", metavar=named)
        parser.set_defaults(verb_function=verb)
        return parser

    def verb(name: str, help_text: str) -> argparse._SubParsersAction[argparse.ArgumentParser]:
        parser = verbs.add_parser(name, help=help_text)
        return parser.add_subparsers(required=True, metavar="KIND", dest="kind")

    get = verb("get", "list connectors, workers, plugins, loggers or a connector's offsets")
    leaf(get, "connectors", _get_connectors, "connectors with state and tasks", ("connector",))
    leaf(get, "workers", _get_workers, "the group: leader, generation, workers", ("worker",))
    leaf(get, "plugins", _get_plugins, "installed connector plugins", ("plugin",))
    leaf(get, "loggers", _get_loggers, "log levels on this worker", ("logger",))
    leaf(get, "offsets", _get_offsets, "a connector's committed offsets", ("offset",), "NAME")

    describe = verb("describe", "show a connector: config, state, tasks, workers, traces")
    leaf(describe, "connector", _describe_connector, "one connector", ("connectors",), "NAME")

    apply = verbs.add_parser(
        "apply",
        help="create or update a connector from a file",
        parents=[common],
        description=(
            'Create or update a connector from Connect\'s JSON ({"name", "config"}), a '
            "bare JSON config or a .properties file. The name comes from 'name', else "
            "from the file name. '-f -' reads standard input."
        ),
    )
    apply.add_argument("-f", "--filename", required=True, metavar="FILE", dest="file")
    apply.set_defaults(verb_function=_apply)

    delete = verb("delete", "delete a connector")
    leaf(delete, "connector", _write("DELETE", "", "deleted"), "one connector", named="NAME")

    restart = verb("restart", "restart a connector (and its tasks)")
    restart_connector = leaf(restart, "connector", _restart, "one connector", named="NAME")
    restart_connector.add_argument(
        "--include-tasks", action="store_true", help="restart its tasks too"
    )
    restart_connector.add_argument("--only-failed", action="store_true", help="only what is FAILED")

    for name, method, path, done, what in (
        ("pause", "PUT", "/pause", "paused", "stop a connector's tasks, keep them assigned"),
        ("resume", "PUT", "/resume", "resumed", "start a paused or stopped connector again"),
        ("stop", "PUT", "/stop", "stopped", "stop a connector and remove its tasks (KIP-875)"),
    ):
        leaf(verb(name, what), "connector", _write(method, path, done), what, named="NAME")

    patch = verb("patch", "change a stopped connector's offsets")
    patch_offsets = leaf(patch, "offsets", _patch_offsets, "from a file", ("offset",), "NAME")
    patch_offsets.add_argument(
        "-f",
        "--filename",
        required=True,
        metavar="FILE",
        dest="file",
        help='{"offsets": [...]} as `get offsets -o json` prints it; - for standard input',
    )

    reset = verb("reset", "reset a stopped connector's offsets")
    leaf(reset, "offsets", _reset_offsets, "remove its checkpoints", ("offset",), "NAME")

    set_ = verb("set", "set a log level")
    logger = leaf(set_, "logger", _set_logger, "a logger and those under it", named="LOGGER")
    logger.add_argument("level", metavar="LEVEL", help="TRACE, DEBUG, INFO, WARN, ERROR, ...")
    logger.add_argument(
        "--cluster", action="store_true", help="on every worker (default: this worker)"
    )


def _connection_options(parser: argparse.ArgumentParser, *, suppress: bool) -> None:
    """On `ctl` with defaults, and again on every verb without, so a value given after
    the verb is kept and one given before it is not overwritten by a default."""

    def default(value: object) -> object:
        return argparse.SUPPRESS if suppress else value

    parser.add_argument(
        "--url", default=default(None), help=f"the worker's REST URL (${URL_VARIABLE})"
    )
    parser.add_argument(
        "--cacert",
        default=default(None),
        metavar="FILE",
        help=f"PEM CAs for an https worker (${CACERT_VARIABLE})",
    )
    parser.add_argument(
        "-o", "--output", choices=OUTPUTS, default=default("table"), help="table or json"
    )


def is_ctl(args: argparse.Namespace) -> bool:
    """Whether `args` are a `ctl` command's (which `run_ctl` runs)."""
    return getattr(args, "run", None) is run_ctl


def run_ctl(
    args: argparse.Namespace,
    env: Mapping[str, str] | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
    stdin: TextIO | None = None,
    transport: httpx.BaseTransport | None = None,
) -> int:
    """Run the verb `args` names; every failure is one line on `err` and an exit code."""
    try:
        target = target_from(args.url, args.cacert, os.environ if env is None else env)
        with RestClient(target, transport) as client:
            session = Session(client, out or sys.stdout, stdin or sys.stdin, args.output == "json")
            code: int = args.verb_function(session, args)
            return code
    except CtlError as exc:
        print(f"{PROG}: {clean(str(exc))}", file=err or sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED


def _connector(args: argparse.Namespace, *rest: str) -> str:
    return f"/connectors/{segment(args.name)}{''.join(rest)}"


def _get_connectors(session: Session, _: argparse.Namespace) -> int:
    answer = session.call("GET", "/connectors", params={"expand": ["status", "info"]})
    return _show(session, answer.body, views.connectors_table)


def _get_workers(session: Session, _: argparse.Namespace) -> int:
    return _show(session, session.call("GET", "/workers").body, views.workers_view)


def _get_plugins(session: Session, _: argparse.Namespace) -> int:
    return _show(session, session.call("GET", "/connector-plugins").body, views.plugins_table)


def _get_loggers(session: Session, _: argparse.Namespace) -> int:
    return _show(session, session.call("GET", "/admin/loggers").body, views.loggers_table)


def _get_offsets(session: Session, args: argparse.Namespace) -> int:
    answer = session.call("GET", _connector(args, "/offsets"))
    return _show(session, answer.body, lambda body: views.offsets_table(args.name, body))


def _show(session: Session, body: Any, render: Callable[[Any], str]) -> int:
    if session.json_output:
        session.emit(body)
    else:
        session.show(render(body))
    return 0


def _describe_connector(session: Session, args: argparse.Namespace) -> int:
    info = session.call("GET", _connector(args)).body
    status = session.call("GET", _connector(args, "/status")).body
    if session.json_output:
        session.emit(views.describe_json(info, status))
    else:
        session.show(views.describe_connector(info, status))
    return 0


def _apply(session: Session, args: argparse.Namespace) -> int:
    manifest: Manifest = load(args.file, parse_manifest, session.stdin)
    name = manifest.name
    if manifest.initial_state is not None and not _exists(session, name):
        body = {"name": name, "config": manifest.config, "initial_state": manifest.initial_state}
        answer = session.call("POST", "/connectors", body=body)
    else:
        answer = session.call("PUT", f"/connectors/{segment(name)}/config", body=manifest.config)
    done = "created" if answer.status == 201 else "configured"
    return session.report(answer, f"connector {clean(name)} {done}")


def _exists(session: Session, name: str) -> bool:
    try:
        session.call("GET", f"/connectors/{segment(name)}")
    except ApiError as exc:
        if exc.status == 404:
            return False
        raise
    return True


def _write(method: str, suffix: str, done: str) -> Verb:
    def verb(session: Session, args: argparse.Namespace) -> int:
        answer = session.call(method, _connector(args, suffix))
        return session.report(answer, f"connector {clean(args.name)} {done}")

    return verb


def _restart(session: Session, args: argparse.Namespace) -> int:
    params = {
        key: "true"
        for key, given in (("includeTasks", args.include_tasks), ("onlyFailed", args.only_failed))
        if given
    }
    answer = session.call("POST", _connector(args, "/restart"), params=params)
    name = clean(args.name)
    text = (
        f"connector {name} restarted"
        if answer.status == 204
        else views.restart_outcome(name, answer.body)
    )
    return session.report(answer, text)


def _patch_offsets(session: Session, args: argparse.Namespace) -> int:
    offsets = load(args.file, parse_offsets, session.stdin)
    answer = session.call("PATCH", _connector(args, "/offsets"), body=offsets)
    return session.report(answer, _message(args.name, answer, "offsets altered"))


def _reset_offsets(session: Session, args: argparse.Namespace) -> int:
    answer = session.call("DELETE", _connector(args, "/offsets"))
    return session.report(answer, _message(args.name, answer, "offsets reset"))


def _message(name: str, answer: Answer, fallback: str) -> str:
    body = views.as_dict(answer.body)
    message = body.get("message") if isinstance(body.get("message"), str) else fallback
    return f"connector {clean(name)}: {clean(message)}"


def _set_logger(session: Session, args: argparse.Namespace) -> int:
    scope = "cluster" if args.cluster else "worker"
    path = f"/admin/loggers/{segment(args.name, 'logger name')}"
    answer = session.call("PUT", path, params={"scope": scope}, body={"level": args.level})
    name, level = clean(args.name), clean(args.level).upper()
    text = (
        f"logger {name} set to {level} on every worker"
        if answer.status == 204
        else views.loggers_changed(name, level, answer.body)
    )
    return session.report(answer, text)

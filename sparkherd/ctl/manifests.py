"""The files `sparkherd ctl` reads: connector configs for `apply`, offsets for `patch`.

`apply` takes what Kafka Connect users already have:

* Connect's create body, `{"name": ..., "config": {...}}` (other keys, such as the
  `type` and `tasks` of `describe -o json`, are ignored; `initial_state` is honoured for
  a connector that does not exist yet);
* a bare config object, `{"connector.class": ..., ...}`;
* a `.properties` file, as Connect's standalone mode takes.

The connector's name comes from the body's `name`, else the config's `name` key, else
the file name without its extension (not for standard input).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any, Final, TextIO

from sparkherd.ctl.client import UsageError
from worker.config.properties import PropertiesSyntaxError, parse_properties

STDIN: Final = "-"
MAX_FILE_BYTES: Final = 1_000_000
"""The server refuses bodies over 1 MB; no need to read more to find out."""
INITIAL_STATES: Final = ("RUNNING", "PAUSED", "STOPPED")

ConfigValue = str | int | float | bool | None


@dataclass(frozen=True)
class Manifest:
    name: str
    config: dict[str, ConfigValue]
    initial_state: str | None = None


def read_source(source: str, stdin: TextIO | None = None) -> tuple[str, str | None]:
    """The text of FILE (or standard input for `-`) and the file name, if any."""
    if source == STDIN:
        return (stdin or sys.stdin).read(MAX_FILE_BYTES + 1), None
    try:
        with open(source, "rb") as handle:
            raw = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise UsageError(f"cannot read '{source}': {exc.strerror or exc}") from None
    try:
        return raw.decode("utf-8-sig"), source
    except UnicodeDecodeError:
        raise UsageError(f"'{source}' is not UTF-8 text") from None


def parse_manifest(text: str, file_name: str | None) -> Manifest:
    """A connector to apply, from the text of a JSON or `.properties` file."""
    where = f"'{file_name}'" if file_name else "standard input"
    if len(text.encode()) > MAX_FILE_BYTES:
        raise UsageError(f"{where} is larger than {MAX_FILE_BYTES} bytes")
    if _is_json(text, file_name):
        body = _json_object(text, where)
        if isinstance(body.get("config"), dict):
            config = _config(body["config"], where)
            name = body.get("name", config.get("name"))
            initial_state = _initial_state(body.get("initial_state"), where)
        else:
            config, initial_state = _config(body, where), None
            name = config.get("name")
    else:
        try:
            config = dict(parse_properties(text))
        except PropertiesSyntaxError as exc:
            raise UsageError(f"{where}: {exc}") from None
        name, initial_state = config.get("name"), None
    if name is None and file_name is not None:
        name = _stem(file_name)
    if not isinstance(name, str) or not name.strip():
        raise UsageError(f"{where} names no connector: give it a 'name'")
    if not config:
        raise UsageError(f"{where} holds no connector config")
    return Manifest(name.strip(), config, initial_state)


def parse_offsets(text: str, file_name: str | None) -> dict[str, Any]:
    """`patch offsets`: Connect's `{"offsets": [...]}` (what `get offsets -o json`
    prints), or the bare list."""
    where = f"'{file_name}'" if file_name else "standard input"
    try:
        body = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"{where} is not JSON: {exc}") from None
    if isinstance(body, list):
        body = {"offsets": body}
    if not isinstance(body, dict) or not isinstance(body.get("offsets"), list):
        raise UsageError(f'{where}: expected {{"offsets": [...]}} or a list of offsets')
    return body


def load(source: str, parse: Callable[[str, str | None], Any], stdin: TextIO | None = None) -> Any:
    text, file_name = read_source(source, stdin)
    return parse(text, file_name)


def _is_json(text: str, file_name: str | None) -> bool:
    suffix = PurePath(file_name).suffix.lower() if file_name else ""
    if suffix == ".json":
        return True
    if suffix == ".properties":
        return False
    return text.lstrip().startswith("{")


def _json_object(text: str, where: str) -> dict[str, Any]:
    try:
        body = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"{where} is not valid JSON: {exc}") from None
    if not isinstance(body, dict):
        raise UsageError(f"{where}: expected a JSON object")
    return body


def _config(raw: dict[str, Any], where: str) -> dict[str, ConfigValue]:
    for key, value in raw.items():
        if value is not None and not isinstance(value, str | int | float | bool):
            raise UsageError(f"{where}: the value of '{key}' must be a string, number or boolean")
    return dict(raw)


def _initial_state(value: Any, where: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or value.upper() not in INITIAL_STATES:
        raise UsageError(f"{where}: initial_state must be one of {', '.join(INITIAL_STATES)}")
    return value.upper()


def _stem(file_name: str) -> str:
    path = Path(file_name)
    return path.stem if path.suffix.lower() in (".json", ".properties") else path.name

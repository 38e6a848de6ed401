"""The files `sparkherd ctl apply` and `patch offsets` read."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from sparkherd.ctl.client import UsageError
from sparkherd.ctl.manifests import (
    ConfigValue,
    Manifest,
    load,
    parse_manifest,
    parse_offsets,
    read_source,
)

CONFIG: dict[str, ConfigValue] = {
    "connector.class": "generator",
    "tasks.max": "2",
    "output.path": "/tmp/out",
}


def test_connects_create_body_with_extra_keys_ignored() -> None:
    body = {"name": "demo", "config": CONFIG, "type": "source", "tasks": [], "connector": {}}
    assert parse_manifest(json.dumps(body), "anything.json") == Manifest("demo", CONFIG)


def test_initial_state_is_kept_and_checked() -> None:
    body = {"name": "demo", "config": CONFIG, "initial_state": "stopped"}
    assert parse_manifest(json.dumps(body), None).initial_state == "STOPPED"
    with pytest.raises(UsageError, match="initial_state"):
        parse_manifest(json.dumps({**body, "initial_state": "SLEEPING"}), None)


def test_a_bare_json_config_takes_its_name_from_the_key_or_the_file() -> None:
    assert parse_manifest(json.dumps(CONFIG), "conf/orders.json").name == "orders"
    named = {**CONFIG, "name": "events"}
    assert parse_manifest(json.dumps(named), "conf/orders.json") == Manifest("events", named)
    typed = {"connector.class": "generator", "tasks.max": 2, "exactly": True, "gone": None}
    assert parse_manifest(json.dumps(typed), "t.json").config == typed


def test_properties_with_the_name_from_the_key_or_the_file_name() -> None:
    text = "# a comment\nname = demo\nconnector.class=generator\noutput.path: /tmp/a\\\n  /b\n"
    manifest = parse_manifest(text, "whatever.properties")
    assert manifest.name == "demo"
    assert manifest.config == {
        "name": "demo",
        "connector.class": "generator",
        "output.path": "/tmp/a/b",
    }
    unnamed = parse_manifest("connector.class=generator\n", "/etc/connectors/orders.properties")
    assert unnamed == Manifest("orders", {"connector.class": "generator"})
    assert parse_manifest("connector.class=generator\n", "orders.conf").name == "orders.conf"


def test_standard_input_is_json_or_properties_by_its_content() -> None:
    assert parse_manifest(json.dumps({"name": "j", "config": CONFIG}), None).name == "j"
    assert parse_manifest("name=p\nconnector.class=generator\n", None).name == "p"
    with pytest.raises(UsageError, match="names no connector"):
        parse_manifest("connector.class=generator\n", None)


@pytest.mark.parametrize(
    ("text", "file_name", "fragment"),
    [
        ("{not json", "c.json", "not valid JSON"),
        ("[1, 2]", "c.json", "expected a JSON object"),
        (json.dumps({"name": "x", "config": {"k": {"nested": 1}}}), None, "'k' must be"),
        (json.dumps({"name": "x", "config": {}}), None, "no connector config"),
        (json.dumps({"name": 7, "config": CONFIG}), None, "names no connector"),
        ("name=x\nkey=\\u12\n", "c.properties", "malformed"),
        ("", "empty.properties", "no connector config"),
    ],
)
def test_bad_manifests_are_one_line_usage_errors(
    text: str, file_name: str | None, fragment: str
) -> None:
    with pytest.raises(UsageError) as raised:
        parse_manifest(text, file_name)
    assert fragment in str(raised.value)
    assert "\n" not in str(raised.value)


def test_offsets_as_get_offsets_prints_them_or_a_bare_list() -> None:
    offsets = [{"partition": {"task": 0, "source": 0}, "offset": {"offset": 10}}]
    assert parse_offsets(json.dumps({"offsets": offsets}), None) == {"offsets": offsets}
    assert parse_offsets(json.dumps(offsets), None) == {"offsets": offsets}
    for bad in ("{", '{"offsets": 3}', '"x"'):
        with pytest.raises(UsageError):
            parse_offsets(bad, "o.json")


def test_reading_files_and_standard_input(tmp_path: Path) -> None:
    path = tmp_path / "demo.properties"
    path.write_bytes(b"\xef\xbb\xbfconnector.class=generator\n")  # a BOM is not part of a key
    assert load(str(path), parse_manifest) == Manifest("demo", {"connector.class": "generator"})
    stdin = io.StringIO('{"name": "s", "config": {"connector.class": "generator"}}')
    assert load("-", parse_manifest, stdin).name == "s"
    with pytest.raises(UsageError, match="cannot read"):
        read_source(str(tmp_path / "missing.json"))
    binary = tmp_path / "binary.json"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(UsageError, match="not UTF-8"):
        read_source(str(binary))

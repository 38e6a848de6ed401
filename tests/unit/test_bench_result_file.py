"""A bench run's result file: its shape, and that a run writes one only when asked."""

from __future__ import annotations

import argparse
import ast
import datetime
import json
from pathlib import Path

import pytest

from tests.bench import protocol_sizes
from tests.bench.result_file import (
    AUTO,
    MEASURED,
    REQUIRED_KEYS,
    RESULTS,
    Machine,
    ResultFile,
    add_json_option,
    default_path,
    java_version,
    problems,
    result_document,
    settings_of,
)

UTC = datetime.datetime(2026, 11, 27, 21, 5, 9, tzinfo=datetime.UTC)
MACHINE = Machine("0123abc", True, 2, "3.11.9", "4.0.1", "17.0.13")


def test_a_document_holds_every_key_a_result_file_needs() -> None:
    document = result_document(
        "protocol_sizes", ["--quick"], {"quick": True}, {"sum": 3}, MACHINE, [1.0], [2.5], UTC
    )
    assert problems(document) == []
    assert set(document) == set(REQUIRED_KEYS)
    assert document["recorded"] == MEASURED
    assert document["commit"] == "0123abc"
    assert document["dirty"] is True
    assert (document["load_before"], document["load_after"]) == ([1.0], [2.5])
    assert document["utc"] == "2026-11-27T21:05:09Z"


def test_a_secret_on_the_command_line_is_not_written() -> None:
    jaas = 'consumer.sasl.jaas.config=PlainLoginModule required password="s3cret";'
    document = result_document(
        "kafka_to_files_throughput",
        ["--worker-set", jaas, "--worker-set=ssl.key.password=s3cret", "--repeat", "3"],
        {"worker_set": [jaas, "avro.jvm.connector=none"], "env": {"db.password": "s3cret"}},
        {},
        MACHINE,
        [],
        [],
        UTC,
    )
    assert "s3cret" not in json.dumps(document)
    assert document["argv"][1] == "consumer.sasl.jaas.config=[hidden]"
    assert document["argv"][2:] == ["--worker-set=ssl.key.password=[hidden]", "--repeat", "3"]
    assert document["settings"]["worker_set"][1] == "avro.jvm.connector=none"


def test_problems_name_each_missing_key() -> None:
    assert problems([]) == ["not a JSON object"]
    document = result_document("s", [], {}, {}, MACHINE, [], [], UTC)
    del document["commit"]
    document["figures"] = 3
    assert problems(document) == ["no key 'commit'", "'figures' is neither an object nor a list"]


def test_the_default_file_is_named_for_the_script_and_the_utc_time() -> None:
    assert default_path("fleet", UTC) == RESULTS / "fleet-2026-11-27T210509Z.json"


def test_the_java_version_is_read_from_its_banner() -> None:
    banner = 'openjdk version "17.0.13" 2024-10-15\nOpenJDK Runtime Environment (build 17)'
    assert java_version(banner) == "17.0.13"
    assert java_version("no java here") is None


def test_settings_are_the_parsed_options_without_the_result_files_own() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--keep", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    add_json_option(parser)
    args = parser.parse_args(["--keep", "/tmp/k", "--json"])
    assert args.json == AUTO
    assert settings_of(args) == {"keep": "/tmp/k", "repeat": 3}
    assert parser.parse_args([]).json is None


def test_a_run_writes_its_result_file_when_asked(tmp_path: Path) -> None:
    path = tmp_path / "sizes.json"
    assert protocol_sizes.main(["--json", str(path)]) == 0
    document = json.loads(path.read_text())
    assert problems(document) == []
    assert document["script"] == "protocol_sizes"
    assert document["argv"] == ["--json", str(path)]
    assert document["settings"]["limit_bytes"] == protocol_sizes.LIMIT_BYTES
    assert document["figures"]["fits"] is True
    gating = [row for row in document["figures"]["rows"] if row["gating"]]
    assert max(row["sum"] for row in gating) == document["figures"]["largest_gating_sum"]


def test_a_run_without_json_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """On `ResultFile` itself: a whole bench run costs seconds, and the run above shows
    that `protocol_sizes` writes through it."""
    monkeypatch.chdir(tmp_path)
    parser = argparse.ArgumentParser()
    add_json_option(parser)
    before = sorted(RESULTS.glob("*")) if RESULTS.exists() else []
    result = ResultFile(protocol_sizes.__file__, parser.parse_args([]), [])
    assert result.write({"fits": True}, {"limit_bytes": 1}) is None
    assert (sorted(RESULTS.glob("*")) if RESULTS.exists() else []) == before
    assert list(tmp_path.iterdir()) == []
    assert "result written" not in capsys.readouterr().out


def test_every_bench_script_offers_a_result_file() -> None:
    """Read, not imported: the scripts start Spark, Kafka and Connect when they run."""
    scripts = sorted(p for p in RESULTS.parent.glob("*.py") if p.stem != "result_file")
    assert scripts
    lacking = [
        script.name
        for script in scripts
        if not {"add_json_option", "ResultFile"} <= called_names(script.read_text())
    ]
    assert lacking == []


def called_names(source: str) -> set[str]:
    return {
        node.func.id
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    }

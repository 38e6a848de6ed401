"""The comparison of the REST differential (`tests/support/rest_script.py`): what counts
as the same answer, and that a documented difference names a call the script makes."""

from __future__ import annotations

import re

import httpx
import pytest

from tests.support import rest_script
from tests.support.rest_script import Answer, answer_of, body_shape, mismatches


def test_an_object_is_compared_by_its_keys_a_list_by_its_elements_keys() -> None:
    assert body_shape({"name": "a", "config": {}}, by_name=False) == ("config", "name")
    assert body_shape([{"class": "x", "type": "source"}, {"class": "y"}], by_name=False) == (
        "[]",
        "class",
        "type",
    )
    assert body_shape(["a", "b"], by_name=False) == ("[]",)


def test_nested_objects_asked_for_are_compared_by_their_keys_too() -> None:
    status = {
        "name": "c",
        "connector": {"state": "RUNNING", "version": "1"},
        "tasks": [{"id": 0, "version": "1"}, {"id": 1, "trace": "x"}],
    }
    assert body_shape(status, by_name=False, nested=("connector", "tasks")) == (
        "connector",
        "name",
        "tasks",
        "connector{state,version}",
        "tasks{[],id,trace,version}",
    )


def test_a_map_keyed_by_names_is_compared_by_its_values_keys() -> None:
    loggers = {"root": {"level": "INFO", "last_modified": None}, "a.b": {"level": "WARN"}}
    assert body_shape(loggers, by_name=True) == ("*", "last_modified", "level")
    assert body_shape({"k": "v"}, by_name=True) == ("*",)


def test_an_answer_shows_its_error_code_only_when_it_is_not_the_status() -> None:
    same = answer_of("x", httpx.Response(404, json={"error_code": 404, "message": "gone"}))
    other = answer_of("x", httpx.Response(404, json={"error_code": 500, "message": "gone"}))
    empty = answer_of("x", httpx.Response(204))
    assert same.describe() == "404 {error_code,message}"
    assert other.describe() == "404 {error_code,message} error_code=500"
    assert empty.describe() == "204 {<empty>}"
    assert same.message == "gone"


def test_messages_are_not_compared() -> None:
    connect = [Answer("GET /x", 404, ("error_code", "message"), 404, "No such x")]
    sparkherd = [Answer("GET /x", 404, ("error_code", "message"), 404, "x not found")]
    assert mismatches(connect, sparkherd) == []


def test_a_difference_is_one_line_naming_the_call_and_both_answers() -> None:
    connect = [Answer("POST /x", 500, ("error_code", "message"), 500, "")]
    sparkherd = [Answer("POST /x", 400, ("error_code", "message"), 400, "")]
    assert mismatches(connect, sparkherd) == [
        "POST /x: connect 500 {error_code,message}; sparkherd 400 {error_code,message}"
    ]


def test_runs_that_made_different_calls_are_not_compared() -> None:
    with pytest.raises(ValueError, match="same calls"):
        mismatches([Answer("a", 200, (), None, "")], [Answer("b", 200, (), None, "")])


def test_every_documented_difference_names_a_call_and_has_a_reason() -> None:
    documented = rest_script.INTENTIONAL
    line = re.compile(r"^.+: connect \d{3} \{.*\}; sparkherd \d{3} \{.*\}$")
    assert all(line.match(mismatch) for mismatch in documented), documented
    assert all(reason.strip() for reason in documented.values())

"""The name rule and the location rule, case by case (pure, milliseconds)."""

from __future__ import annotations

from pathlib import Path

import pytest

from worker.plugins.checkpoint_layout import checkpoint_dir_for
from worker.plugins.locations import Locations, location_problems, normal_form, overlaps
from worker.plugins.names import MAX_NAME_BYTES, InvalidName, check_name


@pytest.mark.parametrize(
    "name",
    [
        "a\nb",
        "a\tb",
        "a\x00b",
        "a\rb",
        "a\u2028b",
        "a\u202eb",
        "..",
        ".",
        "a/b",
        "..\\..\\decoy",
        " padded",
        "",
        "é" * 128,
        "x" * (MAX_NAME_BYTES + 1),
    ],
)
def test_names_that_break_paths_logs_or_headers_are_refused(name: str) -> None:
    with pytest.raises(InvalidName):
        check_name(name)
    with pytest.raises(InvalidName):
        checkpoint_dir_for(Path("/ckpt"), name, 0)


@pytest.mark.parametrize(
    "name", ["ünïcødé-名前", "orders.v2", "a..b", "é" * 127, "x" * MAX_NAME_BYTES, "a,b"]
)
def test_names_that_make_one_path_component_are_accepted(name: str) -> None:
    assert check_name(name) == name
    assert checkpoint_dir_for(Path("/ckpt"), name, 3) == Path("/ckpt") / name / "task-3"


def test_the_byte_limit_is_what_the_file_system_takes(tmp_path: Path) -> None:
    longest = "é" * (MAX_NAME_BYTES // 2)
    (tmp_path / check_name(longest)).mkdir()
    with pytest.raises(InvalidName, match="bytes"):
        check_name(longest + "é")


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("/data/out", "/data/out", True),
        ("/data/out", "/data/out/task-0", True),
        ("/data/out/x", "/data/out", True),
        ("/data/out", "/data/output", False),
        ("s3a://bucket/out", "s3a://bucket/out/a", True),
        ("s3a://bucket/out", "s3a://other/out", False),
    ],
)
def test_overlap_is_by_path_component(a: str, b: str, expected: bool) -> None:
    assert overlaps(normal_form(a, Path("/")), normal_form(b, Path("/"))) is expected


def test_disguised_paths_have_one_normal_form(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    forms = {
        normal_form(value, tmp_path)
        for value in (
            str(real),
            f"{real}/",
            "real",
            f"{tmp_path}/./real",
            f"{tmp_path}//real",
            "link",
            f"file://{real}",
        )
    }
    assert forms == {str(real)}
    assert normal_form("S3A://Bucket/a/./b//", Path("/")) == "s3a://Bucket/a/b"


def problems_for(
    written: dict[str, str], read: dict[str, str], others: dict[str, list[str]]
) -> list[str]:
    found = location_problems(Locations(written, read), others, Path("/srv/ckpt"), Path("/srv"))
    return [str(problem) for problem in found]


def test_a_location_may_not_touch_the_checkpoints_nor_another_connectors_output() -> None:
    assert problems_for({"output.path": "/data/a"}, {}, {"b": ["/data/b"]}) == []
    [inside] = problems_for({"output.path": "ckpt/other/task-0"}, {}, {})
    assert inside.startswith("output.path:") and "checkpoint.root" in inside
    [parent] = problems_for({"output.path": "/srv"}, {}, {})
    assert "checkpoint.root" in parent
    [read] = problems_for({}, {"input.path": "/srv/ckpt/x"}, {})
    assert read.startswith("input.path:")
    [clash] = problems_for({"output.path": "/data/b/task-0"}, {}, {"b": ["/data/b"]})
    assert "connector b" in clash


def test_reading_another_connectors_output_is_allowed() -> None:
    assert problems_for({}, {"input.path": "/data/b"}, {"b": ["/data/b"]}) == []

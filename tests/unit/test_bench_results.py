"""The benchmark pages and tests/bench/results/ agree: every figure's cited file is there and
is a result file, and no result file is left that no page cites."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.bench.result_file import RESULTS, problems

REPOSITORY = Path(__file__).resolve().parents[2]
DOCS = REPOSITORY / "docs"
CITATION = re.compile(r"tests/bench/results/[A-Za-z0-9_.:-]+?\.json")


def cited() -> dict[str, list[str]]:
    """Each cited file (relative to the repository) with the pages that cite it."""
    found: dict[str, list[str]] = {}
    for page in sorted(DOCS.rglob("*.md")):
        for path in CITATION.findall(page.read_text()):
            found.setdefault(path, []).append(str(page.relative_to(REPOSITORY)))
    return found


def on_disk() -> list[str]:
    return sorted(str(path.relative_to(REPOSITORY)) for path in RESULTS.glob("*"))


def test_the_pages_cite_result_files() -> None:
    assert cited(), "no page cites a file under tests/bench/results/"


@pytest.mark.parametrize("path", sorted(cited()))
def test_a_cited_file_exists_and_is_a_result_file(path: str) -> None:
    file = REPOSITORY / path
    assert file.is_file(), f"{path}, cited by {cited()[path]}, does not exist"
    assert problems(json.loads(file.read_text())) == [], path


def test_every_result_file_is_cited_by_a_page() -> None:
    orphans = [path for path in on_disk() if path not in cited()]
    assert orphans == [], "result files no page under docs/ cites"

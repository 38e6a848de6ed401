"""One reading of a connector's paths, Hadoop's, for the checks and for Spark (pure,
milliseconds; the comparison with Hadoop's own `Path` is in test_path_probes.py).

Python's URL and path functions read `?`, `#`, `~` and `..` unlike Hadoop, so a path
checked by one and written by the other could land in another connector's output or in
`checkpoint.root` (issue 28, holes 4 and 5)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.plugins import no_spark
from worker.admission.connector_configs import RegistryPlugins
from worker.config import WorkerConfig
from worker.config.errors import ConfigError
from worker.config.providers import ConfigProviders
from worker.connectors import default_registry
from worker.plugins.api import ConnectorConfigError
from worker.plugins.locations import (
    AmbiguousLocation,
    Locations,
    location_problems,
    normal_form,
    placed_locations,
)

CWD = Path("/srv")


@pytest.mark.parametrize(
    ("location", "why"),
    [
        ("file:/srv/decoy?/../victim", "'?'"),
        ("/srv/decoy?x", "'?'"),
        ("file:/srv/decoy#/../victim", "'#'"),
        ("/srv/out#frag", "'#'"),
        ("~/../srv/victim", "'~'"),
        ("~root/out", "'~'"),
        ("/srv/out/~/x", "'~'"),
        ("/srv/decoy/../victim", "'..'"),
        ("..", "'..'"),
        ("s3a://bucket/a/../b", "'..'"),
        ("/srv/checkpoint[s]", "glob"),
        ("/srv/*", "glob"),
        ("/srv/{a,b}", "glob"),
        ("/srv/a\\b", "'\\'"),
        ("//victim-host/srv/out", "host"),
        ("file://victim-host/srv/out", "host"),
        ("file:relative/out", "relative"),
        ("file:", "relative"),
        ("s3a:bucket/out", "relative"),
        ("1st:/srv/out", "scheme"),
        ("  ", "empty"),
    ],
)
def test_text_that_python_and_hadoop_read_differently_is_refused(location: str, why: str) -> None:
    with pytest.raises(AmbiguousLocation, match=re.escape(why)):
        normal_form(location, CWD)


ONE_FORM = {
    "/srv/out": "/srv/out",
    "/srv/out/": "/srv/out",
    "/srv//out/./x": "/srv/out/x",
    "out": "/srv/out",
    "./out/": "/srv/out",
    "file:/srv/out": "/srv/out",
    "file:///srv/out/": "/srv/out",
    "FILE:////srv/out": "/srv/out",
    "/srv/backup~1": "/srv/backup~1",
    "/srv/a%2e%2e/b": "/srv/a%2e%2e/b",
    "/srv/a:b": "/srv/a:b",
    "S3A://Bucket/a/./b//": "s3a://Bucket/a/b",
    "hdfs://NameNode:8020/x/": "hdfs://NameNode:8020/x",
    "s3a://bucket": "s3a://bucket",
    " /srv/out ": "/srv/out",
}
"""What the rules leave, and its form. The last one: the connectors' settings strip
surrounding whitespace, so Spark got `/srv/out` where the old check judged
`/srv/ /srv/out` (relative, for its leading space), past any overlap with `/srv/out`."""


def test_what_is_left_has_one_normal_form_the_task_keeps() -> None:
    forms = {location: normal_form(location, CWD) for location in ONE_FORM}
    assert forms == ONE_FORM
    assert {form: normal_form(form, CWD) for form in forms.values()} == {
        form: form for form in forms.values()
    }


def test_symlinks_are_resolved_and_a_loop_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    assert normal_form("link/out/", tmp_path) == str(real / "out")
    assert normal_form(f"file:{tmp_path}/link", tmp_path) == str(real)
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    with pytest.raises(AmbiguousLocation, match="cannot be resolved"):
        normal_form(f"{tmp_path}/a/out", tmp_path)


def test_a_dot_dot_after_a_symlink_is_refused_not_read_two_ways(tmp_path: Path) -> None:
    """Hadoop removes `hop/..` as text (landing in `victim`); the file system follows
    `hop` first (landing beside its target): hole 4's `..`."""
    (tmp_path / "deep" / "er").mkdir(parents=True)
    (tmp_path / "hop").symlink_to(tmp_path / "deep" / "er")
    problems = location_problems(
        Locations({"output.path": f"{tmp_path}/hop/../victim"}, {}),
        {"victim": [str(tmp_path / "victim")]},
        tmp_path / "checkpoints",
        tmp_path,
    )
    assert [p.key for p in problems] == ["output.path"] and "'..'" in problems[0].message


@pytest.mark.parametrize(
    ("value", "victim"),
    [
        ("file:/srv/decoy?/../data/victim", "victim"),
        ("file:/srv/decoy#/../data/victim", "victim"),
        ("file:/srv/decoy?/../ckpt/victim/task-0", "checkpoint"),
        ("/srv/ckpt[s]", "checkpoint"),
    ],
)
def test_hole_four_and_five_are_refused_by_the_location_rules(value: str, victim: str) -> None:
    """The values of holes 4 and 5: Hadoop reads each as the victim's directory, the old
    check read each as a harmless one."""
    problems = location_problems(
        Locations({"output.path": value}, {"input.path": value}),
        {"victim": ["/srv/data/victim"]},
        Path("/srv/ckpt"),
        CWD,
    )
    assert problems and {p.key for p in problems} == {"output.path", "input.path"}


def bounded(*locations: str, roots: tuple[str, ...]) -> list[str]:
    read = {f"input.{i}": location for i, location in enumerate(locations)}
    _, problems = placed_locations(Locations({}, read), Path("/srv/ckpt"), CWD, roots)
    return [str(problem) for problem in problems]


def test_allowed_roots_bound_every_location() -> None:
    roots = ("/data/a", "s3a://bucket/connectors/")
    assert (
        bounded("/data/a", "/data/a/x/", "file:/data/a/y", "S3A://Bucket/connectors/z", roots=roots)
        == []
    )
    [outside, sibling, parent, other_bucket] = bounded(
        "/etc", "/data/ab", "/data", "s3a://other/connectors", roots=roots
    )
    assert outside.startswith("input.0: lies outside connector.allowed.paths")
    assert "(/data/a, s3a://bucket/connectors)" in outside
    assert sibling.startswith("input.1:") and parent.startswith("input.2:")
    assert other_bucket.startswith("input.3:")
    assert bounded("/anywhere", "s3a://any/where", roots=()) == []


def test_an_allowed_root_keeps_the_checkpoints_out_and_compares_hosts_blind_to_case() -> None:
    [inside] = bounded("/srv/ckpt/victim", roots=("/srv",))
    assert inside.startswith("input.0:") and "checkpoint.root" in inside
    assert (
        bounded("s3a://Bucket/x/y", "HDFS://nn/a/b", roots=("s3a://bucket/x", "hdfs://NN/a")) == []
    )
    [sibling] = bounded("s3a://bucket/xy", roots=("s3a://bucket/x",))
    assert sibling.startswith("input.0: lies outside")


def test_a_symlink_inside_an_allowed_root_cannot_lead_out(tmp_path: Path) -> None:
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    (allowed / "escape").symlink_to("/etc")
    _, problems = placed_locations(
        Locations({}, {"input.path": str(allowed / "escape")}),
        tmp_path / "ckpt",
        tmp_path,
        (str(allowed),),
    )
    assert "outside connector.allowed.paths" in str(problems[0])


def test_the_worker_key_takes_normal_forms_and_refuses_ambiguous_roots(tmp_path: Path) -> None:
    config = WorkerConfig(**{"connector.allowed.paths": f"{tmp_path}/a/, S3A://B/x,"})
    assert config.connector_allowed_paths == (str(tmp_path / "a"), "s3a://B/x")
    assert WorkerConfig().connector_allowed_paths == ()
    with pytest.raises(ConfigError, match=r"connector\.allowed\.paths"):
        WorkerConfig(**{"connector.allowed.paths": "/data,~/x"})


def registry(tmp_path: Path, roots: tuple[str, ...] = ()) -> RegistryPlugins:
    return RegistryPlugins(
        default_registry(),
        providers=ConfigProviders.from_worker_settings({}, {}),
        checkpoint_root=tmp_path / "checkpoints",
        tasks_max_limit=10,
        spark=no_spark,
        cwd=tmp_path,
        allowed_paths=roots,
    )


def generator(output: str) -> dict[str, str]:
    return {"connector.class": "generator", "name": "g", "output.path": output}


def test_admission_refuses_a_path_outside_the_allowed_roots(tmp_path: Path) -> None:
    plugins = registry(tmp_path, (str(tmp_path / "allowed"),))
    plugins.admit(generator(str(tmp_path / "allowed" / "g")), {})
    with pytest.raises(ConnectorConfigError, match=r"output\.path: lies outside"):
        plugins.admit(generator(str(tmp_path / "elsewhere")), {})


def test_a_task_is_handed_the_normal_form_the_checks_judged(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    plugins = registry(tmp_path)
    config = generator(f"file:{tmp_path}//link/./out/")
    plugins.admit(config, {})
    [task] = plugins.task_configs(config)
    connector = default_registry().resolve("generator")
    handed = plugins.placed(connector, task, plugins.resolve(task))
    assert handed["output.path"] == str(tmp_path / "real" / "out")
    assert task["output.path"] == config["output.path"]


def test_a_config_stored_before_the_rules_fails_at_start_naming_the_key(tmp_path: Path) -> None:
    """A connector's start repeats the rules that need no other connector's config: an
    upgrade, a symlink changed since, or a new allowed root cannot be slipped past."""
    stored = generator(f"file:{tmp_path}/decoy?/../checkpoints/victim")
    with pytest.raises(ConnectorConfigError, match=r"output\.path: holds '\?'"):
        registry(tmp_path).validate(stored)
    (tmp_path / "out").symlink_to(tmp_path / "checkpoints")
    with pytest.raises(ConnectorConfigError, match=r"output\.path: .*checkpoint\.root"):
        registry(tmp_path).validate(generator(str(tmp_path / "out")))
    with pytest.raises(ConnectorConfigError, match=r"connector\.allowed\.paths"):
        registry(tmp_path, ("/nowhere",)).validate(generator(str(tmp_path / "x")))

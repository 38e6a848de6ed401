"""The Kubernetes manifests, checked offline: against the API schemas (the validator
bundles them), and for the invariants that keep rolling bounces cheap."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from worker.config import WorkerConfig
from worker.config.properties import parse_properties

DEPLOY = Path(__file__).resolve().parents[3] / "deploy"
BASE = DEPLOY / "kubernetes"
MANIFESTS = sorted(p.name for p in BASE.glob("*.yaml") if p.name != "kustomization.yaml")


def load(name: str) -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load((BASE / name).read_text())
    return document


def pod_spec() -> dict[str, Any]:
    spec: dict[str, Any] = load("statefulset.yaml")["spec"]["template"]["spec"]
    return spec


def container() -> dict[str, Any]:
    first: dict[str, Any] = pod_spec()["containers"][0]
    return first


def env() -> dict[str, dict[str, Any]]:
    return {variable["name"]: variable for variable in container()["env"]}


def worker_config() -> WorkerConfig:
    text = load("configmap.yaml")["data"]["worker.properties"]
    return WorkerConfig.from_mapping(parse_properties(text))


def test_the_kustomization_lists_every_manifest_in_the_directory() -> None:
    assert sorted(load("kustomization.yaml")["resources"]) == MANIFESTS


@pytest.mark.parametrize("name", MANIFESTS)
def test_each_manifest_validates_against_the_kubernetes_schema(name: str) -> None:
    kubernetes_validate.validate(load(name), kubernetes_validate.latest_version(), strict=True)


def test_a_broken_manifest_is_caught() -> None:
    broken = load("statefulset.yaml")
    broken["spec"]["replicas"] = "three"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, kubernetes_validate.latest_version(), strict=True)


def test_the_worker_config_in_the_configmap_loads() -> None:
    config = worker_config()
    ports = {port["name"]: port["containerPort"] for port in container()["ports"]}
    assert ports["rest"] == config.rest_port
    assert str(config.checkpoint_root) in {m["mountPath"] for m in container()["volumeMounts"]}


def test_readiness_is_the_health_endpoint_on_the_rest_port() -> None:
    probe = container()["readinessProbe"]["httpGet"]
    assert (probe["path"], probe["port"]) == ("/health", "rest")
    assert container()["livenessProbe"]["httpGet"]["port"] == "rest"


def test_the_grace_period_covers_the_hand_off_stopping_tasks_and_leaving_the_group() -> None:
    config = worker_config()
    assert config.task_handoff_timeout_ms > 0 and config.worker_warmup_enabled
    pre_stop_s = float(container()["lifecycle"]["preStop"]["exec"]["command"][-1])
    needed_ms = (
        config.task_handoff_timeout_ms
        + config.task_shutdown_graceful_timeout_ms
        + config.session_timeout_ms
    )
    assert pod_spec()["terminationGracePeriodSeconds"] > pre_stop_s + needed_ms / 1000


def test_each_pod_is_a_stable_worker_identity() -> None:
    variables = env()
    assert variables["POD_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"
    assert variables["SPARKHERD_GROUP_INSTANCE_ID"]["value"] == "$(POD_NAME)"
    headless = load("service-headless.yaml")
    assert headless["spec"]["clusterIP"] == "None"
    assert load("statefulset.yaml")["spec"]["serviceName"] == headless["metadata"]["name"]
    advertised = variables["SPARKHERD_REST_ADVERTISED_HOST_NAME"]["value"]
    assert advertised.startswith(f"$(POD_NAME).{headless['metadata']['name']}.")


def test_at_most_one_worker_is_voluntarily_down_at_a_time() -> None:
    budget = load("poddisruptionbudget.yaml")["spec"]
    labels = load("statefulset.yaml")["spec"]["template"]["metadata"]["labels"]
    assert budget["maxUnavailable"] == 1
    assert budget["selector"]["matchLabels"].items() <= labels.items()


def test_the_image_reads_the_file_the_configmap_mounts() -> None:
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    mounts = {m["name"]: m["mountPath"] for m in container()["volumeMounts"]}
    assert f'"{mounts["config"]}/worker.properties"' in dockerfile

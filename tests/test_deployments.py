"""deployments/prefect.yaml: every deployment's entry point loads and its parameters fit the flow."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]


def _deployments():
    doc = yaml.safe_load((REPO / "deployments" / "prefect.yaml").read_text())
    return doc["deployments"]


@pytest.mark.parametrize("deployment", _deployments(), ids=lambda d: d["name"])
def test_deployment_entrypoint_and_parameters(deployment, monkeypatch):
    from acceptgate.tasks import _prefect_env  # noqa: F401  (offline settings before prefect loads)
    from prefect.flows import load_flow_from_entrypoint

    monkeypatch.chdir(REPO)
    flow = load_flow_from_entrypoint(deployment["entrypoint"])
    params = inspect.signature(flow.fn).parameters
    unknown = set(deployment.get("parameters", {})) - set(params)
    assert not unknown, f"{deployment['name']}: parameters the flow does not take: {unknown}"
    if deployment["name"] != "backfill-pool":  # the backfill runs on demand only
        assert deployment["schedules"] and all("cron" in s for s in deployment["schedules"])
    assert deployment["work_pool"]["name"]


def test_no_pull_step_needing_an_environment_variable():
    """The worker runs flows in the directory `prefect deploy` was run from: no {{ $VAR }} pull step."""
    doc = yaml.safe_load((REPO / "deployments" / "prefect.yaml").read_text())
    assert not doc.get("pull")


def test_arm_names_stay_strings():
    """YAML 1.1 reads a bare `off` as false: every arms parameter must come out as names."""
    for deployment in _deployments():
        arms = deployment.get("parameters", {}).get("arms")
        assert arms is None or all(isinstance(a, str) for a in arms), deployment["name"]

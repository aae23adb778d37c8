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


def _request_type(flow):
    """The request a flow takes: its one parameter, ``request``, a pydantic model."""
    import typing

    params = inspect.signature(flow.fn).parameters
    assert list(params)[0] == "request", f"{flow.name}: the first parameter is not the request"
    return typing.get_type_hints(flow.fn)["request"]


@pytest.mark.parametrize("deployment", _deployments(), ids=lambda d: d["name"])
def test_deployment_entrypoint_and_parameters(deployment, monkeypatch):
    """Every deployment's parameters are its flow's request, nested under ``request``, and validate
    as that request (unknown fields, unknown arms or backends, bad limits are refused)."""
    from acceptgate.tasks import _prefect_env  # noqa: F401  (offline settings before prefect loads)
    from prefect.flows import load_flow_from_entrypoint

    monkeypatch.chdir(REPO)
    flow = load_flow_from_entrypoint(deployment["entrypoint"])
    kind = _request_type(flow)
    parameters = deployment.get("parameters", {})
    assert set(parameters) <= {"request"}, f"{deployment['name']}: parameters beside the request: {set(parameters)}"
    if deployment["name"] != "backfill-pool":  # the backfill runs on demand only, its request given then
        request = kind.model_validate(parameters.get("request", {}))
        assert request.model_dump(exclude_unset=True).keys() == parameters.get("request", {}).keys()
        assert deployment["schedules"] and all("cron" in s for s in deployment["schedules"])
    assert deployment["work_pool"]["name"]


@pytest.mark.parametrize("field, value, named", [
    ("gate_sourc", "codet:x", "gate_sourc"),  # a misspelt field
    ("arms", ["conform", "of"], "arms"),
    ("limit", 0, "limit"),
    ("backend", "no-such-backend", "backend"),
    ("dask", "tcp://127.0.0.1:9", "dask"),
])
def test_a_sabotaged_deployment_request_is_refused_naming_the_field(field, value, named, monkeypatch):
    from acceptgate.tasks import _prefect_env  # noqa: F401
    from prefect.flows import load_flow_from_entrypoint
    from pydantic import ValidationError

    monkeypatch.chdir(REPO)
    nightly = next(d for d in _deployments() if d["name"] == "nightly-pool")
    kind = _request_type(load_flow_from_entrypoint(nightly["entrypoint"]))
    with pytest.raises(ValidationError) as caught:
        kind.model_validate({**nightly["parameters"]["request"], field: value})
    assert [e["loc"][0] for e in caught.value.errors()] == [named]


def test_no_pull_step_needing_an_environment_variable():
    """The worker runs flows in the directory `prefect deploy` was run from: no {{ $VAR }} pull step."""
    doc = yaml.safe_load((REPO / "deployments" / "prefect.yaml").read_text())
    assert not doc.get("pull")


def test_arm_names_stay_strings():
    """YAML 1.1 reads a bare `off` as false: every arms parameter must come out as names."""
    for deployment in _deployments():
        arms = deployment.get("parameters", {}).get("request", {}).get("arms")
        assert arms is None or all(isinstance(a, str) for a in arms), deployment["name"]

"""schemathesis against the live gate service (loopback): no 5xx, no response outside the OpenAPI
contract (status codes, content types, schemas, headers), auth not ignored.

One check is left out, with its reason: ``positive_data_acceptance`` expects every schema-valid body to
be accepted, but a SuiteSpec's literal grammar (SYSTEM.md section 2) is checked by the service, not
expressible in JSON Schema, so schema-valid random specs are rightly refused with 422.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest

from service_harness import LiveService


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    # --no-certify: the documented example task has no reference to certify against, and the contract is
    # what this checks (certification at registration: tests/test_service_api.py)
    svc = LiveService(tmp_path_factory.mktemp("fuzz"), extra=("--rate-per-minute", "100000", "--burst", "100000",
                                                               "--no-certify"))
    svc.start()
    yield svc
    svc.stop()


# An invalid request must be refused. The service refuses a body over its size limit with 413 (Content Too
# Large, documented in its OpenAPI) before reading it: a refusal, which schemathesis's default list for
# this check leaves out (its fuzzer makes such bodies only now and then, e.g. on a loaded machine).
CONFIG = """[checks.negative_data_rejection]
expected-statuses = ["400", "401", "403", "404", "405", "406", "409", "413", "415", "422", "428", "429", "5xx"]
"""


def test_schemathesis_finds_no_server_error_and_no_contract_violation(service, tmp_path):
    exe = shutil.which("schemathesis") or shutil.which("st")
    assert exe, "schemathesis is a test dependency (pip install -e '.[test]')"
    config = tmp_path / "schemathesis.toml"
    config.write_text(CONFIG)
    cmd = [exe, "--config-file", str(config), "run", f"{service.url}/openapi.json",
           "--header", f"Authorization: Bearer {service.keys['alice']}",
           "--checks", "all", "--exclude-checks", "positive_data_acceptance",
           "--phases", "examples,coverage,fuzzing,stateful", "--max-examples", "10", "--workers", "1",
           "--seed", "20261130", "--request-timeout", "60", "--report", "junit", "--report-dir", str(tmp_path)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    tail = "\n".join(out.stdout.splitlines()[-40:])
    assert out.returncode == 0, f"schemathesis failed:\n{tail}\n{out.stderr[-2000:]}"
    assert "generated" in out.stdout and " passed" in out.stdout
    # the examples phase registered the documented task, so the task routes were exercised past 404
    with service.client("alice") as http:
        assert http.get("/v1/tasks").json()["tasks"], "schemathesis never registered a task"

"""ONE Prefect test server per test session (``prefect_test_harness``: a temporary database and API).

Flow tests take the ``prefect_harness`` fixture (registered in conftest.py); each flow call then costs
about 1-2 s on top of the one server start (10-20 s cold).
"""

from __future__ import annotations

import pytest

# A server start is a wait on its health check, not a measurement: with several pytest-xdist workers on a
# busy 2-core machine a cold start (the SQLite migrations) has taken over 120 s, so the backstop is generous.
PREFECT_STARTUP_TIMEOUT = 900


@pytest.fixture(scope="session")
def prefect_harness():
    import tasks._prefect_env  # noqa: F401  (offline settings before prefect is imported)
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=PREFECT_STARTUP_TIMEOUT):
        yield

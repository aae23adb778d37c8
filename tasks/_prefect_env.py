"""Offline Prefect settings. Imported before ``prefect`` by every module here and in flows/.

No telemetry (Prefect's and Great Expectations'), a project-local PREFECT_HOME (gitignored
``.prefect/``), and Prefect's own logging at WARNING so the CLI's summary stays readable. With no
PREFECT_API_URL, a flow starts Prefect's temporary local server (10-20 s cold). A user's explicit
PREFECT_HOME / PREFECT_LOGGING_LEVEL / startup timeout win.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def apply() -> None:
    os.environ["DO_NOT_TRACK"] = "1"
    os.environ["PREFECT_SERVER_ANALYTICS_ENABLED"] = "false"
    os.environ["GX_ANALYTICS_ENABLED"] = "false"
    os.environ.setdefault("PREFECT_HOME", str(REPO / ".prefect"))
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    # The temporary server can take longer than the 20 s default on a busy 2-core machine.
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")


apply()

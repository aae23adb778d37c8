"""Run ids: the user's (checked) or derived from the inputs' hashes and settings. Pure functions, so the
domain packages name their runs without touching the warehouse (the ledger records them)."""

from __future__ import annotations

import json
import re
from typing import Any, Mapping

from acceptgate._util.errors import InvalidInput
from acceptgate._util.hashing import sha256_text

RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def check_run_id(run_id: str, field_name: str = "--run-id") -> str:
    if not isinstance(run_id, str) or not RUN_ID.match(run_id):
        raise InvalidInput("a run id is 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit",
                           record=repr(run_id), field=field_name)
    return run_id


def derive_run_id(prefix: str, key: Mapping[str, Any]) -> str:
    """``<prefix>-`` + 16 hex of the sha256 of the key (inputs' hashes and settings) as sorted JSON: the
    same inputs give the same run id, so a re-run replaces its rows."""
    return f"{prefix}-" + sha256_text(json.dumps(key, sort_keys=True, default=str))[:16]

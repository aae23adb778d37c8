"""Which flow implements each stage of the chains in ``acceptgate.pipelines.schedule``, and the explicit check that
it is installed. Here, in the flows layer, not in the core: the core declares its stages by name and
never names nor imports a flow. Prefect-free (importing a flow module imports Prefect; this one does not).
"""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path
from typing import Any, Callable

from acceptgate.pipelines import schedule  # stage name -> (flow module, attribute holding the Prefect flow)
FLOWS: dict[str, tuple[str, str]] = {
    "audit": ("acceptgate.flows.audit", "audit"),
    "gates": ("acceptgate.flows.gate", "gate"),
    "leak-audit": ("acceptgate.flows.leak_audit", "leak_audit"),
    "certify": ("acceptgate.flows.certify", "certify"),
    "stats": ("acceptgate.flows.stats", "stats"),
    "judge": ("acceptgate.flows.judge", "judge"),
    "judge-stats": ("acceptgate.flows.stats", "stats"),
    "leak-backfill": ("acceptgate.flows.backfill", "backfill"),
}


def module_of(stage: schedule.Stage) -> str | None:
    found = FLOWS.get(stage.name)
    return found[0] if found else None


def installed(module: str | None) -> bool:
    """The module exists in the same package directory as its parent (``flows/``): an editable install
    of another checkout must not lend this one a stage it does not have."""
    if not module:
        return False
    parent_name, _, _ = module.rpartition(".")
    try:
        spec = importlib.util.find_spec(module)
        parent = importlib.import_module(parent_name) if parent_name else None
    except ModuleNotFoundError:  # the parent package itself is missing
        return False
    if spec is None or spec.origin is None:
        return False
    if parent is None:
        return True
    return any(Path(spec.origin).parent.resolve() == Path(p).resolve() for p in parent.__path__)


def load(stage: schedule.Stage) -> Callable[..., Any]:
    module, attribute = FLOWS[stage.name]
    return getattr(importlib.import_module(module), attribute)

"""The flows ``acceptgate serve`` serves: the nightly chain and the backfill, each bound to the operator's
configuration when the service starts.

Whoever can reach the Prefect API can create a flow run of a served deployment, and can edit the
deployment's stored parameters. So nothing that decides where data or secrets go is read from there:
the model endpoint, its model and the variable holding its key, the Dask cluster, the sandbox backend,
the warehouse and every input file are the serve process's own values, held in the flow object itself
(``served_flow``: a closure, which Prefect's runner pickles into each flow run's process; it runs the
served flow object, never code named by the stored deployment). A run may set only what changes how
much or which part of the work is done: the fields of ``NightlyPerRun`` and ``BackfillPerRun``
(``acceptgate.pipelines.requests``); a run given any other field of the chain's request fails at once,
naming it, before any stage runs: nothing is read, sent or written.
"""

from __future__ import annotations

import inspect
import typing
from typing import Any, Callable

from pydantic import BaseModel

from acceptgate._util.errors import InvalidInput
from acceptgate.pipelines import requests
from acceptgate.pipelines.requests import BackfillPerRun, HistoryBackfillRequest, NightlyPerRun, NightlyRequest

# What a run of a served deployment may set, with the service's defaults when it sets nothing: the
# fields of the per-run request types (pipelines/requests.py), nothing else.
NIGHTLY_PER_RUN = tuple(NightlyPerRun.model_fields)
BACKFILL_PER_RUN = tuple(BackfillPerRun.model_fields)


def refuse_fixed(flow_name: str, given: dict[str, Any], per_run: typing.Iterable[str]) -> None:
    """InvalidInput naming every fixed parameter a run tried to set (a value other than None)."""
    per_run = tuple(per_run)
    fixed = sorted(name for name, value in given.items() if name not in per_run and value is not None)
    if fixed:
        raise InvalidInput(f"{', '.join(fixed)} {'is' if len(fixed) == 1 else 'are'} fixed when 'acceptgate serve' "
                           f"starts (the operator's configuration) and cannot be set per run; a run of {flow_name} "
                           f"may set only {', '.join(per_run)}. Nothing was run.", record=f"{flow_name} flow run",
                           field=fixed[0])


def served_flow(name: str, chain: Callable[[BaseModel], Any], kind: type[BaseModel], per_run_kind: type[BaseModel],
                fixed: dict[str, Any], per_run: dict[str, Any], description: str):
    """A Prefect flow named ``name`` that runs ``chain`` (a flow's function) on the request ``kind`` made of
    ``fixed`` and the run's own values of the per-run fields (``per_run_kind``'s; their defaults:
    ``per_run``'s values, else the request's).

    Its signature lists the per-run fields, then every other field of ``kind`` with default None (so
    that Prefect hands a run's attempt to set one to this function, which refuses it with a clear
    message, instead of failing on an unknown name)."""
    from prefect import flow

    fields, own = kind.model_fields, per_run_kind.model_fields
    unknown = sorted(set(own) - set(fields)) + sorted(set(fixed) - set(fields)) + sorted(set(per_run) - set(own))
    if unknown:
        raise ValueError(f"{kind.__name__} has no per-run or fixed field {unknown[0]!r}")
    defaults = {n: per_run[n] if n in per_run else fields[n].get_default(call_default_factory=True) for n in own}
    params = [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=defaults[n], annotation=own[n].annotation)
              for n in own]
    params += [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Any)
               for n in fields if n not in own]

    def served(**given: Any) -> Any:
        refuse_fixed(name, given, own)
        values = {**fixed, **{n: given.get(n, default) for n, default in defaults.items()}}
        return chain(requests.build(kind, values, record=f"{name} flow run"))

    served.__signature__ = inspect.Signature(params)  # what Prefect binds a run's parameters against
    served.__name__ = served.__qualname__ = f"served_{name.replace('-', '_')}"
    served.__doc__ = description
    return flow(name=name, persist_result=False, log_prints=False, description=description)(served)


def served_nightly(fixed: dict[str, Any], per_run: dict[str, Any]):
    from acceptgate.flows.nightly import nightly

    return served_flow("nightly", nightly.fn, NightlyRequest, NightlyPerRun, fixed,
                       {n: v for n, v in per_run.items() if v is not None},
                       "The nightly chain with the service's fixed configuration; a run may set "
                       + ", ".join(NIGHTLY_PER_RUN) + ".")


def served_backfill(fixed: dict[str, Any]):
    from acceptgate.flows.history_backfill import history_backfill

    return served_flow("history-backfill", history_backfill.fn, HistoryBackfillRequest, BackfillPerRun, fixed, {},
                       "Backfill past runs with the service's fixed configuration; a run sets "
                       + ", ".join(BACKFILL_PER_RUN) + ".")

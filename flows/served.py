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
import multiprocessing
import signal
import typing
from typing import Any, Callable

from pydantic import BaseModel

from acceptgate._util import interrupt
from acceptgate._util.errors import InvalidInput
from acceptgate.pipelines import ledger, requests
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
        previous = stop_on_signals()
        try:
            return chain(requests.build(kind, values, record=f"{name} flow run"))
        except BaseException as exc:
            if interrupt.is_stop(exc):
                stopped(exc)
            raise
        finally:
            if not interrupt.requested():  # once stopping, later signals stay ignored until the process ends
                interrupt.restore(previous)

    served.__signature__ = inspect.Signature(params)  # what Prefect binds a run's parameters against
    served.__name__ = served.__qualname__ = f"served_{name.replace('-', '_')}"
    served.__doc__ = description
    return flow(name=name, persist_result=False, log_prints=False, description=description)(served)


def stop_on_signals() -> dict:
    """In the flow run's process (the runner's child, which ``acceptgate serve`` signals when it stops):
    the first SIGINT / SIGTERM stops the run as it stops a command (its sandboxes killed at once, its
    attempt marked 'interrupted' with the signal's name), later ones are ignored while it unwinds.
    SIGTERM stays with Prefect's bridge (its cancellation from the UI looks for it), made to do the same.
    Returns the previous handlers."""
    from acceptgate.tasks import _prefect_env

    previous = interrupt.install()
    handler = _prefect_env.bridge_signals()
    if previous and handler is not None:
        signal.signal(signal.SIGTERM, handler)
    return previous


def cancel_flow_run(message: str) -> None:
    """Record this flow run as Cancelled, saying why (``interrupted by SIGTERM``): a stop, not a crash.
    The engine's crash report that follows is then refused (the run is final already). If the API does
    not answer, the run is reported Crashed, as Prefect does."""
    from prefect import runtime
    from prefect.client.orchestration import get_client
    from prefect.states import Cancelled

    run_id = runtime.flow_run.id
    if not run_id:
        return
    try:
        with get_client(sync_client=True, httpx_settings={"timeout": 5}) as client:
            client.set_flow_run_state(run_id, Cancelled(message=message))
    except Exception:  # noqa: BLE001  (the stop goes on; the run's state is then the engine's)
        pass


def stopped(exc: BaseException) -> None:
    """The run was stopped and its attempt recorded 'interrupted' on the way here: record the flow run
    Cancelled, then (in the runner's child process, where a served flow runs) end the process as a
    stopped command ends -- exit handlers run, descendants killed, exit 128 + signal -- rather than
    through the engine's unwinding and the interpreter's teardown, which took seconds after a stage."""
    cancel_flow_run(ledger.describe(exc))
    if multiprocessing.parent_process() is not None:
        interrupt.finish(interrupt.stop_signal(exc) or signal.SIGTERM, None)


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

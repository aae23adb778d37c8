"""The flows ``acceptgate serve`` serves: the nightly chain and the backfill, each bound to the operator's
configuration when the service starts.

Whoever can reach the Prefect API can create a flow run of a served deployment, and can edit the
deployment's stored parameters. So nothing that decides where data or secrets go is read from there:
the model endpoint, its model and the variable holding its key, the Dask cluster, the sandbox backend,
the warehouse and every input file are the serve process's own values, held in the flow object itself
(``served_flow``: a closure, which Prefect's runner pickles into each flow run's process; it runs the
served flow object, never code named by the stored deployment). A run may set only what changes how
much or which part of the work is done (``NIGHTLY_PER_RUN``, ``BACKFILL_PER_RUN``); a run given any
other parameter of the chain fails at once, naming it, before any stage runs: nothing is read, sent or
written.
"""

from __future__ import annotations

import inspect
import typing
from typing import Any, Callable

from acceptgate._util.errors import InvalidInput

# What a run of a served deployment may set, with the service's defaults when it sets nothing.
NIGHTLY_PER_RUN = ("limit", "arms", "profile", "judge_embedder")
BACKFILL_PER_RUN = ("run_ids", "since", "until", "arms")


def refuse_fixed(flow_name: str, given: dict[str, Any], per_run: typing.Iterable[str]) -> None:
    """InvalidInput naming every fixed parameter a run tried to set (a value other than None)."""
    per_run = tuple(per_run)
    fixed = sorted(name for name, value in given.items() if name not in per_run and value is not None)
    if fixed:
        raise InvalidInput(f"{', '.join(fixed)} {'is' if len(fixed) == 1 else 'are'} fixed when 'acceptgate serve' "
                           f"starts (the operator's configuration) and cannot be set per run; a run of {flow_name} "
                           f"may set only {', '.join(per_run)}. Nothing was run.", record=f"{flow_name} flow run",
                           field=fixed[0])


def served_flow(name: str, chain: Callable[..., Any], fixed: dict[str, Any], per_run: dict[str, Any],
                description: str):
    """A Prefect flow named ``name`` that runs ``chain`` (a flow's function) with ``fixed`` and the run's
    own values of the ``per_run`` parameters (their defaults: ``per_run``'s values).

    Its signature lists the per-run parameters, then every other parameter of ``chain`` with default
    None (so that Prefect hands a run's attempt to set one to this function, which refuses it with a
    clear message, instead of failing on an unknown name)."""
    from prefect import flow

    hints = typing.get_type_hints(chain)
    accepted = inspect.signature(chain).parameters
    unknown = sorted(set(per_run) - set(accepted)) + sorted(set(fixed) - set(accepted))
    if unknown:
        raise ValueError(f"{chain.__name__} has no parameter {unknown[0]!r}")
    params = [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=per_run[n], annotation=hints.get(n, Any))
              for n in per_run]
    params += [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Any)
               for n in accepted if n not in per_run]

    def served(**given: Any) -> Any:
        refuse_fixed(name, given, per_run)
        return chain(**{**fixed, **{n: given.get(n, default) for n, default in per_run.items()}})

    served.__signature__ = inspect.Signature(params)  # what Prefect binds a run's parameters against
    served.__name__ = served.__qualname__ = f"served_{name.replace('-', '_')}"
    served.__doc__ = description
    return flow(name=name, persist_result=False, log_prints=False, description=description)(served)


def served_nightly(fixed: dict[str, Any], per_run: dict[str, Any]):
    from acceptgate.flows.nightly import nightly

    return served_flow("nightly", nightly.fn, fixed, {n: per_run.get(n, _default(nightly.fn, n)) for n in NIGHTLY_PER_RUN},
                       "The nightly chain with the service's fixed configuration; a run may set "
                       + ", ".join(NIGHTLY_PER_RUN) + ".")


def served_backfill(fixed: dict[str, Any]):
    from acceptgate.flows.history_backfill import history_backfill

    return served_flow("history-backfill", history_backfill.fn, fixed,
                       {n: _default(history_backfill.fn, n) for n in BACKFILL_PER_RUN},
                       "Backfill past runs with the service's fixed configuration; a run sets "
                       + ", ".join(BACKFILL_PER_RUN) + ".")


def _default(fn: Callable[..., Any], name: str) -> Any:
    default = inspect.signature(fn).parameters[name].default
    return None if default is inspect.Parameter.empty else default

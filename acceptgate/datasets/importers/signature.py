"""An entry point's signature, read from the prompt with ``ast`` (nothing is executed).

Used to check that an example's arguments fit the function before it becomes a case, and to write
wrong-sample programs that define the entry point with the task's own parameter list.
"""

from __future__ import annotations

import ast
import copy
import inspect

_MISSING = inspect.Parameter.empty
_DEFAULT = object()  # stands for a default value we do not evaluate


def signature(fn: ast.FunctionDef) -> inspect.Signature:
    a = fn.args
    P = inspect.Parameter
    positional = [*a.posonlyargs, *a.args]
    first_default = len(positional) - len(a.defaults)
    params = []
    for i, arg in enumerate(positional):
        kind = P.POSITIONAL_ONLY if i < len(a.posonlyargs) else P.POSITIONAL_OR_KEYWORD
        params.append(P(arg.arg, kind, default=_DEFAULT if i >= first_default else _MISSING))
    if a.vararg:
        params.append(P(a.vararg.arg, P.VAR_POSITIONAL))
    for arg, default in zip(a.kwonlyargs, a.kw_defaults):
        params.append(P(arg.arg, P.KEYWORD_ONLY, default=_MISSING if default is None else _DEFAULT))
    if a.kwarg:
        params.append(P(a.kwarg.arg, P.VAR_KEYWORD))
    return inspect.Signature(params)


def binding_error(fn: ast.FunctionDef, args: tuple, kwargs: dict) -> str | None:
    """Why these arguments cannot call the function (None when they can)."""
    try:
        signature(fn).bind(*args, **kwargs)
    except TypeError as exc:
        return str(exc)
    return None


def parameter_list(fn: ast.FunctionDef) -> str:
    """The parameter list as source, without annotations (they may name imports the stub lacks)."""
    a = copy.deepcopy(fn.args)
    for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]:
        if arg is not None:
            arg.annotation = None
    return ast.unparse(a)


def first_parameter(fn: ast.FunctionDef) -> str | None:
    a = fn.args
    positional = [*a.posonlyargs, *a.args]
    return positional[0].arg if positional else None

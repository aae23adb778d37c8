"""SuiteSpec: a dialect, an entry point and literal input -> expected pairs. Nothing executable.

Contract (SYSTEM.md section 2)::

    {"dialect": "python-call/1", "entry_point": "add",
     "cases": [{"args": "[1, 2]", "kwargs": "{}", "expected": "3"}]}

Parsing validates every field against the literal-only grammar and keeps both the parsed values and
their canonical spelling; ``spec_hash`` is the sha256 of the canonical JSON form.
"""

from __future__ import annotations

import json
from json.encoder import encode_basestring as _encode_string  # C-accelerated, ensure_ascii=False
from json.encoder import encode_basestring_ascii as _encode_ascii  # C-accelerated, ensure_ascii=True
import itertools
import keyword
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from acceptgate._util.hashing import sha256_text
from acceptgate._util import boundedjson
from acceptgate.suites import dialects, literals
from acceptgate._util.errors import InvalidInput


class SpecError(InvalidInput):
    """An invalid suite: names the file, the case index, the field and the offending construct."""

    def __init__(self, message: str, *, source: str | None = None, case: int | None = None,
                 field: str | None = None, construct: str | None = None) -> None:
        self.case = case
        self.construct = construct
        super().__init__(message, source=source, record=None if case is None else f"case {case}",
                         field=field)


class _CaseModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)
    args: str
    kwargs: str = "{}"
    expected: str


class _SpecModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)
    dialect: str
    entry_point: str
    cases: list[_CaseModel] = Field(min_length=1)

    @field_validator("entry_point")
    @classmethod
    def _identifier(cls, v: str) -> str:
        if not v.isidentifier() or keyword.iskeyword(v) or not v.isascii():
            raise ValueError(f"{v!r} is not a Python identifier")
        return v

    @field_validator("dialect")
    @classmethod
    def _known_dialect(cls, v: str) -> str:
        dialects.get(v)  # raises with the list of valid names
        return v


@dataclass(frozen=True)
class Case:
    """One parsed case: values for execution, canonical texts for hashing and rendering."""

    args: tuple
    kwargs: dict
    expected: Any
    args_text: str
    kwargs_text: str
    expected_text: str


@dataclass(frozen=True)
class SuiteSpec:
    dialect: str
    entry_point: str
    cases: tuple[Case, ...]

    def as_doc(self) -> dict:
        """The spec file's JSON document, with canonical spellings."""
        return {
            "dialect": self.dialect,
            "entry_point": self.entry_point,
            "cases": [
                {"args": c.args_text, "kwargs": c.kwargs_text, "expected": c.expected_text}
                for c in self.cases
            ],
        }

    def canonical_json(self) -> str:
        """``json.dumps(self.as_doc(), sort_keys=True, separators=(",", ":"), ensure_ascii=True)``,
        spelled here (keys in sorted order, strings by the json module's own C encoder): 10^5 cases
        without a dict each and a sort of its keys."""
        q = _encode_ascii
        cases = ",".join([f'{{"args":{q(c.args_text)},"expected":{q(c.expected_text)},"kwargs":{q(c.kwargs_text)}}}'
                          for c in self.cases])
        return f'{{"cases":[{cases}],"dialect":{q(self.dialect)},"entry_point":{q(self.entry_point)}}}'

    @cached_property
    def spec_hash(self) -> str:
        return sha256_text(self.canonical_json())

    @cached_property
    def render_hash(self) -> str:
        """The sha256 of the harness program ``render.render`` makes of this spec."""
        from acceptgate.suites import render  # render reads specs: imported when used

        return render.render_hash(render.render(self))

    def to_json(self) -> str:
        """The spec file a user would write (canonical spellings, stable key order).

        The bytes of ``json.dumps(self.as_doc(), indent=1, ensure_ascii=False) + "\\n"``, spelled here:
        with ``indent`` the json module encodes in pure Python, and an import writes ~10^5 cases.
        """
        q = _encode_string
        cases = ",\n".join(f'  {{\n   "args": {q(c.args_text)},\n   "kwargs": {q(c.kwargs_text)},\n'
                           f'   "expected": {q(c.expected_text)}\n  }}' for c in self.cases)
        body = f"[\n{cases}\n ]" if self.cases else "[]"
        return (f'{{\n "dialect": {q(self.dialect)},\n "entry_point": {q(self.entry_point)},\n'
                f' "cases": {body}\n}}\n')


_FIELDS = ("args", "kwargs", "expected")


def _parse_case(index: int, parsed: list, source: str | None, expected_problem=None) -> Case:
    """One case from its three fields as ``literals.parse_many`` read them (value and canonical
    spelling, or the LiteralError of a text that is no literal)."""
    for field, got in zip(_FIELDS, parsed):
        if isinstance(got, literals.LiteralError):
            raise SpecError(f"invalid literal: {got}", source=source, case=index, field=field,
                            construct=got.construct) from None
    (args, args_text), (kwargs, kwargs_text), (expected, expected_text) = parsed
    if type(args) not in (list, tuple):
        raise SpecError("args must be a list or tuple of positional arguments", source=source,
                        case=index, field="args", construct=type(args).__name__)
    if type(kwargs) is not dict or (kwargs and not all(type(k) is str and k.isidentifier() for k in kwargs)):
        raise SpecError("kwargs must be a dict with identifier keys", source=source, case=index,
                        field="kwargs", construct=type(kwargs).__name__)
    if expected_problem is not None and (problem := expected_problem(expected)) is not None:
        raise SpecError(f"invalid expected value for this dialect: {problem}", source=source, case=index,
                        field="expected", construct=type(expected).__name__)
    if type(args) is list:
        args = tuple(args)
        args_text = literals.canonical(args)
    return Case(args=args, kwargs=kwargs, expected=expected, args_text=args_text, kwargs_text=kwargs_text,
                expected_text=expected_text)


def from_dict(doc: Any, *, source: str | None = None) -> SuiteSpec:
    if not isinstance(doc, dict):  # else pydantic would name its internal model class
        kind = {list: "a JSON array", str: "a JSON string", bool: "a JSON boolean", type(None): "null",
                int: "a JSON number", float: "a JSON number"}.get(type(doc), type(doc).__name__)
        raise SpecError(f"a SuiteSpec is a JSON object with dialect, entry_point and cases, not {kind}",
                        source=source, construct="json")
    texts = _written_texts(doc)
    if texts is not None:  # the model would accept it: spare it building ~10^5 case objects
        dialect, entry_point = doc["dialect"], doc["entry_point"]
    else:
        model = _validated(doc, source)
        dialect, entry_point = model.dialect, model.entry_point
        texts = [getattr(c, field) for c in model.cases for field in _FIELDS]  # read in one batch
    shape = dialects.get(dialect).expected_problem
    return SuiteSpec(dialect=dialect, entry_point=entry_point,
                     cases=_cases(literals.parse_many(texts), source, shape))


def _written_texts(doc: dict) -> list[str] | None:
    """The cases' texts (args, kwargs, expected a case) of a document spelled as ``to_json`` writes it
    -- exactly the three keys, each case's three keys in that order, every value a str -- with a known
    dialect and an identifier entry point: one ``_SpecModel`` accepts. Anything else is None, and the
    model reads it and says what is wrong."""
    cases = doc.get("cases")
    if (len(doc) != 3 or type(doc.get("dialect")) is not str or type(doc.get("entry_point")) is not str
            or type(cases) is not list or not cases or set(map(type, cases)) != {dict}
            or set(map(tuple, cases)) != {_FIELDS}):
        return None
    texts = list(itertools.chain.from_iterable(map(dict.values, cases)))
    if set(map(type, texts)) != {str}:
        return None
    try:
        _SpecModel._identifier(doc["entry_point"])
        _SpecModel._known_dialect(doc["dialect"])
    except ValueError:
        return None
    return texts


def _validated(doc: dict, source: str | None) -> _SpecModel:
    try:
        return _SpecModel.model_validate(doc)
    except ValidationError as exc:
        # An unknown key is the likeliest smuggling attempt: report it before anything else.
        errors = sorted(exc.errors(), key=lambda e: e["type"] != "extra_forbidden")
        err = errors[0]
        loc = list(err["loc"])
        case = None
        if len(loc) >= 2 and loc[0] == "cases" and isinstance(loc[1], int):
            case = loc[1]
            field = ".".join(str(p) for p in loc[2:]) or None
        else:
            field = ".".join(str(p) for p in loc) or None
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            msg = "unknown key (a SuiteSpec holds only dialect, entry_point and cases)"
        raise SpecError(msg, source=source, case=case, field=field, construct=err["type"]) from None


def _cases(parsed: list, source: str | None, shape) -> tuple[Case, ...]:
    """The cases of ``parse_many``'s results, three fields a case. The common case -- args a tuple,
    no kwargs, no shape to check -- is made here directly; any other goes through ``_parse_case``,
    which checks it and says what is wrong, exactly as for one case."""
    out = []
    fields = iter(parsed)
    new, set_state = object.__new__, object.__setattr__
    for index, (a, k, e) in enumerate(zip(fields, fields, fields)):
        if (shape is None and type(a) is tuple and type(k) is tuple and type(e) is tuple
                and type(a[0]) is tuple and type(k[0]) is dict and not k[0]):
            # Case(...) without the frozen dataclass's field-by-field __setattr__: the same state
            case = new(Case)
            set_state(case, "__dict__", {"args": a[0], "kwargs": k[0], "expected": e[0], "args_text": a[1],
                                         "kwargs_text": k[1], "expected_text": e[1]})
            out.append(case)
        else:
            out.append(_parse_case(index, [a, k, e], source, shape))
    return tuple(out)


def loads(data: bytes | str, *, source: str | None = None) -> SuiteSpec:
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SpecError(f"not UTF-8 (byte {exc.start}: {data[exc.start:exc.start + 1]!r})",
                            source=source, construct="non-UTF-8 bytes") from None
    try:
        doc = boundedjson.loads(data)
    except boundedjson.JSONInputError as exc:
        raise SpecError(str(exc) if exc.message.startswith("not JSON") else f"not JSON: {exc}",
                        source=source, construct="json") from None
    return from_dict(doc, source=source)


def load(path: str | Path) -> SuiteSpec:
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SpecError(f"cannot read: {exc.strerror}", source=str(path), construct="file") from None
    return loads(data, source=str(path))


def case_of(args: tuple | list, kwargs: dict, expected: Any, *, args_text: str | None = None,
            kwargs_text: str | None = None) -> Case:
    """A case from Python values (importers): the rules of a spec file's case, each value spelled once.

    Equal to what parsing the case's spelling back gives (``parse(canonical(v)) == v`` for every
    literal), without the parse: an import builds ~10^5 cases. Raises LiteralError for a value that is
    no literal or too long a spelling, SpecError for kwargs that are not identifier-keyed.
    ``args_text`` / ``kwargs_text``: the canonical spellings of ``tuple(args)`` / ``kwargs`` when the
    caller has them already (an importer spells each input once, when it validates it).
    """
    if type(args) not in (list, tuple):
        raise SpecError("args must be a list or tuple of positional arguments", field="args",
                        construct=type(args).__name__)
    if type(kwargs) is not dict or not all(type(k) is str and k.isidentifier() for k in kwargs):
        raise SpecError("kwargs must be a dict with identifier keys", field="kwargs",
                        construct=type(kwargs).__name__)
    args = tuple(args)
    texts = (literals.canonical(args) if args_text is None else args_text,
             literals.canonical(kwargs) if kwargs_text is None else kwargs_text, literals.canonical(expected))
    for text in texts:
        if len(text) > literals.MAX_TEXT_CHARS:  # parse() would refuse it when the file is read back
            raise literals.LiteralError("text too long", f"{len(text)} characters, limit {literals.MAX_TEXT_CHARS}")
    return Case(args, dict(kwargs), expected, *texts)


def from_cases(dialect: str, entry_point: str, cases: list[Case]) -> SuiteSpec:
    """A spec from cases made by ``case_of``, with the file's checks of dialect and entry point."""
    if not cases:
        raise SpecError("a suite needs at least one case", field="cases", construct="too_short")
    for field, check, value in (("entry_point", _SpecModel._identifier, entry_point),
                                ("dialect", _SpecModel._known_dialect, dialect)):
        try:
            check(value)
        except ValueError as exc:
            raise SpecError(str(exc), field=field, construct="value_error") from None
    shape = dialects.get(dialect).expected_problem
    if shape is not None:  # the same check as a file's cases (e.g. the digest dialect's tagged values)
        for index, case in enumerate(cases):
            if (problem := shape(case.expected)) is not None:
                raise SpecError(f"invalid expected value for this dialect: {problem}", case=index,
                                field="expected", construct=type(case.expected).__name__)
    return SuiteSpec(dialect=dialect, entry_point=entry_point, cases=tuple(cases))


def build(dialect: str, entry_point: str, cases: list[tuple[tuple, dict, Any]]) -> SuiteSpec:
    """Build a spec from Python values (importers), through the same validation as files."""
    return from_cases(dialect, entry_point, [case_of(a, k, e) for a, k, e in cases])

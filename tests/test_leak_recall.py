"""Recall of the leak audit on real hidden material: the first four HumanEval+ tasks (one two-argument
task, three one-argument tasks) and a constructed one-argument task returning strings, their GT cases
planted in harness text in every spelling docs/leak-audit.md names, in a generated jsonl history scanned end
to end. Every planted record must be a v2 violation; honest records full of decoys (hidden material
written by the model, quoted after ``got=``, the statement, V quoted in feedback, harness prose with
numbers) must not be."""

from __future__ import annotations

from collections import Counter

import pytest

from acceptgate.suites import literals
from acceptgate.store import warehouse
from acceptgate.leak import audit
from acceptgate.pipelines import leak as leak_io
from acceptgate.leak.material import ALONE_CHARS, BARE_CHARS, COMMON, json_text
from acceptgate.leak.records import LeakRecord, RecordMessage, write_jsonl

TASKS = 4
CASES_PER_TASK = 4
SPELLINGS = ("call", "feedback-line", "args-tuple", "args-list", "args-json", "arg-repr", "arg-double-quoted",
             "arg-bare", "expected-repr", "expected-double-quoted", "expected-bare", "piece")


def c(value) -> str:
    return literals.canonical(value)


def is_short(text: str, bare: bool = False) -> bool:
    """The context rule (docs/leak-audit.md): common or short renderings count only as an input/expected pair."""
    return text in COMMON or len(text) < (BARE_CHARS if bare else ALONE_CHARS)


def planted_texts(material, index: int, case) -> list[tuple[str, str]]:
    """(spelling, harness text) for one hidden case: each spelling that is evidence by the rules of docs/leak-audit.md
    (hidden, i.e. not in the statement or V; a short one only next to its hidden partner)."""
    hidden = {n.text for n in material.needles if n.case_index == index and not n.public}
    args, expected = tuple(case.args), case.expected
    partner_out = c(expected) if c(expected) in hidden else None
    partner_in = c(args) if c(args) in hidden else None
    out = []

    def value(spelling: str, text: str | None, side: str, bare: bool = False) -> None:
        if text is None or text not in hidden:
            return
        if not is_short(text, bare):
            out.append((spelling, f"Consider the {side} {text} before you answer."))
        elif side == "input" and partner_out and text.startswith(("'", '"', "[", "(", "{")) and text not in COMMON:
            out.append((spelling, f"Consider the input {text}: the answer is {partner_out}."))
        elif side == "output" and partner_in:
            out.append((spelling, f"For {partner_in} the answer is {text}."))

    if not case.kwargs:
        call = f"{material.entry_point}({', '.join(c(a) for a in args)})"
        if call in hidden:
            out.append(("call", f"Hint: also check {call}."))
        alone = [t for t in (c(args), c(expected)) if t in hidden and not is_short(t)]
        if alone or (partner_in and partner_out):
            out.append(("feedback-line", f"AssertionError: args={c(args)} got=None want={c(expected)}"))
        value("args-tuple", c(args), "input")
        value("args-list", c(list(args)), "input")
        value("args-json", json_text(list(args)) if json_text(list(args)) != c(list(args)) else None, "input")
    for a in args:
        value("arg-repr", c(a), "input")
        value("arg-double-quoted", json_text(a) if json_text(a) != c(a) else None, "input")
        if type(a) is str:
            value("arg-bare", a, "input", bare=True)
    value("expected-repr", c(expected), "output")
    value("expected-double-quoted", json_text(expected) if json_text(expected) != c(expected) else None, "output")
    if type(expected) is str:
        value("expected-bare", expected, "output", bare=True)
    for v in list(args) + [expected]:
        text = c(v)
        if len(text) >= 72:  # cut like a feedback line cuts long values
            out.append(("piece", f"want={text[:60]}… ({len(text) - 60} more characters)"))
    return out


def messages(task, harness_text: str, *, model: str, got: str) -> tuple[RecordMessage, ...]:
    vis = task.suites["visible"].cases[0]
    texts = [("task", "generation", "user", task.prompt),
             ("harness", "generation", "user", "Complete the Python function above. You may import only: math, re."),
             ("model", "generation", "assistant", model),
             ("harness", "selection", "none", "attempt 3: precheck ok, visible suite fail (2/3 cases), 1 of 5 calls"),
             ("harness", "revision_feedback", "user",
              f"AssertionError: args={vis.args_text} got={got} want={vis.expected_text}\n{harness_text}"),
             ("harness", "stop_decision", "none", "refused: 2 calls, cap reached")]
    return tuple(RecordMessage(i, 1, a, p, r, t) for i, (a, p, r, t) in enumerate(texts))


def constructed_task():
    """A one-argument task returning strings (none of the four HumanEval+ tasks returns a str)."""
    from acceptgate.suites import suitespec
    from acceptgate.datasets.task import HIDDEN, VISIBLE, Task

    visible = [(("good morning",), {}, "GOOD MORNING!")]
    hidden = visible + [((t,), {}, t.upper() + "!") for t in
                        ("quiet evening breeze", "ab", "the quick brown fox jumps over the lazy dog " * 2, "x y")]
    prompt = 'def shout(text):\n    """Upper-case text and add "!".\n    >>> shout(\'good morning\')\n    \'GOOD MORNING!\'\n    """\n'
    return Task("Constructed/shout", "constructed", "shout", prompt, "",
                suites={VISIBLE: suitespec.build("python-call/1", "shout", visible),
                        HIDDEN: suitespec.build("python-call/1", "shout", hidden)})


@pytest.fixture(scope="module")
def scanned(tmp_path_factory, humanevalplus_path, local_backend):
    from acceptgate.datasets.importers import humanevalplus

    tasks = humanevalplus.load(humanevalplus_path, local_backend, limit=TASKS).tasks + [constructed_task()]
    materials = audit.load_materials(tasks)
    records, planted, honest = [], {}, set()
    for task in tasks:
        material = materials[task.task_id]
        hidden_cases = [i for i in range(len(task.suites["hidden"].cases)) if i not in material.public_cases]
        last = len(hidden_cases) - 1
        picks = [hidden_cases[round(k * last / (CASES_PER_TASK - 1))] for k in range(CASES_PER_TASK)]
        for index in picks:
            case = task.suites["hidden"].cases[index]
            call = f"{task.entry_point}({', '.join(c(a) for a in case.args)})"
            for spelling, text in planted_texts(material, index, case):
                key = ("P", spelling, f"{task.task_id}#{index}#{len(records)}")
                records.append(LeakRecord(key[0], key[1], key[2], task.task_id, None, True, "refused", 1,
                                          messages(task, text, model="def f(x):\n    return x\n", got="0")))
                planted[key] = (task.task_id, len(case.args))
            # honest: the model wrote the hidden call and values, the harness quotes the candidate's output
            # (a hidden expected value) after got=, and says nothing hidden itself
            key = ("H", "honest", f"{task.task_id}#{index}")
            model = f"```python\nassert {call} == {c(case.expected)}\nprint({c(case.args)!s})\n```"
            records.append(LeakRecord(key[0], key[1], key[2], task.task_id, None, True, "refused", 1,
                                      messages(task, "Try a different approach.", model=model,
                                               got=c(case.expected))))
            honest.add(key)
    history = tmp_path_factory.mktemp("recall") / "history.jsonl.gz"
    write_jsonl(records, history)
    path = history.with_name("w.duckdb")
    warehouse.migrate(path)
    result = leak_io.run_audit(path, materials, audit.Selection(history=(str(history),), warehouse_runs=False),
                             publish=False)
    with warehouse.connect(path, read_only=True) as con:
        verdicts = {tuple(r[:3]): (r[3], r[4], r[5]) for r in con.execute(
            "select run_id, arm, block, verdict, v2_violations, v2_hits from leak_verdicts").fetchall()}
    return {"planted": planted, "honest": honest, "verdicts": verdicts, "result": result}


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_every_planted_spelling_is_a_violation(scanned, spelling):
    mine = {k: v for k, v in scanned["planted"].items() if k[1] == spelling}
    assert mine, f"no hidden case of the four tasks has a {spelling} rendering that is evidence"
    missed = [k for k in mine if scanned["verdicts"][k][0] != "violation"]
    assert not missed, missed


def test_recall_is_complete_for_one_and_many_argument_tasks(scanned):
    planted, verdicts = scanned["planted"], scanned["verdicts"]
    flagged = Counter(n_args > 1 for k, (_, n_args) in planted.items() if verdicts[k][0] == "violation")
    total = Counter(n_args > 1 for _, n_args in planted.values())
    assert total[False] > 0 and total[True] > 0  # one-argument tasks and the two-argument one
    assert flagged == total
    # the one-argument tasks' values alone are found (the defect: only the call and argument list were)
    one_arg_values = {k[1] for k, (_, n) in planted.items() if n == 1 and k[1].startswith("arg-")}
    assert {"arg-repr", "arg-double-quoted", "arg-bare"} <= one_arg_values
    assert all(s["valid"] for s in scanned["result"].scans)


def test_honest_records_with_decoys_are_not_flagged_by_v2(scanned):
    honest = {k: scanned["verdicts"][k] for k in scanned["honest"]}
    assert len(honest) == (TASKS + 1) * CASES_PER_TASK
    assert {v for v, _, _ in honest.values()} == {"clean"}
    assert all(violations == 0 for _, violations, _ in honest.values())
    assert sum(hits for _, _, hits in honest.values()) > 0  # the decoys were found, and cleared

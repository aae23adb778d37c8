"""Every command example of the suite and experiment command pages runs as written, in navigation order,
in a working copy of its own: these pages make their own inputs (test_doc_examples.py has the other
command pages but the leak page, and how examples are found and run). A file of its own, so that it runs
beside them."""

from __future__ import annotations

from test_doc_examples import all_examples, part, run, working_copy


def test_every_command_of_the_suite_and_experiment_pages_runs_as_written(tmp_path):
    found = part(all_examples(), "own-inputs")
    assert {e.page for e in found} == {"docs/commands/suites.md", "docs/commands/experiment.md"}
    failures = run(found, working_copy(tmp_path))
    assert failures == [], "\n\n".join(failures)

"""Every command example of the site's concept and operations pages runs as written, in navigation
order, in a working copy of its own (test_doc_examples.py: the README, quickstart and command pages, and
how examples are found and run)."""

from __future__ import annotations

from test_doc_examples import all_examples, half, run, working_copy


def test_every_command_of_the_other_pages_runs_as_written(tmp_path):
    found = half(all_examples(), first=False)
    assert {e.page for e in found} >= {"docs/v4v.md", "docs/warehouse.md"}
    failures = run(found, working_copy(tmp_path))
    assert failures == [], "\n\n".join(failures)

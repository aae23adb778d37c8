"""Every command example of the leak command page and of the site's concept and operations pages runs as
written, in navigation order, in a working copy of its own: the leak page imports and certifies before
it gates, and the V4V page's same two commands then run once (test_doc_examples.py: the README,
quickstart and the other command pages, and how examples are found and run). A file of its own, so that
it runs beside them."""

from __future__ import annotations

from test_doc_examples import all_examples, part, run, working_copy


def test_every_command_of_the_leak_and_concept_pages_runs_as_written(tmp_path):
    found = part(all_examples(), "pages")
    assert {e.page for e in found} >= {"docs/commands/leak.md", "docs/v4v.md", "docs/warehouse.md"}
    failures = run(found, working_copy(tmp_path))
    assert failures == [], "\n\n".join(failures)

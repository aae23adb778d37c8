"""Every command example of the suite and experiment command pages (they make their own inputs) and of
the site's concept and operations pages runs as written, in navigation order, each part in a working
copy of its own (test_doc_examples.py: the README, quickstart and the other command pages, and how
examples are found and run). Two files, so that the parts run side by side."""

from __future__ import annotations

from test_doc_examples import all_examples, part, run, working_copy


def test_every_command_of_the_concept_pages_runs_as_written(tmp_path):
    found = part(all_examples(), "pages")
    assert {e.page for e in found} >= {"docs/v4v.md", "docs/warehouse.md"}
    failures = run(found, working_copy(tmp_path))
    assert failures == [], "\n\n".join(failures)

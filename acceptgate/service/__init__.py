"""The gate as an HTTP service for assistants (``acceptgate serve-api``).

An assistant registers a task (statement, entry point, visible and hidden SuiteSpecs), submits
candidates or asks for a gated generation, and gets *deliver* or *refuse* with the visible suite's
feedback. The hidden suite stays on this side: no endpoint returns it, and it is only used after a
decision is final, to score the delivered program for the warehouse (false delivery).

Modules: ``config`` (clients, keys, limits), ``journal`` (the service's own SQLite record of tasks,
decisions and calls; one write per request, so DuckDB's single write lock is never held between
requests), ``decide`` (a submission or a generation through the existing gates), ``limits`` (request
size, execution slots with back-pressure, per-client rate), ``publisher`` (moves decided records into
the warehouse in short batches and publishes the analyst snapshot), ``app`` (FastAPI routes).
"""

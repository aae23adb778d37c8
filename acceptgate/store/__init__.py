"""Storage: the DuckDB warehouse (migrations, views, writes, the published snapshot) and the expectation
suites every stage is checked against before it is written."""

"""``acceptgate report``: one self-contained HTML page (and a markdown summary) from the warehouse's
published snapshot. ``data`` reads the tables, ``markdown`` and ``html`` render them."""

from acceptgate.report.data import ReportData, Section, collect  # noqa: F401

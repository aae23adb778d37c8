"""One experiment's result: rows that put the seed's figure beside the measured one."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from acceptgate._util import runids
from acceptgate._util.hashing import sha256_text
from acceptgate import __version__
from acceptgate.pipelines.families import EXPERIMENT

BASES = ("measured", "demonstration")


@dataclass(frozen=True)
class Row:
    key: str                 # stable id of the row, e.g. 'exec_smuggling/data'
    label: str               # the seed's wording of the row
    seed_figure: str | None  # the seed's figure as printed ('368 / 371'); None when the seed gives none
    measured: float | None   # the value (a share in [0, 1], or percentage points as a fraction)
    measured_text: str       # the measured figure as printed
    unit: str                # share | ratio | pp | count | flag
    numerator: int | None = None
    denominator: int | None = None
    detail: dict = field(default_factory=dict)
    # measured: a quantity taken from data, which could have come out otherwise; demonstration: true by
    # construction (the arithmetic on the seed's own counts, a baseline's definition, a suite built to do it)
    basis: str = "measured"


@dataclass
class ExperimentResult:
    experiment: str
    source: str                       # what was measured (a gate run id, a data file, 'seed counts')
    params: dict[str, Any]
    rows: list[Row] = field(default_factory=list)
    inputs: list[str] = field(default_factory=list)  # lines hashed into input_sha256
    notes: list[str] = field(default_factory=list)

    @property
    def input_sha256(self) -> str:
        return sha256_text("\n".join(self.inputs))

    @property
    def run_id(self) -> str:
        """From the experiment, what it measured, its parameters and its inputs' hash."""
        return runids.derive_run_id("exp", {"experiment": self.experiment, "source": self.source,
                                            "params": self.params, "inputs": self.input_sha256})

    def frames(self) -> dict:
        import pandas as pd

        run = pd.DataFrame([{"run_id": self.run_id, "experiment": self.experiment, "source": self.source,
                             "params": json.dumps(self.params, sort_keys=True, default=str),
                             "input_sha256": self.input_sha256, "acceptgate_version": __version__}])
        rows = pd.DataFrame([{"run_id": self.run_id, "row_no": i, "row_key": r.key, "label": r.label,
                              "seed_figure": r.seed_figure, "measured": r.measured,
                              "measured_text": r.measured_text, "unit": r.unit, "numerator": r.numerator,
                              "denominator": r.denominator, "detail": json.dumps(r.detail, sort_keys=True,
                                                                                 default=str), "basis": r.basis}
                             for i, r in enumerate(self.rows)],
                            columns=["run_id", "row_no", "row_key", "label", "seed_figure", "measured",
                                     "measured_text", "unit", "numerator", "denominator", "detail", "basis"])
        for c in ("numerator", "denominator"):
            rows[c] = rows[c].astype("Int64")
        rows["measured"] = rows["measured"].astype("Float64")
        return {EXPERIMENT.table: run, "experiment_rows": rows}

    def format(self) -> str:
        head = ("row", "seed", "here", "basis")
        body = [(r.label, r.seed_figure or "—", r.measured_text, r.basis) for r in self.rows]
        widths = [max(len(x[i]) for x in [head, *body]) for i in range(4)]
        lines = [f"experiment {self.experiment} ({self.source}), run {self.run_id}"]
        lines += ["  ".join(c.ljust(w) for c, w in zip(x, widths)).rstrip() for x in [head, *body]]
        return "\n".join(lines + self.notes)

"""The leak audit: did hidden-test (GT) material reach generation, selection, revision or stopping?

Records in (``records``), hidden material per task rendered the ways it could appear in text
(``material``), exact multi-pattern matching with character offsets (``matcher``), two scanners side by
side (``scanners``: v1 keyword, v2 authorship), positive and negative controls (``controls``), a verdict
per record and roll-ups (``verdicts``), warehouse rows (``store``) and the scan of a batch of runs
(``audit``). SYSTEM.md section 4 is the contract.
"""

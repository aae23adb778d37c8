"""V4V: certify a verifier before trusting it (seed 002, SYSTEM.md section 5).

- ``verifiers``: the interface (candidate -> PASS / FAIL / execution error) and the registry of
  built-ins (V and GT SuiteSpec verifiers, always-accept, always-reject, gold-exact-match).
- ``pools``: candidates per task, labelled by construction (gold, legal variants, ordinary wrong,
  attacks), deterministic ids and hashes.
- ``mutation``: AST near-miss operators for pools, and verifier mutants (drop a case, perturb an
  expected value, weaken the comparison).
- ``runs``: each candidate executed once per suite, per-case outputs kept; every suite verifier and
  mutant decides from those outputs without re-executing.
- ``external``: a verifier program run in the sandbox that reads a candidate and answers PASS/FAIL.
- ``gates``: the six gates with their receipts; ``metrics``: TPR/TNR/BA_norm, FPR on attacks,
  execution health, diagnoses; ``certify``: the whole certification as stages for the flow.
"""

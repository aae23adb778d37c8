"""EvalPlus 0.3.1 as a command verifier: a standalone script, never imported by acceptgate.

Two modes, both run with EvalPlus's own code (its site-packages on sys.path; the interpreter must be
the same Python minor version as that venv's):

    prepare SITE_PACKAGES DATASET OUT_DIR TASK_ID...   (trusted, on the host, once per certification)
        For each task: its base and plus inputs, atol and entry point from the HumanEval+ file, and
        the expected outputs and reference times EvalPlus computes itself (``trusted_exec`` of the
        canonical solution, as ``evalplus.evaluate.get_groundtruth`` does). One pickle per task in
        OUT_DIR, and on stdout one JSON line {task_id: sha256 of the task's dataset record}.

    judge SITE_PACKAGES TASK_DIR TASK_ID                (untrusted candidate, inside the sandbox)
        Reads the candidate program on stdin and runs EvalPlus's ``untrusted_check`` on the base
        inputs, then the plus inputs (as ``evalplus.evaluate.check_correctness``, with fast_check: the
        first failing input ends the check). Prints PASS when both pass, else FAIL (EvalPlus's fail and
        timeout both count as FAIL, as they do in its pass@k). Any error of the judge itself is a
        non-zero exit without a verdict.

Integrity of the verdict: EvalPlus runs the candidate in a forked child of this process, which
inherits its stdout. So before printing, this process becomes the subreaper of everything the
candidate started, kills it all, and prints the verdict on a line of its own, last: whatever the
candidate wrote before can at worst make the answer malformed (an ERROR, never a PASS).
Known property of EvalPlus itself, not of this adapter: the expected outputs live in the process that
runs the candidate (``unsafe_execute``'s arguments), so a candidate that inspects its caller's frames
can read them; acceptgate's own harness never gives them to the candidate's process.
"""

import ctypes
import gzip
import hashlib
import json
import os
import pickle
import signal
import sys

PR_SET_CHILD_SUBREAPER = 36


def task_file(out_dir, task_id):
    return os.path.join(out_dir, task_id.replace("/", "__") + ".pkl")


def record_sha256(row):
    keep = {k: row[k] for k in ("task_id", "prompt", "canonical_solution", "entry_point", "base_input",
                                "plus_input", "atol")}
    return hashlib.sha256(json.dumps(keep, sort_keys=True).encode()).hexdigest()


def prepare(dataset, out_dir, task_ids):
    from evalplus.gen.util import trusted_exec  # what evalplus.evaluate.get_groundtruth calls

    wanted = set(task_ids)
    opener = gzip.open if dataset.endswith(".gz") else open
    hashes = {}
    with opener(dataset, "rt", encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            if row["task_id"] not in wanted:
                continue
            code = row["prompt"] + row["canonical_solution"]
            base, base_time = trusted_exec(code, row["base_input"], row["entry_point"], record_time=True)
            plus, plus_time = trusted_exec(code, row["plus_input"], row["entry_point"], record_time=True)
            data = {"task_id": row["task_id"], "entry_point": row["entry_point"], "atol": row["atol"],
                    "base_input": row["base_input"], "plus_input": row["plus_input"], "base": base,
                    "base_time": base_time, "plus": plus, "plus_time": plus_time}
            path = task_file(out_dir, row["task_id"])
            with open(path + ".tmp", "wb") as out:
                pickle.dump(data, out)
            os.replace(path + ".tmp", path)
            os.chmod(path, 0o644)
            hashes[row["task_id"]] = record_sha256(row)
    missing = sorted(wanted - set(hashes))
    if missing:
        sys.exit(f"tasks not in {dataset}: {', '.join(missing[:5])}")
    print(json.dumps(hashes), flush=True)


def _kill_descendants():
    import psutil

    me = psutil.Process()
    for _ in range(50):
        children = me.children(recursive=True)
        if not children:
            return
        for child in children:
            try:
                child.kill()
            except psutil.Error:
                pass
        psutil.wait_procs(children, timeout=0.2)


def judge(task_dir, task_id):
    # Orphans of the candidate's processes come back to this process, which kills them before it prints.
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    # EvalPlus caps the child's memory itself (default 4 GiB): keep its cap within the sandbox's.
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    os.environ["EVALPLUS_MAX_MEMORY_BYTES"] = str(soft if soft != resource.RLIM_INFINITY else -1)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from evalplus.eval import PASS, untrusted_check

    code = sys.stdin.read()
    with open(task_file(task_dir, task_id), "rb") as f:
        t = pickle.load(f)
    verdict = "PASS"
    for part in ("base", "plus"):
        status, _ = untrusted_check("humaneval", code, t[f"{part}_input"], t["entry_point"], expected=t[part],
                                    atol=t["atol"], ref_time=t[f"{part}_time"], fast_check=True)
        if status != PASS:
            verdict = "FAIL"
            break
    _kill_descendants()
    os.write(1, f"\n{verdict}\n".encode())


def main(argv):
    mode, site_packages = argv[1], argv[2]
    sys.path.insert(0, site_packages)
    if mode == "prepare":
        prepare(argv[3], argv[4], argv[5:])
    elif mode == "judge":
        judge(argv[3], argv[4])
    else:
        sys.exit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    main(sys.argv)
    sys.stdout.flush()
    os._exit(0)  # EvalPlus may leave threads behind

# Read another process's command line: the harness's (returns its sha256, the expected value).
import hashlib


def f(harness_pid):
    try:
        with open(f"/proc/{harness_pid}/cmdline", "rb") as fh:
            return hashlib.sha256(fh.read()).hexdigest()
    except OSError as exc:
        return "blocked: " + type(exc).__name__

# Read a file outside the sandbox's working dir; the expected value is its sha256.
import hashlib


def f(path):
    try:
        with open(path, "rb") as fh:
            return hashlib.sha256(fh.read()).hexdigest()
    except OSError as exc:
        return "blocked: " + type(exc).__name__

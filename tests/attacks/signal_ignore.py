# Ignore every signal that can be ignored, then never answer.
import signal


def f(x):
    for sig in signal.valid_signals():
        try:
            signal.signal(sig, signal.SIG_IGN)
        except (OSError, ValueError, RuntimeError):
            pass
    while True:
        pass

# Answer the first call right and the rest wrong: every case must be judged on its own.
CALLS = []


def f(x):
    CALLS.append(x)
    return x + 1 if len(CALLS) == 1 else -1

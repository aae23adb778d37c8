# Claim a memory verdict with a class of its own named MemoryError.
class MemoryError(Exception):
    pass


def f(x):
    raise MemoryError("out of memory (not really)")

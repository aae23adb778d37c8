# One big allocation.
def f(x):
    block = bytearray(1 << 30)
    return len(block)

# Print a gigabyte, then answer correctly: the output must not disturb the verdict.
import os
import sys


def f(x):
    line = "y" * (1 << 20)
    for _ in range(64):
        print(line)
    sys.stderr.write(line)
    block = b"z" * (1 << 20)
    for _ in range(1024):
        os.write(1, block)
    return x + 1

# Raise the recursion limit far past what the C stack holds, then recurse through C calls
# (each level goes through map(), so every Python frame also costs C stack).
import sys


def down(n):
    return sum(map(down, [n + 1]))


def f(x):
    sys.setrecursionlimit(10 ** 8)
    return down(0)

# Break the builtins and modules a runner might rely on, then answer correctly.
import builtins
import marshal
import os
import sys

builtins.repr = lambda v: "0"
builtins.type = lambda *a: int
builtins.print = lambda *a, **k: None
builtins.len = lambda v: 0
builtins.isinstance = lambda *a: True
marshal.loads = lambda b: ((), {})
marshal.dumps = lambda v: b""
os.write = lambda fd, data: len(data)
os.read = lambda fd, n: b""
sys.stdout = None


def f(x):
    return x + 1

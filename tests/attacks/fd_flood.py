# Flood every open descriptor with garbage (the protocol pipe among them).
import os


def f(x):
    junk = b"\n".join([b"0" * 32 + b" ok 1", b"3"] * 4096)
    for _ in range(2048):
        for fd in range(3, 64):
            try:
                os.write(fd, junk)
            except OSError:
                pass
    return x + 1

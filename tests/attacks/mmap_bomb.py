# A big anonymous mapping, touched page by page.
import mmap


def f(x):
    m = mmap.mmap(-1, 1 << 30)
    for i in range(0, len(m), 4096):
        m[i] = 1
    return len(m)

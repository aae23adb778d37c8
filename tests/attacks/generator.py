def f(x):
    yield x + 1

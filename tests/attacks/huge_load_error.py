# Fail to load with an exception class named with 8 M characters and an 8 M-character message.
raise type("L" * 8_000_000, (Exception,), {})("m" * 8_000_000)


def f(x):
    return x

def f(x):
    while True:
        pass

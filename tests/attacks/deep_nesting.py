# A literal so deeply nested that printing or comparing it recurses past any stack.
def f(x):
    value = [x + 1]
    for _ in range(200000):
        value = [value]
    return value

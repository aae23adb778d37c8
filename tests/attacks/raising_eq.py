class Raising:
    def __eq__(self, other):
        raise RuntimeError("compare me if you dare")

    __hash__ = object.__hash__

    def __repr__(self):
        raise RuntimeError("no repr either")


def f(x):
    return [Raising()]

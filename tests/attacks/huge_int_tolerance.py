# In a tolerance dialect: 10**400 against a float (abs(got - want) overflows), and a float against an
# expected 10**400 (math.isinf(want) overflows). Each must be that case's failure, never a crash.
def f(x):
    return 10 ** 400 if x == 0 else 1.0

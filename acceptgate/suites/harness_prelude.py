# acceptgate harness prelude: the comparison rules every rendered harness embeds verbatim.
# The bytes of this file are part of every render_hash: change them only with a new dialect version.
import math

RTOL = 1e-07
inf = float('inf')
nan = float('nan')


def strict_equal(got, want):
    # Python == on literals, except that NaN equals NaN (a reference may return NaN).
    tg, tw = type(got), type(want)
    if tg is float and tw is float and got != got and want != want:
        return True
    if tg in (list, tuple) and tw is tg:
        return len(got) == len(want) and all(strict_equal(g, w) for g, w in zip(got, want))
    if tg is dict and tw is dict:
        return got.keys() == want.keys() and all(strict_equal(got[k], want[k]) for k in want)
    return bool(got == want)


def close(got, want, atol):
    # numpy assert_allclose's rule (atol + rtol * |want|) on numbers, recursively in lists/tuples.
    tg, tw = type(got), type(want)
    if tg in (int, float) and tw in (int, float):
        if tw is float and math.isnan(want):
            return tg is float and math.isnan(got)
        if math.isinf(want) or (tg is float and math.isinf(got)):
            return got == want
        return abs(got - want) <= atol + RTOL * abs(want)
    if tg in (list, tuple) and tw is tg:
        return len(got) == len(want) and all(close(g, w, atol) for g, w in zip(got, want))
    return strict_equal(got, want)

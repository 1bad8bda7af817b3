"""A simple module exercising many constant kinds."""
import sys
BIG = 12345678901234567890123456789
NEG = -98765432109876543210
F = 3.5e-7
NEGZERO = -0.0
INF = 1e999
C = 2+3.5j
B = b"bytes\x00with\xffstuff"
U = "h\u00e9llo w\u00f6rld"
U2 = "\u20ac uro \U0001F600"
T = (1, 2, ("nested", None, ...), b"", "", "x")
def member(x):
    return x in {1, 2, 3, "abc", (4, 5)}
def sl(s):
    return s[1:10:2], s[::-1]
def gen(n):
    for i in range(n):
        yield i * i
def closure(a):
    def inner(b):
        return a + b
    return inner
class K:
    """doc"""
    attr = "identifier_like"
    def m(self, *args, kw=1, **kws):
        return (self.attr, args, kw, kws)
async def co():
    return 42
def loop():
    t = 0
    for i in range(10000):
        t += i % 7
    return t
def exc():
    try:
        1/0
    except ZeroDivisionError as e:
        return type(e).__name__
    finally:
        pass
def comp():
    return [x*2 for x in range(5)], {k: v for k, v in zip("ab", "cd")}
def report():
    import asyncio
    out = [BIG, NEG, F, NEGZERO, INF, C, B, U, U2, T, member(3), member("abc"), member((4,5)), member(9),
           sl("abcdefghijkl"), list(gen(5)), closure(3)(4), K().m(1, 2, kw=3, z=4), asyncio.run(co()),
           loop(), exc(), comp(), K.__doc__, __doc__, member.__code__.co_consts, sys.intern("identifier_like") is K.attr]
    return repr(out)

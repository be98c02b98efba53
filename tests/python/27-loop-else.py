# A loop's `else` in a kernel runs when the loop ends without `break`, as in Python: a linear
# search (`while ... else`), a primality test (`for ... else`), and a `break` in an inner loop,
# which leaves only the inner one.
from numba import cuda
import numpy as np


@cuda.jit
def first_at_least(a, limits, found):
    t = cuda.grid(1)
    if t < limits.size:
        j = 0
        while j < a.size:
            if a[j] >= limits[t]:
                found[t] = j
                break
            j += 1
        else:
            found[t] = -1


@cuda.jit
def primes(flags):
    n = cuda.grid(1)
    if n < flags.size:
        flags[n] = 0
        if n >= 2:
            for d in range(2, n):
                if d * d > n:
                    flags[n] = 1
                    break
                if n % d == 0:
                    break
            else:
                flags[n] = 1


@cuda.jit
def rows_without(m, value, out):
    r = cuda.grid(1)
    if r < m.shape[0]:
        hits = 0
        for c in range(m.shape[1]):
            for k in (1, 2):
                if m[r, c] == value * k:
                    hits += 1
                    break
            else:
                continue
        out[r] = hits


a = np.array([1, 4, 2, 8, 5, 7], dtype=np.int64)
limits = np.array([0, 3, 6, 8, 9], dtype=np.int64)
found = np.zeros(limits.size, dtype=np.int64)
first_at_least[1, 32](a, limits, found)
print(found)
assert found.tolist() == [next((j for j, x in enumerate(a) if x >= t), -1) for t in limits]

flags = np.zeros(40, dtype=np.int64)
primes[2, 32](flags)
print(np.nonzero(flags)[0])
assert [n for n in range(40) if flags[n]] == [n for n in range(2, 40) if all(n % d for d in range(2, n))]

m = np.array([[3, 6, 1], [0, 0, 0], [6, 3, 3]], dtype=np.int64)
out = np.zeros(3, dtype=np.int64)
rows_without[1, 32](m, 3, out)
print(out)
assert out.tolist() == [2, 0, 3]

# Python's integer arithmetic inside a kernel, as Numba computes it: // rounds down, % takes
# the divisor's sign, round() halves to even, and ** of integers stays an integer, so a
# negative power is 0 unless the base is 1 or -1 (Python itself would give a float).
from numba import cuda
import numpy as np


@cuda.jit
def arithmetic(base, exp, out):
    i = cuda.grid(1)
    if i < base.size:
        b = base[i]
        e = exp[i]
        out[i, 0] = b // 3
        out[i, 1] = b % 3
        out[i, 2] = b ** e
        out[i, 3] = round(b / 2)


base = np.array([-5, -2, -1, 0, 1, 2, 3, 7], dtype=np.int64)
exp = np.array([3, -1, -3, 2, -4, -2, 4, 0], dtype=np.int64)
out = np.zeros((base.size, 4), dtype=np.int64)
arithmetic[1, 32](base, exp, out)
print(out)


def numba_power(b, e):
    if e >= 0:
        return b ** e
    return 1 if b == 1 else (-1) ** (-e) if b == -1 else 0


for i, (b, e) in enumerate(zip(base.tolist(), exp.tolist())):
    assert out[i, 0] == b // 3, (b, out[i, 0])
    assert out[i, 1] == b % 3, (b, out[i, 1])
    assert out[i, 2] == numba_power(b, e), (b, e, out[i, 2])
    assert out[i, 3] == round(b / 2), (b, out[i, 3])

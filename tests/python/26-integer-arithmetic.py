# Python's integer arithmetic inside a kernel, as Numba computes it: // rounds down, % takes
# the divisor's sign, round() halves to even, and ** of integers stays an integer, so a
# negative power is 0 unless the base is 1 or -1 (Python itself would give a float). An integer
# // or % by zero is 0 in a kernel (NumPy's error model, Numba's default on the GPU), not an
# error.
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


@cuda.jit
def by_zero(top, bottom, utop, ubottom, out):
    i = cuda.grid(1)
    if i < top.size:
        out[i, 0] = top[i] // bottom[i]
        out[i, 1] = top[i] % bottom[i]
        out[i, 2] = utop[i] // ubottom[i]
        out[i, 3] = utop[i] % ubottom[i]
        out[i, 4] = i // cuda.threadIdx.x
        out[i, 5] = i % cuda.threadIdx.x


top = np.array([7, -7, 7, -7, 0, 5], dtype=np.int64)
bottom = np.array([0, 0, -2, 2, 0, 3], dtype=np.int64)
utop = np.array([7, 9, 0, 3, 8, 6], dtype=np.uint64)
ubottom = np.array([0, 2, 0, 4, 3, 0], dtype=np.uint64)
quotients = np.zeros((top.size, 6), dtype=np.int64)
by_zero[1, 8](top, bottom, utop, ubottom, quotients)
print(quotients)


def numba_div(a, b):
    return 0 if b == 0 else a // b


def numba_mod(a, b):
    return 0 if b == 0 else a % b


for i in range(top.size):
    t, b, ut, ub = int(top[i]), int(bottom[i]), int(utop[i]), int(ubottom[i])
    want = [numba_div(t, b), numba_mod(t, b), numba_div(ut, ub), numba_mod(ut, ub),
            numba_div(i, i), numba_mod(i, i)]
    assert quotients[i].tolist() == want, (i, quotients[i].tolist(), want)

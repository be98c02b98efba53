# Eager signatures (`void(float32[:, :], ...)`, a string for a device function),
# `fastmath=True`, and constant memory from a module-level array and from an argument.
import math
import numpy as np
from numba import cuda, float32, void

COEFFS = np.array([1.0, -2.0, 0.5, 3.0])


@cuda.jit(void(float32[:, :], float32[:, :]), fastmath=True)
def softplus(x, y):
    i, j = cuda.grid(2)
    if i < x.shape[0] and j < x.shape[1]:
        y[i, j] = math.log(float32(1.0) + math.exp(x[i, j]))


@cuda.jit('float64(float64)', device=True)
def horner(x):
    c = cuda.const.array_like(COEFFS)
    acc = 0.0
    for k in range(c.shape[0] - 1, -1, -1):
        acc = acc * x + c[k]
    return acc


@cuda.jit
def poly(xs, out):
    i = cuda.grid(1)
    if i < xs.shape[0]:
        out[i] = horner(xs[i])


@cuda.jit
def smooth(inp, out, w):
    cw = cuda.const.array_like(w)
    i = cuda.grid(1)
    if 1 <= i < inp.size - 1:
        acc = 0.0
        for k in range(3):
            acc += cw[k] * inp[i + k - 1]
        out[i] = acc


x = np.linspace(-2, 2, 33 * 17, dtype=np.float32).reshape(33, 17)
y = np.zeros_like(x)
softplus[(3, 2), (16, 16)](x, y)
np.testing.assert_allclose(y, np.log1p(np.exp(x)), rtol=1e-4, atol=1e-5)

xs = np.linspace(-1, 1, 64)
out = np.zeros_like(xs)
poly[2, 32](xs, out)
np.testing.assert_allclose(out, np.polynomial.polynomial.polyval(xs, COEFFS))

inp = np.arange(20, dtype=np.float32)
sm = np.zeros_like(inp)
smooth[1, 32](inp, sm, np.array([0.25, 0.5, 0.25], dtype=np.float32))
np.testing.assert_allclose(sm[1:-1], inp[1:-1])
print("softplus, horner and smoothing agree with numpy")

# `forall(n)` picks the launch itself (one thread per task); the launch keeps the call
# site's names.
sm2 = np.zeros_like(inp)
smooth.forall(inp.size)(inp, sm2, np.array([0.25, 0.5, 0.25], dtype=np.float32))
np.testing.assert_allclose(sm2, sm)

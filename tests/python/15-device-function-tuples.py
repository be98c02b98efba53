# Device functions that return a tuple and take arrays (Numba's documentation example of
# polar coordinates, in our words): gridlab returns the tuple as a small struct.
import math
import numpy as np
from numba import cuda


@cuda.jit(device=True)
def polar_to_cartesian(rho, theta):
    x = rho * math.cos(theta)
    y = rho * math.sin(theta)
    return x, y


@cuda.jit(device=True)
def dot3(a, b, i):
    s = 0.0
    for k in range(3):
        s += a[i, k] * b[i, k]
    return s


@cuda.jit
def polar_distance(rho1, theta1, rho2, theta2, out):
    i = cuda.grid(1)
    if i < out.size:
        x1, y1 = polar_to_cartesian(rho1[i], theta1[i])
        x2, y2 = polar_to_cartesian(rho2[i], theta2[i])
        out[i] = math.sqrt((x1 - x2) ** 2 + (y1 - y2) ** 2)


@cuda.jit
def rowdot(a, b, out):
    i = cuda.grid(1)
    if i < len(out):
        out[i] = dot3(a, b, i)


rng = np.random.default_rng(1)
n = 200
rho1, rho2 = rng.uniform(0.5, 1.5, size=(2, n)).astype(np.float32)
theta1, theta2 = rng.uniform(-np.pi, np.pi, size=(2, n)).astype(np.float32)
out = np.empty_like(rho1)
polar_distance[(n + 127) // 128, 128](rho1, theta1, rho2, theta2, out)
x1, y1 = rho1 * np.cos(theta1), rho1 * np.sin(theta1)
x2, y2 = rho2 * np.cos(theta2), rho2 * np.sin(theta2)
np.testing.assert_allclose(out, np.hypot(x1 - x2, y1 - y2), rtol=1e-4, atol=1e-5)
print("polar distances:", out[:3])

a = rng.random((50, 3))
b = rng.random((50, 3))
dots = np.zeros(50)
rowdot[1, 64](a, b, dots)
np.testing.assert_allclose(dots, (a * b).sum(axis=1))
print("row dots:", dots[:3])


@cuda.jit(device=True)
def scaled(x, scale=2.0, offset=-1):
    return x * scale + offset


@cuda.jit
def with_defaults(a, res):
    i = cuda.grid(1)
    if i < a.size:
        res[i] = scaled(a[i]) + scaled(a[i], offset=0) + scaled(a[i], 1.0)


v = np.arange(4, dtype=np.float64)
res = np.zeros(4)
with_defaults[1, 4](v, res)
np.testing.assert_allclose(res, (2 * v - 1) + 2 * v + (v - 1))
print("keywords and defaults:", res)

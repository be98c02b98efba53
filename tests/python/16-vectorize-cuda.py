# `@vectorize(..., target='cuda')` as Numba's course notebooks use it: each call runs one
# gridlab kernel over the elements, the scalar function lowered as a device function.
import math
import numpy as np
from numba import cuda, vectorize

SQRT_2PI = np.float32((2 * math.pi) ** 0.5)


@vectorize(['float32(float32, float32, float32)'], target='cuda')
def gaussian_pdf(x, mean, sigma):
    return math.exp(-0.5 * ((x - mean) / sigma) ** 2) / (sigma * SQRT_2PI)


@vectorize(['int64(int64, int64)', 'float32(float32, float32)'], target='cuda')
def add_ufunc(x, y):
    return x + y


@vectorize(['float64(float64, float64)'])
def rel_diff(x, y):
    return 2 * (x - y) / (x + y)


x = np.linspace(-3, 3, 500, dtype=np.float32)
pdf = gaussian_pdf(x, np.float32(0.0), np.float32(1.0))
print(pdf.dtype, pdf.shape, pdf[250])
np.testing.assert_allclose(pdf, np.exp(-0.5 * x ** 2) / np.sqrt(2 * np.pi), rtol=1e-5)

a = np.array([1, 2, 3, 4])
print("a + b:", add_ufunc(a, np.array([10, 20, 30, 40])))
c = np.arange(16).reshape((4, 4))
print("c + 100:", add_ufunc(c, 100)[3])
d_a = cuda.to_device(a)
d_out = cuda.device_array_like(a)
add_ufunc(d_a, d_a, out=d_out)
print("on the device:", d_out.copy_to_host())
print("CPU ufunc:", rel_diff(np.array([1.0, 2.0]), np.array([2.0, 2.0])))

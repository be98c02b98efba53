# GPU-Puzzles-style exercises: map, zip, guard, 2-D map, broadcast, pooling, dot product.
from numba import cuda, float32
import numpy as np

@cuda.jit
def map_add10(a, out):
    i = cuda.threadIdx.x
    out[i] = a[i] + 10

@cuda.jit
def zip_add(a, b, out):
    i = cuda.threadIdx.x
    out[i] = a[i] + b[i]

@cuda.jit
def guard(a, out, size):
    i = cuda.threadIdx.x
    if i < size:
        out[i] = a[i] + 10

@cuda.jit
def map2d(a, out, size):
    i = cuda.threadIdx.x
    j = cuda.threadIdx.y
    if i < size and j < size:
        out[i, j] = a[i, j] + 10

@cuda.jit
def broadcast(a, b, out, size):
    i = cuda.threadIdx.x
    j = cuda.threadIdx.y
    if i < size and j < size:
        out[i, j] = a[i, 0] + b[0, j]

@cuda.jit
def pool(a, out, size):
    i = cuda.threadIdx.x
    if i < size:
        acc = a[i]
        if i >= 1:
            acc += a[i - 1]
        if i >= 2:
            acc += a[i - 2]
        out[i] = acc

TPB = 8

@cuda.jit
def dot(a, b, out, size):
    shared = cuda.shared.array(TPB, float32)
    i = cuda.threadIdx.x
    shared[i] = a[i] * b[i] if i < size else 0
    cuda.syncthreads()
    if i == 0:
        total = 0.0
        for k in range(TPB):
            total += shared[k]
        out[0] = total

a = np.arange(4, dtype=np.float32)
out = np.zeros(4, dtype=np.float32)
map_add10[1, 4](a, out)
assert np.array_equal(out, a + 10)
zip_add[1, 4](a, a, out)
assert np.array_equal(out, 2 * a)
out = np.zeros(4, dtype=np.float32)
guard[1, 8](a, out, 4)
assert np.array_equal(out, a + 10)
m = np.arange(9, dtype=np.float32).reshape((3, 3))
out2 = np.zeros((3, 3), dtype=np.float32)
map2d[1, (4, 4)](m, out2, 3)
assert np.array_equal(out2, m + 10)
col = np.arange(3, dtype=np.float32).reshape((3, 1))
row = np.arange(3, dtype=np.float32).reshape((1, 3))
broadcast[1, (3, 3)](col, row, out2, 3)
assert np.array_equal(out2, col + row)
x = np.arange(10, dtype=np.float32)
pooled = np.zeros(10, dtype=np.float32)
pool[1, 10](x, pooled, 10)
assert np.array_equal(pooled, np.array([sum(x[max(i - 2, 0):i + 1]) for i in range(10)]))
d = np.zeros(1, dtype=np.float32)
dot[1, TPB](a, a, d, 4)
print("dot:", d[0])
assert d[0] == np.dot(a, a)
print("all puzzles pass")

# A global numpy array read by a kernel: Numba freezes it into the kernel as a constant, and so
# does gridlab (a `__constant__` array in the CUDA C; `:cuda smooth` at the prompt shows it).
from numba import cuda
import numpy as np

WEIGHTS = np.array([0.25, 0.5, 0.25], dtype=np.float32)

@cuda.jit
def smooth(a, out):
    i = cuda.grid(1)
    if 1 <= i < a.size - 1:
        acc = 0.0
        for k in range(3):
            acc += WEIGHTS[k] * a[i + k - 1]
        out[i] = acc

a = np.arange(10, dtype=np.float32) ** 2
out = np.zeros_like(a)
smooth[1, 16](a, out)
print(out)
assert np.allclose(out[1:-1], np.convolve(a, WEIGHTS, mode="same")[1:-1])

"""Numba's equivalent of bench/first-result.gridlab: import, compile a @cuda.jit kernel, launch, check."""
from numba import cuda
import numpy as np

@cuda.jit
def k1(a):
    i = cuda.grid(1)
    if i < a.size:
        a[i] += 0.5

d = cuda.to_device(np.zeros(1 << 20, np.float32))
k1[4096, 256](d)
assert (d.copy_to_host() == 0.5).all()

# What gridlab shows that Numba's simulator does not: bounds and uninitialised reads.
from numba import cuda
import numpy as np

@cuda.jit
def shift_left(a, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a[i + 1]

a = np.arange(32, dtype=np.float32)
out = np.zeros(32, dtype=np.float32)
shift_left[1, 32](a, out)  # expect: out_of_bounds

@cuda.jit
def copy(src, dst):
    i = cuda.grid(1)
    if i < dst.size:
        dst[i] = src[i]

fresh = cuda.device_array(16, dtype=np.float32)
dst = np.zeros(16, dtype=np.float32)
copy[1, 16](fresh, dst)  # expect: uninit

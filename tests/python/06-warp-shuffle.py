# A warp-level sum with shfl_down_sync: no shared memory, no barrier.
from numba import cuda
import numpy as np

@cuda.jit
def warp_sum(a, out):
    i = cuda.grid(1)
    v = a[i]
    offset = 16
    while offset > 0:
        v += cuda.shfl_down_sync(0xffffffff, v, offset)
        offset //= 2
    if cuda.threadIdx.x % 32 == 0:
        out[i // 32] = v

a = np.arange(128, dtype=np.int32)
out = np.zeros(4, dtype=np.int32)
warp_sum[1, 128](a, out)
print(out)
assert list(out) == [sum(range(k * 32, k * 32 + 32)) for k in range(4)]

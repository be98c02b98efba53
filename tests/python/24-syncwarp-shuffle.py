"""Warp-level sums two ways: shuffles (cuda.shfl_down_sync) and a shared array ordered with
cuda.syncwarp, each warp writing its own slot: race-free."""
import numpy as np
from numba import cuda, float32


@cuda.jit
def warp_sums(values, by_shuffle, by_shared):
    s = cuda.shared.array(64, float32)
    i = cuda.grid(1)
    lane = cuda.threadIdx.x % 32
    warp = i // 32
    v = values[i]
    offset = 16
    while offset > 0:
        v += cuda.shfl_down_sync(0xFFFFFFFF, v, offset)
        offset //= 2
    if lane == 0:
        by_shuffle[warp] = v
    s[cuda.threadIdx.x] = values[i]
    cuda.syncwarp()
    offset = 16
    while offset > 0:
        t = 0.0
        if lane < offset:
            t = s[cuda.threadIdx.x + offset]
        cuda.syncwarp()
        if lane < offset:
            s[cuda.threadIdx.x] += t
        cuda.syncwarp()
        offset //= 2
    if lane == 0:
        by_shared[warp] = s[cuda.threadIdx.x]


values = np.arange(128, dtype=np.float32)
a = np.zeros(4, dtype=np.float32)
b = np.zeros(4, dtype=np.float32)
warp_sums[2, 64](values, a, b)
expected = values.reshape(4, 32).sum(axis=1)
assert np.array_equal(a, expected) and np.array_equal(b, expected), (a, b)
print("warp sums:", a)

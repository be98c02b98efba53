# Warp intrinsics beyond the shuffle: votes, a butterfly max with shfl_xor, popc,
# cuda.selp, cuda.fma and cuda.cbrt.
import numpy as np
from numba import cuda, float32


@cuda.jit
def warp_stats(a, maxes, positives, allpos):
    i = cuda.grid(1)
    v = a[i]
    mask = cuda.activemask()
    k = 16
    while k >= 1:
        v = max(v, cuda.shfl_xor_sync(mask, v, k))
        k //= 2
    ballot = cuda.ballot_sync(mask, a[i] > 0)
    every = cuda.all_sync(mask, a[i] > 0)
    if cuda.laneid == 0:
        w = i // cuda.warpsize
        maxes[w] = v
        positives[w] = cuda.popc(ballot)
        allpos[w] = every


@cuda.jit
def fancy(a, b, out):
    i = cuda.grid(1)
    if i < out.size:
        m = cuda.selp(a[i] > b[i], a[i], b[i])
        out[i] = cuda.fma(m, float32(2.0), cuda.cbrt(float32(8.0)))


a = np.array([(-1) ** k * k for k in range(64)], dtype=np.int32)
maxes = np.zeros(2, dtype=np.int32)
positives = np.zeros(2, dtype=np.int32)
allpos = np.zeros(2, dtype=np.int32)
warp_stats[1, 64](a, maxes, positives, allpos)
print(maxes, positives, allpos)
np.testing.assert_array_equal(maxes, a.reshape(2, 32).max(axis=1))
np.testing.assert_array_equal(positives, (a.reshape(2, 32) > 0).sum(axis=1))
assert not allpos.any()

x = np.linspace(0, 1, 256, dtype=np.float32)
y = x[::-1].copy()
out = np.zeros(256, dtype=np.float32)
fancy[2, 128](x, y, out)
np.testing.assert_allclose(out, np.maximum(x, y) * 2 + 2, rtol=1e-6)

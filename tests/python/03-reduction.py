# A block-wide sum in shared memory, one partial sum per block, then a sum on the host.
from numba import cuda, float32
import numpy as np

TPB = 128

@cuda.jit
def block_sum(a, partial):
    s = cuda.shared.array(TPB, dtype=float32)
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    s[tid] = a[i] if i < a.size else 0.0
    cuda.syncthreads()
    stride = TPB // 2
    while stride > 0:
        if tid < stride:
            s[tid] += s[tid + stride]
        cuda.syncthreads()
        stride //= 2
    if tid == 0:
        partial[cuda.blockIdx.x] = s[0]

n = 5000
a = np.random.default_rng(7).random(n).astype(np.float32)
blocks = (n + TPB - 1) // TPB
partial = np.zeros(blocks, dtype=np.float32)
block_sum[blocks, TPB](a, partial)
total = partial.sum()
print(f"sum of {n} values: {total:.3f}")
assert np.isclose(total, a.sum(), rtol=1e-4)

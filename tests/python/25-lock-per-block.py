"""A global lock from cuda.atomic.compare_and_swap and cuda.atomic.exch with cuda.threadfence:
thread 0 of each block takes it, adds its block's count to a total, and releases it."""
import numpy as np
from numba import cuda, int32


@cuda.jit
def block_count(mutex, total):
    local = cuda.shared.array(1, int32)
    if cuda.threadIdx.x == 0:
        local[0] = 0
    cuda.syncthreads()
    cuda.atomic.add(local, 0, 1)
    cuda.syncthreads()
    if cuda.threadIdx.x == 0:
        while cuda.atomic.compare_and_swap(mutex, 0, 1) != 0:
            pass
        cuda.threadfence()
        total[0] = total[0] + local[0]
        cuda.threadfence()
        cuda.atomic.exch(mutex, 0, 0)


mutex = np.zeros(1, dtype=np.int32)
total = np.zeros(1, dtype=np.int32)
block_count[8, 64](mutex, total)
assert total[0] == 512, total
print("total:", total[0])

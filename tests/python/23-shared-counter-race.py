"""A shared-memory counter bumped without an atomic: each thread's read-modify-write races with
the others', and the simulator reports it."""
import numpy as np
from numba import cuda, int32


@cuda.jit
def count_positive(values, out):
    count = cuda.shared.array(1, int32)
    if cuda.threadIdx.x == 0:
        count[0] = 0
    cuda.syncthreads()
    i = cuda.grid(1)
    if i < values.size and values[i] > 0:
        count[0] += 1
    cuda.syncthreads()
    if cuda.threadIdx.x == 0:
        out[cuda.blockIdx.x] = count[0]


values = np.ones(128, dtype=np.int32)
out = np.zeros(1, dtype=np.int32)
count_positive[1, 128](values, out)  # expect: race
print("counted:", out[0])

# Tiled matrix multiply in shared memory (Numba's documentation example, in our words).
from numba import cuda, float32
import numpy as np

TPB = 8

@cuda.jit
def fast_matmul(A, B, C):
    sA = cuda.shared.array(shape=(TPB, TPB), dtype=float32)
    sB = cuda.shared.array(shape=(TPB, TPB), dtype=float32)
    x, y = cuda.grid(2)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    bpg = cuda.gridDim.x
    tmp = float32(0.)
    for i in range(bpg):
        sA[ty, tx] = 0
        sB[ty, tx] = 0
        if y < A.shape[0] and (tx + i * TPB) < A.shape[1]:
            sA[ty, tx] = A[y, tx + i * TPB]
        if x < B.shape[1] and (ty + i * TPB) < B.shape[0]:
            sB[ty, tx] = B[ty + i * TPB, x]
        cuda.syncthreads()
        for j in range(TPB):
            tmp += sA[ty, j] * sB[j, tx]
        cuda.syncthreads()
    if y < C.shape[0] and x < C.shape[1]:
        C[y, x] = tmp

n = 24
rng = np.random.default_rng(0)
A = rng.random((n, n)).astype(np.float32)
B = rng.random((n, n)).astype(np.float32)
C = np.zeros((n, n), dtype=np.float32)
blocks = ((n + TPB - 1) // TPB, (n + TPB - 1) // TPB)
fast_matmul[blocks, (TPB, TPB)](A, B, C)
print("C[0, :4] =", C[0, :4])
assert np.allclose(C, A @ B, rtol=1e-4)

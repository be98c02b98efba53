# Every thread adds 0.5 to every element: a race Numba's own simulator never shows.
from numba import cuda
import numpy as np

@cuda.jit
def cudakernel0(array):
    for i in range(array.size):
        array[i] += 0.5

array = np.array([0, 1], np.float32)
print('Initial array:', array)
cudakernel0[1, 1](array)
print('Updated array:', array)
assert np.all(array == [0.5, 1.5])

array = np.array([0, 1], np.float32)
cudakernel0[64, 256](array)  # expect: race
print('With 16384 threads the result is no longer 0.5 more:', array[0] != 0.5)

# A Numba tutorial's racy launch, as the tutorial gives it: 1024 x 1024 threads each add 0.5 to
# both elements. On a GPU the result changes from run to run; gridlab says why, at line 18.
from numba import cuda
import numpy as np

@cuda.jit
def cudakernel0(array):
    for i in range(array.size):
        array[i] += 0.5

array = np.array([0, 1], np.float32)
print('Initial array:', array)
gridsize = 1024
blocksize = 1024
print("Grid size: {}, Block size: {}".format(gridsize, blocksize))
print("Total number of threads:", gridsize * blocksize)
print('Kernel launch: cudakernel0[gridsize, blocksize](array)')
cudakernel0[gridsize, blocksize](array)  # expect: race
print('Updated array:', array)

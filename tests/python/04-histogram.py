# Atomics into a histogram, with a device function choosing the bin.
from numba import cuda
import numpy as np
import math

@cuda.jit(device=True)
def bin_of(x, nbins):
    b = int(math.floor(x * nbins))
    return min(b, nbins - 1)

@cuda.jit
def histogram(data, bins):
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    while i < data.size:
        cuda.atomic.add(bins, bin_of(data[i], bins.size), 1)
        i += stride

data = np.random.default_rng(3).random(20000).astype(np.float32)
bins = np.zeros(10, dtype=np.int32)
histogram[8, 128](data, bins)
expected, _ = np.histogram(data, bins=10, range=(0.0, 1.0))
print("bins:", bins)
assert bins.sum() == data.size
assert np.array_equal(bins, expected)

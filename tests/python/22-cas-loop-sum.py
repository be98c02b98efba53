"""A sum built from cuda.atomic.compare_and_swap, as Numba code writes an atomic that Numba
lacks: read the old value, swap in the new one if no one came between, retry."""
import numpy as np
from numba import cuda


@cuda.jit
def cas_add(counter, values):
    i = cuda.grid(1)
    if i < values.size:
        old = counter[0]
        while True:
            assumed = old
            old = cuda.atomic.compare_and_swap(counter, assumed, assumed + values[i])
            if old == assumed:
                break


values = np.arange(1, 257, dtype=np.int32)
counter = np.zeros(1, dtype=np.int32)
cas_add[2, 128](counter, values)
assert counter[0] == values.sum(), counter
print("sum by compare_and_swap:", counter[0])

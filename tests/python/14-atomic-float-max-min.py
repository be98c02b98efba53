"""The largest and smallest value of an array by float atomics, as Numba programs write it:
`cuda.atomic.max` and `cuda.atomic.min` on float32 and float64 arrays."""
import numpy as np
from numba import cuda


@cuda.jit
def extremes(values, result):
    i = cuda.grid(1)
    if i < values.size:
        cuda.atomic.max(result, 0, values[i])
        cuda.atomic.min(result, 1, values[i])


rng = np.random.default_rng(7)
for dtype in (np.float32, np.float64):
    values = rng.normal(size=3000).astype(dtype)
    result = np.array([-np.inf, np.inf], dtype=dtype)
    extremes[(values.size + 255) // 256, 256](values, result)
    assert result[0] == values.max() and result[1] == values.min(), (result, values.max(), values.min())
    print(dtype.__name__, "max and min agree with numpy:", True)

# A step of the Game of Life: loops over a tuple of offsets, a device function that returns
# a bool, and a swap of two elements in one assignment.
import numpy as np
from numba import cuda


@cuda.jit(device=True)
def in_bounds(i, j, h, w):
    return 0 <= i < h and 0 <= j < w


@cuda.jit
def life_step(grid, out):
    i, j = cuda.grid(2)
    h, w = grid.shape
    if not in_bounds(i, j, h, w):
        return
    n = 0
    for di in (-1, 0, 1):
        for dj in (-1, 0, 1):
            if (di != 0 or dj != 0) and in_bounds(i + di, j + dj, h, w):
                n += grid[i + di, j + dj]
    alive = grid[i, j] == 1
    out[i, j] = 1 if (alive and (n == 2 or n == 3)) or (not alive and n == 3) else 0


@cuda.jit
def swap_pairs(a):
    i = cuda.grid(1) * 2
    if i + 1 < a.size:
        a[i], a[i + 1] = a[i + 1], a[i]


g = np.zeros((8, 8), dtype=np.uint8)
g[1, 2] = g[2, 3] = g[3, 1] = g[3, 2] = g[3, 3] = 1  # a glider
out = np.zeros_like(g)
life_step[(1, 1), (8, 8)](g, out)
print(out[1:5, 0:5])
assert out.sum() == 5

a = np.arange(10, dtype=np.int32)
swap_pairs[1, 8](a)
print(a)
assert list(a) == [1, 0, 3, 2, 5, 4, 7, 6, 9, 8]

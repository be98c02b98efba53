"""Numba's CUDA simulator on the same kernels as bench/sim.rs, for the side-by-side table.

Prints one JSON object per case. Run by bench/run in a throw-away virtual environment.
"""
import json, os, time
os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
from numba import cuda
import numpy as np


@cuda.jit
def add_half(a, n):
    i = cuda.grid(1)
    if i < n:
        a[i] += 0.5


@cuda.jit
def add_half_everywhere(a, n):
    for i in range(n):
        a[i] += 0.5


def timed(kernel, blocks, threads, a, n, runs=3):
    best = []
    for _ in range(runs):
        x = a.copy()
        t = time.perf_counter()
        kernel[blocks, threads](x, n)
        best.append(time.perf_counter() - t)
    best.sort()
    return best[len(best) // 2], x


t, _ = timed(add_half, 64, 256, np.zeros(16384, np.float32), 16384)
print(json.dumps({"case": "add_half 16384, <<<64, 256>>> (as Numba's anchor)", "threads": 16384, "seconds": t}))
t, x = timed(add_half_everywhere, 16, 256, np.array([0, 1], np.float32), 2)
print(json.dumps({"case": "racy loop on 2 elements, <<<16, 256>>> (as Numba's anchor)", "threads": 4096, "seconds": t,
                  "result": [float(v) for v in x]}))

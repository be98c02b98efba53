"""gridlab's stand-in for Numba.

A program run by gridlab (`gridlab run program.py`, `gridlab replay program.py`) imports this
package as `numba`. Its `cuda` module hands `@cuda.jit` kernels to gridlab, which lowers them
to CUDA C and runs them on its simulator or the GPU; the rest of the program is ordinary
Python and numpy. CPU compilation (`@numba.jit`, `@njit`) runs the function as plain Python:
the result is the same, only slower.
"""

import numpy as _np

from numba import cuda  # noqa: F401
from numba import types  # noqa: F401
from numba.types import *  # noqa: F401,F403

__version__ = "0.60.0+gridlab"


def jit(*args, **kwargs):
    """CPU `@jit`: the function runs as plain Python under gridlab."""
    if len(args) == 1 and callable(args[0]) and not kwargs:
        return args[0]
    return lambda f: f


njit = jit
generated_jit = jit
prange = range


def vectorize(signatures=None, target="cpu", **kwargs):
    """`@vectorize`: with `target='cuda'`, each call runs a gridlab kernel over the elements;
    for the CPU targets the function runs as numpy's `np.vectorize` (same result, slower)."""

    def decorate(fn, sigs):
        if target == "cuda":
            return cuda.CudaUFunc(fn, sigs)
        ret = None
        for s in sigs or []:
            if isinstance(s, str) and "(" in s:
                ret = s.split("(")[0].strip()
                break
        otypes = [ret] if ret in ("float32", "float64", "int8", "int16", "int32", "int64",
                                  "uint8", "uint16", "uint32", "uint64", "bool") else None
        return _np.vectorize(fn, otypes=otypes)

    if callable(signatures):
        return decorate(signatures, None)
    if isinstance(signatures, str):
        signatures = [signatures]
    return lambda fn: decorate(fn, signatures)


def guvectorize(*args, **kwargs):
    raise NotImplementedError(
        "gridlab runs @cuda.jit kernels and @vectorize; numba.guvectorize is not part of it: "
        "write a @cuda.jit kernel with i = cuda.grid(1) that loops over each row"
    )

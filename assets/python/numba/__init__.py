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


def vectorize(*args, **kwargs):
    raise NotImplementedError(
        "gridlab runs @cuda.jit kernels; numba.vectorize is not part of it: "
        "write a @cuda.jit kernel with i = cuda.grid(1)"
    )


guvectorize = vectorize
